//! A secret a model streams cut over several server-sent events: no byte run of the body holds
//! it whole, so each event's delta strings are followed per channel (the JSON path of a delta
//! field, with the block indexes that tell blocks apart), whole events are held back while a
//! channel's text ends with the start of a secret, and once the channel's text holds the
//! secret whole, the held events' delta strings are rewritten so that the channel reads the
//! placeholder instead. No character of the secret is written. Each piece that held some of
//! it gets one character of the placeholder while more than one is left, the piece that ends
//! it the rest; a piece left with none is emptied and its event marked ([`EMPTIED`]), since a
//! decoder that drops an empty delta would decode one event fewer from it than the run saw.
//!
//! A start of a secret that the stream never completes (text that only begins like one, or a
//! stream cut off in its middle) is written as it came.

use std::collections::HashMap;

use serde_json::Value;

/// Object members whose string values are streamed text: the delta fields of the Chat
/// Completions, Responses, Anthropic and Gemini stream formats.
const DELTA_FIELDS: [&str; 10] = [
    "content",
    "text",
    "thinking",
    "partial_json",
    "arguments",
    "delta",
    "reasoning_content",
    "reasoning",
    "reasoning_text",
    "refusal",
];

/// Members that tell apart the blocks of one response whose deltas share a path.
const BLOCK_FIELDS: [&str; 4] = ["index", "output_index", "content_index", "item_id"];

/// One step of a JSON path.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// A delta string of one event: its channel, where it is, and its text.
#[derive(Debug)]
struct Piece {
    channel: String,
    path: Vec<Step>,
    text: String,
}

/// A complete event held back, whole secrets already replaced.
#[derive(Debug)]
struct HeldEvent {
    raw: Vec<u8>,
    /// Its `data:` JSON, when it is JSON.
    data: Option<Value>,
    pieces: Vec<Piece>,
}

/// What a call's body is known to be.
#[derive(Debug, Default, PartialEq)]
enum Kind {
    #[default]
    Undecided,
    Events,
    Other,
}

/// One call's body while it streams.
#[derive(Debug, Default)]
pub struct CallStream {
    kind: Kind,
    /// The bytes of an event not complete yet.
    partial: Vec<u8>,
    held: Vec<HeldEvent>,
}

/// Whether `bytes` (a body's start) are server-sent events; `None` while too few to say.
fn looks_like_events(bytes: &[u8]) -> Option<bool> {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(&[][..], |i| &bytes[i..]);
    let fields: [&[u8]; 5] = [b"data:", b"event:", b"id:", b"retry:", b":"];
    if fields.iter().any(|f| start.starts_with(f)) {
        return Some(true);
    }
    if fields.iter().any(|f| f.starts_with(start)) {
        return None;
    }
    Some(false)
}

/// The length of the first complete event of `bytes` (through its blank line), if any. A
/// `\r` that ends `bytes` may be the start of a `\r\n` the next read completes: it ends
/// nothing yet.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let line_end = |at: usize| match (bytes.get(at), bytes.get(at + 1)) {
        (Some(b'\n'), _) => Some(1),
        (Some(b'\r'), Some(b'\n')) => Some(2),
        (Some(b'\r'), Some(_)) => Some(1),
        _ => None,
    };
    let mut i = 0;
    while i < bytes.len() {
        let Some(length) = line_end(i) else {
            i += 1;
            continue;
        };
        let next = i + length;
        let blank = line_end(next).unwrap_or(0);
        if blank > 0 {
            return Some(next + blank);
        }
        i = next;
    }
    None
}

/// The JSON of an event's `data:` lines, when they hold JSON.
fn event_data(raw: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(raw).ok()?;
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str(&data.join("\n")).ok()
}

/// The delta strings of `value`, in document order.
fn pieces(value: &Value) -> Vec<Piece> {
    let mut found = Vec::new();
    walk(value, &mut Vec::new(), &mut String::new(), &mut found);
    found
}

fn walk(value: &Value, path: &mut Vec<Step>, channel: &mut String, found: &mut Vec<Piece>) {
    match value {
        Value::Object(members) => {
            let mark = channel.len();
            for field in BLOCK_FIELDS {
                match members.get(field) {
                    Some(Value::String(s)) => channel.push_str(&format!("[{field}={s}]")),
                    Some(Value::Number(n)) => channel.push_str(&format!("[{field}={n}]")),
                    _ => {}
                }
            }
            for (key, member) in members {
                path.push(Step::Key(key.clone()));
                let before = channel.len();
                channel.push_str(&format!("/{key}"));
                match member {
                    Value::String(text) if DELTA_FIELDS.contains(&key.as_str()) => {
                        found.push(Piece {
                            channel: channel.clone(),
                            path: path.clone(),
                            text: text.clone(),
                        })
                    }
                    _ => walk(member, path, channel, found),
                }
                channel.truncate(before);
                path.pop();
            }
            channel.truncate(mark);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                let before = channel.len();
                channel.push_str(&format!("/{i}"));
                walk(item, path, channel, found);
                channel.truncate(before);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The string at `path` in `value`, if there is one.
fn string_at<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut String> {
    let mut at = value;
    for step in path {
        at = match step {
            Step::Key(key) => at.get_mut(key.as_str())?,
            Step::Index(i) => at.get_mut(*i)?,
        };
    }
    match at {
        Value::String(text) => Some(text),
        _ => None,
    }
}

/// `raw` (an event) with its `data:` lines replaced by `data`.
fn with_data(raw: &[u8], data: &Value) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(raw).ok()?;
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let json = serde_json::to_string(data).ok()?;
    let mut out = String::new();
    let mut written = false;
    for line in text.lines().filter(|l| !l.is_empty()) {
        if line.starts_with("data:") {
            if !written {
                out.push_str(&format!("data: {json}{newline}"));
                written = true;
            }
        } else {
            out.push_str(line);
            out.push_str(newline);
        }
    }
    out.push_str(newline);
    Some(out.into_bytes())
}

/// The member a rewritten event gets when a delta string of it that held part of a secret
/// had to be emptied (the placeholder had no character left for it): a decoder that drops an
/// empty delta makes the event of one so marked anyway, as the run saw one there.
pub const EMPTIED: &str = "pi:emptied";

/// Secrets as they are looked for in streamed text: (secret, placeholder), longest first.
pub type Known<'a> = &'a [(&'a str, &'a str)];

impl CallStream {
    /// The part of the body ready to write after `bytes` (whole secrets already replaced by
    /// `replace`), or `None` when the body is not a stream of events (then the caller handles
    /// it); `rewrote` is set when a secret's pieces were rewritten.
    pub fn part(
        &mut self,
        bytes: &[u8],
        known: Known<'_>,
        replace: &dyn Fn(&[u8]) -> Vec<u8>,
        rewrote: &mut bool,
    ) -> Option<Vec<u8>> {
        self.partial.extend_from_slice(bytes);
        if self.kind == Kind::Undecided {
            match looks_like_events(&self.partial) {
                None => return Some(Vec::new()),
                Some(true) => self.kind = Kind::Events,
                Some(false) => self.kind = Kind::Other,
            }
        }
        if self.kind == Kind::Other {
            return None;
        }
        let mut out = Vec::new();
        while let Some(end) = event_end(&self.partial) {
            let raw: Vec<u8> = self.partial.drain(..end).collect();
            let raw = replace(&raw);
            let data = event_data(&raw);
            let pieces = data.as_ref().map(pieces).unwrap_or_default();
            self.held.push(HeldEvent { raw, data, pieces });
            if !self.ends_with_secret_start(known) {
                out.extend(self.resolve(known, rewrote));
            }
        }
        Some(out)
    }

    /// Takes the bytes the caller gave while the body's kind was undecided (it was not a
    /// stream of events).
    pub fn take_undecided(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }

    /// Everything still held (the body ended): held events, rewritten where they hold a
    /// secret whole, and an unfinished event.
    pub fn finish(
        &mut self,
        known: Known<'_>,
        replace: &dyn Fn(&[u8]) -> Vec<u8>,
        rewrote: &mut bool,
    ) -> Vec<u8> {
        let mut out = self.resolve(known, rewrote);
        out.extend(replace(&std::mem::take(&mut self.partial)));
        out
    }

    /// Whether a channel's held text ends with a proper start of a secret.
    fn ends_with_secret_start(&self, known: Known<'_>) -> bool {
        channels_of(&self.held).iter().any(|(_, text)| {
            known.iter().any(|(secret, _)| {
                (1..secret.len()).any(|len| text.as_bytes().ends_with(&secret.as_bytes()[..len]))
            })
        })
    }

    /// The held events as they are to be written, each secret a channel holds whole replaced.
    fn resolve(&mut self, known: Known<'_>, rewrote: &mut bool) -> Vec<u8> {
        let mut held = std::mem::take(&mut self.held);
        let channels: Vec<(String, String)> = channels_of(&held)
            .into_iter()
            .filter(|(_, text)| !occurrences(text, known).is_empty())
            .collect();
        let mut changed = vec![false; held.len()];
        for (channel, text) in channels {
            let found = occurrences(&text, known);
            let mut at = 0;
            let mut used = vec![0usize; found.len()];
            for (e, event) in held.iter_mut().enumerate() {
                for piece in event.pieces.iter_mut().filter(|p| p.channel == channel) {
                    let end = at + piece.text.len();
                    let rewritten = rewrite_piece(&text, at, end, &found, &mut used);
                    at = end;
                    if rewritten != piece.text {
                        let data = event.data.as_mut();
                        if let Some(slot) = data.and_then(|d| string_at(d, &piece.path)) {
                            *slot = rewritten.clone();
                        }
                        if rewritten.is_empty() {
                            if let Some(Value::Object(members)) = event.data.as_mut() {
                                members.insert(EMPTIED.to_owned(), Value::Bool(true));
                            }
                        }
                        piece.text = rewritten;
                        changed[e] = true;
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (event, changed) in held.into_iter().zip(changed) {
            let rewritten = match (&event.data, changed) {
                (Some(data), true) => with_data(&event.raw, data),
                _ => None,
            };
            match rewritten {
                Some(bytes) => {
                    *rewrote = true;
                    out.extend(bytes);
                }
                None => out.extend(event.raw),
            }
        }
        out
    }
}

/// The texts of `held`'s channels, each in order, the channels in the order they first come.
fn channels_of(held: &[HeldEvent]) -> Vec<(String, String)> {
    let mut order: Vec<String> = Vec::new();
    let mut texts: HashMap<String, String> = HashMap::new();
    for piece in held.iter().flat_map(|e| &e.pieces) {
        if !texts.contains_key(&piece.channel) {
            order.push(piece.channel.clone());
        }
        texts
            .entry(piece.channel.clone())
            .or_default()
            .push_str(&piece.text);
    }
    order
        .into_iter()
        .map(|c| {
            let text = texts.remove(&c).unwrap_or_default();
            (c, text)
        })
        .collect()
}

/// Where secrets occur in `text`: (start, end, placeholder), leftmost first, the longest
/// secret at a place taken.
fn occurrences<'k>(text: &str, known: Known<'k>) -> Vec<(usize, usize, &'k str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match known
            .iter()
            .find(|(secret, _)| bytes[i..].starts_with(secret.as_bytes()))
        {
            Some((secret, placeholder)) => {
                found.push((i, i + secret.len(), *placeholder));
                i += secret.len();
            }
            None => i += 1,
        }
    }
    found
}

/// The piece `text[start..end]` of a channel's text with the secrets `found` in it replaced:
/// a piece that holds part of a secret but not its end gets the placeholder's next character
/// while more than one is left (`used` counts them per secret), the piece holding its end the
/// rest.
fn rewrite_piece(
    text: &str,
    start: usize,
    end: usize,
    found: &[(usize, usize, &str)],
    used: &mut [usize],
) -> String {
    let mut out = String::new();
    if start == end {
        return out;
    }
    let mut at = start;
    for (n, (s, e, placeholder)) in found.iter().enumerate() {
        if *e <= start || *s >= end {
            continue;
        }
        if *s > at {
            out.push_str(&text[at..*s]);
        }
        if *e <= end {
            out.push_str(&placeholder[used[n]..]);
            used[n] = placeholder.len();
        } else if placeholder.len() - used[n] > 1 {
            out.push_str(&placeholder[used[n]..used[n] + 1]);
            used[n] += 1;
        }
        at = (*e).min(end);
    }
    if at < end {
        out.push_str(&text[at..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::redact::Secrets;
    use proptest::prelude::*;

    const SECRET: &str = "ZQ8xw7Jk42mPv9LrTb";

    /// An event of each stream format whose delta field holds `text`, and where that field is.
    fn event(format: usize, text: &str) -> (Value, &'static [&'static str]) {
        match format {
            0 => (
                serde_json::json!({"object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": text}}]}),
                &["choices", "0", "delta", "content"],
            ),
            1 => (
                serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": 0, "function": {"arguments": text}}]}}]}),
                &[
                    "choices",
                    "0",
                    "delta",
                    "tool_calls",
                    "0",
                    "function",
                    "arguments",
                ],
            ),
            2 => (
                serde_json::json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "text_delta", "text": text}}),
                &["delta", "text"],
            ),
            3 => (
                serde_json::json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": text}}),
                &["delta", "partial_json"],
            ),
            4 => (
                serde_json::json!({"type": "response.output_text.delta", "output_index": 0,
                    "content_index": 0, "delta": text}),
                &["delta"],
            ),
            _ => (
                serde_json::json!({"candidates": [{"content": {"role": "model",
                    "parts": [{"text": text}]}}]}),
                &["candidates", "0", "content", "parts", "0", "text"],
            ),
        }
    }

    fn field<'v>(value: &'v Value, path: &[&str]) -> Option<&'v str> {
        path.iter()
            .try_fold(value, |at, step| match step.parse::<usize>() {
                Ok(i) => at.get(i),
                Err(_) => at.get(*step),
            })?
            .as_str()
    }

    proptest! {
        /// However a secret in a stream's text is spread over events (of any of the stream
        /// formats, one character or more each) and reads, no written part holds a piece of it
        /// that three or more characters long, the delta strings written put together read the
        /// text with the placeholder instead, and every delta that was not empty stays so or
        /// its event is marked.
        #[test]
        fn a_secret_spread_over_events_is_written_as_its_placeholder(
            format in 0usize..6,
            before in "[a-z ]{0,12}",
            after in "[a-z .]{0,12}",
            sizes in proptest::collection::vec(1usize..4, 1..40),
            cuts in proptest::collection::vec(0usize..2000, 0..8),
            crlf in any::<bool>(),
        ) {
            spread(format, &before, &after, &sizes, cuts, crlf)?;
        }
    }

    fn spread(
        format: usize,
        before: &str,
        after: &str,
        sizes: &[usize],
        cuts: Vec<usize>,
        crlf: bool,
    ) -> Result<(), TestCaseError> {
        let text = format!("{before}{SECRET}{after}");
        let chars: Vec<char> = text.chars().collect();
        let mut pieces = Vec::new();
        let mut at = 0;
        for size in sizes.iter().cycle() {
            if at >= chars.len() {
                break;
            }
            let end = (at + size).min(chars.len());
            pieces.push(chars[at..end].iter().collect::<String>());
            at = end;
        }
        let blank = if crlf { "\r\n\r\n" } else { "\n\n" };
        let mut body = String::new();
        for piece in &pieces {
            body.push_str(&format!("data: {}{blank}", event(format, piece).0));
        }
        body.push_str(&format!("data: [DONE]{blank}"));

        let mut secrets = Secrets::default();
        secrets.add(SECRET);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
        cuts.sort_unstable();
        let mut written = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            written.push(secrets.body_part(3, &body.as_bytes()[start..cut]));
            start = cut;
        }
        written.push(secrets.release(3));
        for part in &written {
            let part = String::from_utf8_lossy(part);
            for window in SECRET.as_bytes().windows(3) {
                let window = std::str::from_utf8(window).unwrap();
                prop_assert!(!part.contains(window), "{} in {}", window, part);
            }
        }

        let written = String::from_utf8(written.concat()).unwrap();
        let path = event(format, "").1;
        let mut streamed = String::new();
        let mut kept = 0;
        for data in written.lines().filter_map(|l| l.strip_prefix("data: ")) {
            let Ok(value) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            let delta = field(&value, path).unwrap();
            streamed.push_str(delta);
            if !delta.is_empty() || value.get(EMPTIED) == Some(&Value::Bool(true)) {
                kept += 1;
            }
        }
        prop_assert_eq!(streamed, format!("{before}<<secret-1>>{after}"));
        prop_assert_eq!(kept, pieces.len());
        let marked = written.contains(&format!("\"{EMPTIED}\":true"));
        prop_assert_eq!(marked, pieces.len() > kept_nonempty(&written, path));
        prop_assert!(secrets.rewrote_stream());
        Ok(())
    }

    /// How many events of `written` have a delta string that is not empty.
    fn kept_nonempty(written: &str, path: &[&str]) -> usize {
        written
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter(|value| field(value, path).is_some_and(|d| !d.is_empty()))
            .count()
    }

    /// A text that only begins like a secret is written as it came, once it parts from it.
    #[test]
    fn a_start_that_is_not_the_secret_is_written_as_it_came() {
        let mut secrets = Secrets::default();
        secrets.add(SECRET);
        let first = format!("data: {}\n\n", event(0, "see ZQ8x").0);
        assert!(secrets.body_part(1, first.as_bytes()).is_empty());
        let second = format!("data: {}\n\n", event(0, "yz").0);
        let written = secrets.body_part(1, second.as_bytes());
        assert_eq!(
            String::from_utf8(written).unwrap(),
            format!("{first}{second}")
        );
        assert!(!secrets.rewrote_stream());
    }

    /// A read that ends between the `\r` and the `\n` of an event's blank line: the event
    /// ends with the `\n`, not before it.
    #[test]
    fn a_read_cut_inside_a_crlf_ends_no_event_early() {
        spread(2, "aa a", "", &[1, 3], vec![183], true).unwrap();
    }
}
