//! What a recorder replaces before a line reaches the disk: known secrets (the credentials a
//! run could resolve, and any value a credential field held) wherever they appear, and a
//! response body's bytes held back while they could be the start of a secret that the next
//! read completes, or while a stream's delta strings could be the start of a secret that the
//! next events complete (see [`stream`]).

use std::collections::HashMap;

pub mod rules;
pub mod stream;

pub use rules::{Reach, RuleError, Rules, RulesSpec};

/// What a session recorder redacts, as a cassette header's `redactions` names it (the `pi`
/// binary's and the SDK's recordings alike).
pub const REDACTIONS: [&str; 3] = [
    "api keys",
    "credential headers",
    "credential query parameters",
];

/// What the recording proxy redacts: [`REDACTIONS`] but the keys it is never told (it sees
/// only requests, whose credentials are in headers and query parameters).
pub const PROXY_REDACTIONS: &[&str] = REDACTIONS.split_at(1).1;

/// Secrets shorter than this are replaced only where they are known to be (keys, auth headers),
/// not in every text: a key such as `none` must not rewrite the conversation.
pub const MIN_SCRUBBED_LEN: usize = 8;

/// Known secrets and their placeholders, and the body bytes held back per call.
#[derive(Debug, Default)]
pub struct Secrets {
    /// (secret, placeholder), longest secret first.
    known: Vec<(String, String)>,
    /// (value, placeholder) of values replaced only where a rule found them.
    local: Vec<(String, String)>,
    /// Per call: the end of the body read so far that could begin a secret.
    held: HashMap<u64, Vec<u8>>,
    /// Per call: its events, when its body is a stream of server-sent events.
    streams: HashMap<u64, stream::CallStream>,
    /// Whether a secret streamed in pieces was rewritten in some body.
    rewrote_stream: bool,
}

impl Secrets {
    /// The placeholder of `value`, if it is known.
    pub fn placeholder(&self, value: &str) -> Option<&str> {
        self.known
            .iter()
            .find(|(s, _)| s == value)
            .map(|(_, p)| p.as_str())
    }

    /// Secrets with the placeholders a recorder given `credentials` (value, where it came from)
    /// in this order assigns them.
    pub fn of(credentials: &[(String, String)]) -> Secrets {
        let mut secrets = Secrets::default();
        for (value, _) in credentials {
            secrets.register(value);
        }
        secrets
    }

    /// Registers `value` under a new placeholder and returns it; `None` when it is empty or
    /// known already.
    pub fn register(&mut self, value: &str) -> Option<String> {
        (!value.is_empty() && self.placeholder(value).is_none()).then(|| self.add(value))
    }

    /// Placeholders are numbered in the order they are given, whichever kind.
    fn next_placeholder(&self) -> String {
        format!("<<secret-{}>>", self.known.len() + self.local.len() + 1)
    }

    /// The placeholder of `value` where a rule found it, which replaces it there only (a value
    /// the run also takes from its configuration would otherwise read differently on replay);
    /// registered now if it is new (then also `true`).
    pub fn local_placeholder(&mut self, value: &str) -> (String, bool) {
        if let Some(placeholder) = self.placeholder(value) {
            return (placeholder.to_owned(), false);
        }
        if let Some((_, placeholder)) = self.local.iter().find(|(v, _)| v == value) {
            return (placeholder.clone(), false);
        }
        let placeholder = self.next_placeholder();
        self.local.push((value.to_owned(), placeholder.clone()));
        (placeholder, true)
    }

    /// The placeholder of `value`, registered now if it is new (then also `true`).
    pub fn placeholder_for(&mut self, value: &str) -> (String, bool) {
        match self.placeholder(value) {
            Some(placeholder) => (placeholder.to_owned(), false),
            None => (self.add(value), true),
        }
    }

    /// Registers `value` under a new placeholder; returns it.
    pub fn add(&mut self, value: &str) -> String {
        let placeholder = self.next_placeholder();
        self.known.push((value.to_owned(), placeholder.clone()));
        self.known
            .sort_by_key(|(secret, _)| std::cmp::Reverse(secret.len()));
        placeholder
    }

    /// `text` with each secret at least `min_len` long replaced (as written raw and as JSON
    /// escapes it).
    pub fn replace(&self, text: &str, min_len: usize) -> String {
        let mut out = text.to_owned();
        for (secret, placeholder) in self.scrubbed(min_len) {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), placeholder);
            }
            if let Some(escaped) = json_escaped(secret).filter(|e| out.contains(e.as_str())) {
                out = out.replace(escaped.as_str(), placeholder);
            }
        }
        out
    }

    /// `text` with an end that is the start of a secret (eight characters of it or more, not
    /// all) replaced by its placeholder, or `None` when it has none. A tool's output so far,
    /// which its updates show while it runs, can end in the middle of a key that only the
    /// next update completes: no whole-secret replacement finds that end.
    pub fn replace_end(&self, text: &str) -> Option<String> {
        self.scrubbed(MIN_SCRUBBED_LEN)
            .find_map(|(secret, placeholder)| {
                let most = (secret.len() - 1).min(text.len());
                (START_REPLACED..=most)
                    .rev()
                    .filter(|len| secret.is_char_boundary(*len))
                    .find(|len| text.ends_with(&secret[..*len]))
                    .map(|len| format!("{}{placeholder}", &text[..text.len() - len]))
            })
    }

    /// The next part of call `call`'s body, ready to write: `bytes` after what was held back,
    /// secrets replaced, less an end that could be the start of a secret (held for the next
    /// read, or for [`Secrets::release`]).
    /// A body of server-sent events is written event by event, whole events held back while
    /// a delta field's text could be the start of a secret that later events complete.
    pub fn body_part(&mut self, call: u64, bytes: &[u8]) -> Vec<u8> {
        let mut stream = self.streams.remove(&call).unwrap_or_default();
        let forms = self.streamed();
        let known: Vec<(&str, &str)> = forms.iter().map(|(s, p)| (s.as_str(), *p)).collect();
        let mut rewrote = false;
        let part = stream.part(bytes, &known, &|b| self.replace_bytes(b), &mut rewrote);
        let part = match part {
            Some(part) => part,
            None => {
                let bytes = stream.take_undecided();
                self.byte_part(call, &bytes)
            }
        };
        self.rewrote_stream |= rewrote;
        self.streams.insert(call, stream);
        part
    }

    /// Whether a secret a model streamed in pieces was rewritten to its placeholder in some
    /// body (then what a run printed as it streamed held pieces of it).
    pub fn rewrote_stream(&self) -> bool {
        self.rewrote_stream
    }

    /// The secrets looked for in streamed text (a delta string of JSON, such as a tool call's
    /// arguments, holds a secret JSON-escaped), longest first.
    fn streamed(&self) -> Vec<(String, &str)> {
        let mut forms: Vec<(String, &str)> = Vec::new();
        for (secret, placeholder) in self.scrubbed(MIN_SCRUBBED_LEN) {
            forms.push((secret.clone(), placeholder.as_str()));
            if let Some(escaped) = json_escaped(secret) {
                forms.push((escaped, placeholder.as_str()));
            }
        }
        forms.sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
        forms
    }

    /// [`Secrets::body_part`] of a body that is not a stream of events.
    fn byte_part(&mut self, call: u64, bytes: &[u8]) -> Vec<u8> {
        let mut buffer = self.held.remove(&call).unwrap_or_default();
        buffer.extend_from_slice(bytes);
        let mut buffer = self.replace_bytes(&buffer);
        let keep = self.longest_secret_start(&buffer);
        if keep > 0 {
            let held = buffer.split_off(buffer.len() - keep);
            self.held.insert(call, held);
        }
        buffer
    }

    /// What call `call`'s body still holds back (its body ended).
    pub fn release(&mut self, call: u64) -> Vec<u8> {
        let mut out = match self.streams.remove(&call) {
            Some(mut stream) => {
                let forms = self.streamed();
                let known: Vec<(&str, &str)> =
                    forms.iter().map(|(s, p)| (s.as_str(), *p)).collect();
                let mut rewrote = false;
                let out = stream.finish(&known, &|b| self.replace_bytes(b), &mut rewrote);
                self.rewrote_stream |= rewrote;
                out
            }
            None => Vec::new(),
        };
        out.extend(self.held.remove(&call).unwrap_or_default());
        out
    }

    fn scrubbed(&self, min_len: usize) -> impl Iterator<Item = &(String, String)> {
        self.known.iter().filter(move |(s, _)| s.len() >= min_len)
    }

    /// Every form a secret takes in a body: raw, and JSON-escaped when that differs.
    fn forms(&self) -> Vec<(Vec<u8>, &str)> {
        let mut forms = Vec::new();
        for (secret, placeholder) in self.scrubbed(MIN_SCRUBBED_LEN) {
            forms.push((secret.as_bytes().to_vec(), placeholder.as_str()));
            if let Some(escaped) = json_escaped(secret) {
                forms.push((escaped.into_bytes(), placeholder.as_str()));
            }
        }
        forms
    }

    fn replace_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        for (form, placeholder) in self.forms() {
            out = replace_slice(&out, &form, placeholder.as_bytes());
        }
        out
    }

    /// The length of the longest end of `bytes` that is a proper start of a secret's form.
    fn longest_secret_start(&self, bytes: &[u8]) -> usize {
        let mut longest = 0;
        for (form, _) in self.forms() {
            let most = (form.len() - 1).min(bytes.len());
            for len in (longest + 1..=most).rev() {
                if bytes[bytes.len() - len..] == form[..len] {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }
}

/// The shortest start of a secret [`Secrets::replace_end`] replaces: a shorter one tells
/// little of a key, and ends ordinary text more often.
const START_REPLACED: usize = MIN_SCRUBBED_LEN;

/// `secret` as it appears inside a JSON string, when that differs from the raw text.
fn json_escaped(secret: &str) -> Option<String> {
    let escaped = serde_json::to_string(secret).ok()?;
    let escaped = escaped.trim_matches('"');
    (escaped != secret).then(|| escaped.to_owned())
}

fn replace_slice(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return haystack.to_vec();
    }
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// However a body that holds secrets is cut into reads, no written part holds a secret
        /// or any piece of one that completes across parts, and the parts put together are
        /// the body with each secret replaced.
        #[test]
        fn a_secret_cut_between_reads_is_replaced_whole(
            prefix in "[a-z \"]{0,20}",
            middle in "[a-z \"]{0,20}",
            cuts in proptest::collection::vec(0usize..120, 0..6),
        ) {
            let mut secrets = Secrets::default();
            secrets.add("sk-secret-0123456789");
            secrets.add("pk\"quoted-secret");
            let body = format!("{prefix}sk-secret-0123456789{middle}pk\\\"quoted-secret!");
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(body.len())).collect();
            cuts.sort_unstable();
            let mut written = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([body.len()]) {
                let part = secrets.body_part(7, &body.as_bytes()[start..cut]);
                let text = String::from_utf8_lossy(&part).into_owned();
                prop_assert!(!text.contains("sk-secret") && !text.contains("quoted-secret"), "{}", text);
                written.extend(part);
                start = cut;
            }
            written.extend(secrets.release(7));
            let expected = format!("{prefix}<<secret-1>>{middle}<<secret-2>>!");
            prop_assert_eq!(String::from_utf8_lossy(&written), expected);
        }
    }

    /// A text that ends in the middle of a secret (a tool's output so far) ends with its
    /// placeholder instead, from 8 characters of it on; a shorter end, or a start inside the
    /// text, is left.
    #[test]
    fn a_text_ending_with_a_secrets_start_ends_with_its_placeholder() {
        let mut secrets = Secrets::default();
        secrets.add("sk-secret-0123456789");
        let key = "sk-secret-0123456789";
        for cut in START_REPLACED..key.len() {
            let text = format!("out: {}", &key[..cut]);
            assert_eq!(
                secrets.replace_end(&text).as_deref(),
                Some("out: <<secret-1>>")
            );
        }
        for text in ["out: sk-secr", "sk-secret-01 and on", ""] {
            assert_eq!(secrets.replace_end(text), None, "{text}");
        }
    }
}
