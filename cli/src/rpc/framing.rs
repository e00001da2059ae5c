//! Pi's strict JSONL framing (`modes/rpc/jsonl.js`): records end at LF only (U+2028 and U+2029
//! stay inside strings), a trailing CR is dropped, and a last line without LF still counts at
//! the end of input. Output lines are `JSON.stringify` + LF (see [`crate::output::Stdout`]).

use std::io::{BufRead, BufReader, Read};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// How much one read takes: Node's stdin chunks are up to 64 KiB.
const READ_SIZE: usize = 64 * 1024;

/// Reads `input` line by line on a thread of its own (stdin blocks); the channel closes at end
/// of input, or on a read error, which ends input the same way. Each line comes with whether
/// the read that brought it brought the next line too (Node hands all complete lines of a chunk
/// to Pi's loop at once; see `batch`).
pub fn spawn_line_reader<R>(input: R) -> UnboundedReceiver<(String, bool)>
where
    R: Read + Send + 'static,
{
    let (lines, received) = unbounded_channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(READ_SIZE, input);
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match reader.read_until(b'\n', &mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let with_next = reader.buffer().contains(&b'\n');
                    if lines.send((decode_line(&buffer), with_next)).is_err() {
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
    use std::collections::VecDeque;
    use std::io::Read;

    use super::{decode_line, spawn_line_reader};

    /// Gives its chunks one read each, as a pipe gives what each write put in it.
    struct Chunks(VecDeque<&'static [u8]>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some(chunk) = self.0.pop_front() else {
                return Ok(0);
            };
            buf[..chunk.len()].copy_from_slice(chunk);
            Ok(chunk.len())
        }
    }

    fn read_all(chunks: &[&'static [u8]]) -> Vec<(String, bool)> {
        let mut lines = spawn_line_reader(Chunks(chunks.iter().copied().collect()));
        std::iter::from_fn(|| lines.blocking_recv()).collect()
    }

    /// A line is marked when the read that completed it brought another whole line (Node hands
    /// all of a chunk's lines to Pi's loop at once); a line completed by a later read is not.
    #[test]
    fn lines_of_one_read_are_marked_as_such() {
        let line = |text: &str, with_next| (text.to_owned(), with_next);
        assert_eq!(
            read_all(&[b"a\nb\n", b"c\n"]),
            [line("a", true), line("b", false), line("c", false)]
        );
        assert_eq!(
            read_all(&[b"a\nb", b"\nc\nd"]),
            [
                line("a", false),
                line("b", true),
                line("c", false),
                line("d", false)
            ]
        );
    }

    #[test]
    fn lines_lose_only_their_lf_and_one_cr() {
        assert_eq!(decode_line(b"{}\r\n"), "{}");
        assert_eq!(decode_line(b"{}\r\r\n"), "{}\r");
        assert_eq!(decode_line(b"last"), "last");
        assert_eq!(decode_line("a\u{2028}b\n".as_bytes()), "a\u{2028}b");
    }
}
