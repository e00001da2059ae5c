//! Pi's strict JSONL framing (`modes/rpc/jsonl.js`): records end at LF only (U+2028 and U+2029
//! stay inside strings), a trailing CR is dropped, and a last line without LF still counts at
//! the end of input. Output lines are `JSON.stringify` + LF (see [`crate::output::Stdout`]).

use std::io::{BufRead, BufReader, Read};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Reads `input` line by line on a thread of its own (stdin blocks); the channel closes at end
/// of input, or on a read error, which ends input the same way.
pub fn spawn_line_reader<R>(input: R) -> UnboundedReceiver<String>
where
    R: Read + Send + 'static,
{
    let (lines, received) = unbounded_channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(input);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match reader.read_until(b'\n', &mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(decode_line(&buffer)).is_err() {
                        break;
                    }
                }
            }
        }
    });
    received
}

/// One record's text: invalid UTF-8 becomes U+FFFD (as Node's decoder does); the LF and a CR
/// before it are removed.
fn decode_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::decode_line;

    #[test]
    fn lines_lose_only_their_lf_and_one_cr() {
        assert_eq!(decode_line(b"{}\r\n"), "{}");
        assert_eq!(decode_line(b"{}\r\r\n"), "{}\r");
        assert_eq!(decode_line(b"last"), "last");
        assert_eq!(decode_line("a\u{2028}b\n".as_bytes()), "a\u{2028}b");
    }
}
