//! Streaming UTF-8 decoding as a fresh JavaScript `TextDecoder` does it, for command output that
//! arrives in arbitrary chunks.

/// A decoder: bad bytes become U+FFFD (one per maximal bad subpart), a sequence split across
/// chunks waits for its end, and a byte order mark at the very start of the stream is dropped.
#[derive(Clone, Debug, Default)]
pub struct Utf8Stream {
    /// Bytes of an incomplete sequence at the end of the last chunk.
    pending: Vec<u8>,
    /// Whether a character has been decoded yet (the BOM check is over).
    started: bool,
}

impl Utf8Stream {
    /// The text of `bytes`; with `flush`, an incomplete sequence left at the end becomes U+FFFD.
    pub fn decode(&mut self, bytes: &[u8], flush: bool) -> String {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(bytes);
        let mut out = String::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(bad) => {
                            out.push('\u{fffd}');
                            rest = after.get(bad..).unwrap_or_default();
                        }
                        None if flush => {
                            out.push('\u{fffd}');
                            break;
                        }
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        if !self.started && !out.is_empty() {
            self.started = true;
            if let Some(rest) = out.strip_prefix('\u{feff}') {
                return rest.to_owned();
            }
        }
        out
    }
}
