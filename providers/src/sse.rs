//! An incremental server-sent-events parser: bytes in, complete events out, whatever the
//! chunking. Follows the WHATWG rules the SDKs implement: `event:` and `data:` fields, multi-line
//! data joined by `\n`, comments and unknown fields ignored, an event ends at a blank line; lines
//! end with `\n`, `\r\n` or `\r`.
//!
//! pi-ai 1.5.2 reads an Anthropic stream with a reader of its own ([`SseParser::anthropic`]),
//! which differs in two ways: an event with a name but no data is still an event (its data
//! empty), and each event keeps its raw lines (comments and unknown fields included, and the
//! lines of blocks that made no event before it), which pi-ai's error for an event that does not
//! parse quotes.

/// One event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined by `\n`.
    pub data: String,
    /// The lines it was read from, for a parser that keeps them ([`SseParser::anthropic`]).
    pub raw: Vec<String>,
}

/// The parser's state between chunks.
#[derive(Clone, Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The last byte fed was `\r`: a following `\n` belongs to the same line ending.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
    /// Reading as pi-ai's Anthropic reader does: `Some` with the lines read since the last
    /// event.
    raw: Option<Vec<String>>,
}

impl SseParser {
    /// A parser reading as pi-ai 1.5.2's Anthropic reader: raw lines kept, and an event with a
    /// (non-empty) name but no data is an event.
    pub fn anthropic() -> Self {
        SseParser {
            raw: Some(Vec::new()),
            ..SseParser::default()
        }
    }

    /// Feeds bytes; returns the events they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.feed_ends(bytes)
            .into_iter()
            .map(|(_, event)| event)
            .collect()
    }

    /// Feeds bytes; returns the events they completed, each with the offset in `bytes` just
    /// past the line ending that completed it (where a reader that acts on each event as it
    /// comes, as the SDKs do, has read up to).
    pub fn feed_ends(&mut self, bytes: &[u8]) -> Vec<(usize, SseEvent)> {
        let mut out = Vec::new();
        // An empty read says nothing, not even that a CR was not followed by an LF.
        if bytes.is_empty() {
            return out;
        }
        let mut rest = bytes;
        if self.after_cr {
            self.after_cr = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        let mut completed = Vec::new();
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let cr = rest[end] == b'\r';
            if self.line.is_empty() {
                // The whole line is in this chunk: no copy.
                self.line_done(&rest[..end], &mut completed);
            } else {
                self.line.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.line);
                self.line_done(&line, &mut completed);
            }
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    _ => {}
                }
            }
            let offset = bytes.len() - rest.len();
            out.extend(completed.drain(..).map(|event| (offset, event)));
        }
        self.line.extend_from_slice(rest);
        out
    }

    /// The end of the stream. The spec drops an unterminated last event (the OpenAI SDK does);
    /// it is returned here for decoders whose SDK delivers it anyway (Anthropic's).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        let mut out = Vec::new();
        if !line.is_empty() {
            self.line_done(&line, &mut out);
        }
        if let Some(event) = out.pop() {
            return Some(event);
        }
        if self.raw.is_some() {
            return self.flush_kept();
        }
        let event = self.event.take();
        let data = self.data.take();
        match (event, data) {
            (None, None) => None,
            (event, data) => Some(SseEvent {
                event,
                data: data.unwrap_or_default(),
                raw: Vec::new(),
            }),
        }
    }

    /// pi-ai's `flushSseEvent`: nothing while there is neither a name nor data (the raw lines
    /// kept for the next event), else the event, and the state cleared.
    fn flush_kept(&mut self) -> Option<SseEvent> {
        let named = self.event.as_deref().is_some_and(|name| !name.is_empty());
        if !named && self.data.is_none() {
            return None;
        }
        Some(SseEvent {
            event: self.event.take(),
            data: self.data.take().unwrap_or_default(),
            raw: self.raw.replace(Vec::new()).unwrap_or_default(),
        })
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.raw.is_some() {
                out.extend(self.flush_kept());
                return;
            }
            if let Some(data) = self.data.take() {
                out.push(SseEvent {
                    event: self.event.take(),
                    data,
                    raw: Vec::new(),
                });
            }
            self.event = None;
            return;
        }
        if let Some(raw) = &mut self.raw {
            raw.push(String::from_utf8_lossy(line).into_owned());
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"data" => {
                let value = match std::str::from_utf8(value) {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(value),
                };
                match &mut self.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&value);
                    }
                    None => self.data = Some(value.into_owned()),
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_survive_any_chunking() {
        let stream =
            b"event: a\ndata: 1\ndata: 2\n\n: comment\ndata: {\"x\":1}\r\n\r\ndata:no-space\r\r";
        let whole = SseParser::default().feed(stream);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "1\n2".into(),
                    raw: Vec::new(),
                },
                SseEvent {
                    event: None,
                    data: "{\"x\":1}".into(),
                    raw: Vec::new(),
                },
                SseEvent {
                    event: None,
                    data: "no-space".into(),
                    raw: Vec::new(),
                },
            ]
        );
        for cut in 0..stream.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&stream[..cut]);
            events.extend(parser.feed(&stream[cut..]));
            assert_eq!(events, whole, "cut at {cut}");
        }
    }

    /// An empty read (a reader may return one) between the CR and the LF of a line ending
    /// leaves the CRLF one line ending, as it is unread.
    #[test]
    fn empty_reads_change_nothing() {
        let stream = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r";
        let whole = SseParser::default().feed(stream);
        assert_eq!(whole.len(), 2);
        for cut in 0..=stream.len() {
            let mut parser = SseParser::default();
            let mut events = parser.feed(&stream[..cut]);
            events.extend(parser.feed(b""));
            events.extend(parser.feed(&stream[cut..]));
            assert_eq!(events, whole, "empty read at {cut}");
        }
    }

    /// Each event's offset is where it ends: the bytes up to it complete exactly the events up
    /// to it, whatever the line endings.
    #[test]
    fn an_events_offset_is_where_its_bytes_end() {
        let stream = b"data: 1\n\n: c\r\n\r\nevent: b\r\ndata: 2\r\n\r\ndata: 3\r\rdata: 4\n\n";
        let ends = SseParser::default().feed_ends(stream);
        assert_eq!(ends.len(), 4);
        for (n, (end, event)) in ends.iter().enumerate() {
            let upto = SseParser::default().feed(&stream[..*end]);
            assert_eq!(upto.len(), n + 1, "up to {end}");
            assert_eq!(upto.last(), Some(event));
        }
        assert_eq!(ends[1].0, 37, "past the CRLF");
    }

    /// pi-ai's Anthropic reader: a name alone makes an event, and an event keeps its raw lines,
    /// those of a block that made no event (a lone comment) included; the end of the stream
    /// flushes a last event, its unterminated line read.
    #[test]
    fn the_anthropic_reader_keeps_raw_lines_and_events_without_data() {
        let stream = b": ping\n\nevent: message_stop\n\nid: 7\ndata:{\"a\":\r\ndata: 1}\n\nevent: x\ndata: y";
        let expected = vec![
            SseEvent {
                event: Some("message_stop".into()),
                data: String::new(),
                raw: vec![": ping".into(), "event: message_stop".into()],
            },
            SseEvent {
                event: None,
                data: "{\"a\":\n1}".into(),
                raw: vec!["id: 7".into(), "data:{\"a\":".into(), "data: 1}".into()],
            },
            SseEvent {
                event: Some("x".into()),
                data: "y".into(),
                raw: vec!["event: x".into(), "data: y".into()],
            },
        ];
        for cut in 0..=stream.len() {
            let mut parser = SseParser::anthropic();
            let mut events = parser.feed(&stream[..cut]);
            events.extend(parser.feed(&stream[cut..]));
            events.extend(parser.finish());
            assert_eq!(events, expected, "cut at {cut}");
        }
        // The standard reader drops the event without data and keeps no lines.
        let mut standard = SseParser::default();
        let mut events = standard.feed(stream);
        events.extend(standard.finish());
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|e| e.raw.is_empty()));
        // An empty name is no name: a block of it alone makes no event.
        let mut parser = SseParser::anthropic();
        assert!(parser.feed(b"event:\n\n").is_empty());
        assert_eq!(parser.finish(), None);
    }
}
