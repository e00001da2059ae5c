//! Which cassette a recorded request goes to: one file per conversation.
//!
//! The rule: each request of an agent conversation repeats the one before it and adds to it, so
//! a request continues an open conversation when it goes to the same method and path, names the
//! same `model` and system prompt (`system`, `systemInstruction`, `instructions`), and its
//! message list (`messages`, `input` or `contents`) starts with the previous request's list
//! (an identical request, a retry, continues it too; prompt-cache markers, `cache_control`,
//! which clients move to the newest message each turn, are not compared). Among several, the
//! one with the longest list wins, then the most recent. Any other request starts a new conversation. Requests
//! without a message list (`GET /v1/models`) group by method and path.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::canonical::CanonicalRequest;

/// The members that hold a conversation's messages, by API: Chat Completions and Anthropic
/// (`messages`), Responses (`input`), Gemini (`contents`).
const THREADS: [&str; 3] = ["messages", "input", "contents"];

/// The members that must be equal for two requests to belong to one conversation.
const IDENTITY: [&str; 4] = ["model", "system", "systemInstruction", "instructions"];

/// Members that a client changes in earlier messages as the conversation grows.
const MOVING_MARKERS: [&str; 1] = ["cache_control"];

/// Open conversations kept; the least recently used is closed beyond this (its file is
/// complete already: lines are written as they happen).
const MAX_OPEN: usize = 256;

/// The conversations seen so far and the files they are recorded in.
#[derive(Debug)]
pub struct Conversations<T> {
    dir: PathBuf,
    open: Vec<Open<T>>,
    /// The number of the next new conversation's file.
    next: u64,
    /// A counter of assignments, for least-recently-used.
    clock: u64,
}

#[derive(Debug)]
struct Open<T> {
    identity: String,
    /// The message list of its last request.
    thread: Option<Vec<Value>>,
    /// Requests recorded in it so far.
    exchanges: u64,
    used: u64,
    /// What records it (a cassette writer).
    sink: T,
}

/// Where a request goes.
#[derive(Debug)]
pub enum Placement<'a, T> {
    /// The `exchange`th request (1-based) of an open conversation.
    Continues { sink: &'a T, exchange: u64 },
    /// A new conversation, to be recorded in `file` (then [`Conversations::open`]).
    New { file: PathBuf },
}

impl<T> Conversations<T> {
    /// Conversations recorded in `dir`; new files are numbered after those already there.
    pub fn new(dir: &Path) -> Self {
        let next = std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        name.split('-').next()?.parse::<u64>().ok()
                    })
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0)
            + 1;
        Conversations {
            dir: dir.to_path_buf(),
            open: Vec::new(),
            next,
            clock: 0,
        }
    }

    /// Finds the conversation `request` continues and counts it there, or names the file of a
    /// new one.
    pub fn place(&mut self, request: &CanonicalRequest) -> Placement<'_, T> {
        self.clock += 1;
        let identity = identity(request);
        let thread = thread(&request.body);
        let best = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, o)| o.identity == identity && continues(o.thread.as_deref(), thread))
            .max_by_key(|(_, o)| (o.thread.as_ref().map_or(0, Vec::len), o.used))
            .map(|(i, _)| i);
        match best {
            Some(i) => {
                let open = &mut self.open[i];
                open.thread = thread.cloned();
                open.exchanges += 1;
                open.used = self.clock;
                Placement::Continues {
                    sink: &open.sink,
                    exchange: open.exchanges,
                }
            }
            None => {
                let file = self
                    .dir
                    .join(format!("{:04}-{}.jsonl", self.next, slug(&request.path)));
                self.next += 1;
                Placement::New { file }
            }
        }
    }

    /// Opens the new conversation `request` starts, recorded by `sink`; it is exchange 1.
    pub fn open(&mut self, request: &CanonicalRequest, sink: T) -> &T {
        if self.open.len() >= MAX_OPEN {
            if let Some(oldest) = (0..self.open.len()).min_by_key(|i| self.open[*i].used) {
                self.open.swap_remove(oldest);
            }
        }
        self.open.push(Open {
            identity: identity(request),
            thread: thread(&request.body).cloned(),
            exchanges: 1,
            used: self.clock,
            sink,
        });
        let last = self.open.len() - 1;
        &self.open[last].sink
    }
}

/// Whether a request with message list `next` continues one whose last list was `last`.
fn continues(last: Option<&[Value]>, next: Option<&Vec<Value>>) -> bool {
    match (last, next) {
        (None, None) => true,
        (Some(last), Some(next)) => {
            next.len() >= last.len() && last.iter().zip(next).all(|(a, b)| same_message(a, b))
        }
        _ => false,
    }
}

/// Whether two messages are the same but for [`MOVING_MARKERS`].
fn same_message(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let kept = |(k, _): &(&String, &Value)| !MOVING_MARKERS.contains(&k.as_str());
            let count = |m: &serde_json::Map<String, Value>| m.iter().filter(kept).count();
            count(a) == count(b)
                && a.iter()
                    .filter(kept)
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_message(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same_message(v, w))
        }
        _ => a == b,
    }
}

/// The route and the members that stay the same through a conversation, as one string.
fn identity(request: &CanonicalRequest) -> String {
    let (method, path) = request.route();
    let fixed: Vec<Option<&Value>> = IDENTITY.iter().map(|k| request.body.get(k)).collect();
    format!(
        "{method} {path} {}",
        serde_json::to_string(&fixed).unwrap_or_default()
    )
}

/// The conversation's message list, when the body has one.
fn thread(body: &Value) -> Option<&Vec<Value>> {
    THREADS.iter().find_map(|k| body.get(k)?.as_array())
}

/// A file-name part for `path`: `/v1/chat/completions` -> `v1-chat-completions`.
fn slug(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("");
    let words: Vec<String> = path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut slug = words.join("-");
    slug.truncate(64);
    if slug.is_empty() {
        "root".into()
    } else {
        slug
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::canonical::IgnoreRule;
    use serde_json::json;

    fn request(path: &str, body: Value) -> CanonicalRequest {
        CanonicalRequest::new(
            "POST",
            path,
            Some("application/json"),
            body,
            &IgnoreRule::default(),
        )
    }

    /// Places `request`, opening a new conversation named by its number when it starts one.
    fn place(conversations: &mut Conversations<u64>, request: &CanonicalRequest) -> (u64, u64) {
        match conversations.place(request) {
            Placement::Continues { sink, exchange } => (*sink, exchange),
            Placement::New { file } => {
                let name = file.file_name().unwrap().to_string_lossy().into_owned();
                let number = name[..4].parse().unwrap();
                (*conversations.open(request, number), 1)
            }
        }
    }

    #[test]
    fn a_growing_conversation_stays_in_one_file_and_others_get_their_own() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0007-old.jsonl"), "").unwrap();
        let mut c = Conversations::new(dir.path());
        let path = "/v1/chat/completions";
        let turn1 = request(path, json!({"model": "m", "messages": ["sys", "u1"]}));
        let turn2 = request(
            path,
            json!({"model": "m", "messages": ["sys", "u1", "a1", "t1"]}),
        );
        let other = request(path, json!({"model": "m", "messages": ["sys", "v1"]}));
        let other_model = request(
            path,
            json!({"model": "n", "messages": ["sys", "u1", "a1", "t1", "a2"]}),
        );
        assert_eq!(place(&mut c, &turn1), (8, 1));
        assert_eq!(place(&mut c, &other), (9, 1));
        assert_eq!(place(&mut c, &turn2), (8, 2));
        // A retry of the same request continues it.
        assert_eq!(place(&mut c, &turn2), (8, 3));
        assert_eq!(place(&mut c, &other_model), (10, 1));
        // Without a message list: grouped by route.
        let models = CanonicalRequest::new(
            "GET",
            "/v1/models",
            None,
            Value::Null,
            &IgnoreRule::default(),
        );
        assert_eq!(place(&mut c, &models), (11, 1));
        assert_eq!(place(&mut c, &models), (11, 2));
        match c.place(&turn1) {
            Placement::New { file } => {
                assert_eq!(file, dir.path().join("0012-v1-chat-completions.jsonl"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_longest_matching_conversation_wins() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Conversations::new(dir.path());
        let path = "/v1/messages";
        assert_eq!(
            place(&mut c, &request(path, json!({"messages": ["a"]}))),
            (1, 1)
        );
        // Starts like the first but with its own second message: a branch of its own.
        assert_eq!(
            place(&mut c, &request(path, json!({"messages": ["a", "b"]}))),
            (1, 2)
        );
        assert_eq!(
            place(&mut c, &request(path, json!({"messages": ["a"]}))),
            (2, 1)
        );
        assert_eq!(
            place(&mut c, &request(path, json!({"messages": ["a", "b", "c"]}))),
            (1, 3)
        );
    }

    #[test]
    fn a_moved_cache_marker_does_not_start_a_new_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Conversations::new(dir.path());
        let marked = json!({"type": "ephemeral"});
        let turn1 = json!({"model": "c", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": marked}]}]});
        let turn2 = json!({"model": "c", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": marked}]}]});
        let other = json!({"model": "c", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]}]});
        assert_eq!(place(&mut c, &request("/v1/messages", turn1)), (1, 1));
        assert_eq!(place(&mut c, &request("/v1/messages", turn2)), (1, 2));
        assert_eq!(place(&mut c, &request("/v1/messages", other)), (2, 1));
    }

    #[test]
    fn responses_input_and_gemini_contents_are_message_lists_too() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Conversations::new(dir.path());
        let responses = "/v1/responses";
        let r1 = json!({"model": "g", "instructions": "be brief", "input": ["u1"]});
        let r2 = json!({"model": "g", "instructions": "be brief", "input": ["u1", "a1", "u2"]});
        let r3 = json!({"model": "g", "instructions": "be long", "input": ["u1", "a1", "u2"]});
        assert_eq!(place(&mut c, &request(responses, r1)), (1, 1));
        assert_eq!(place(&mut c, &request(responses, r2)), (1, 2));
        assert_eq!(
            place(&mut c, &request(responses, r3)),
            (2, 1),
            "another system prompt"
        );
        let gemini = "/v1beta/models/g:streamGenerateContent?alt=sse";
        let g1 = json!({"systemInstruction": {"parts": [{"text": "s"}]}, "contents": ["u1"]});
        let g2 = json!({"systemInstruction": {"parts": [{"text": "s"}]}, "contents": ["u1", "m1", "u2"]});
        assert_eq!(place(&mut c, &request(gemini, g1)), (3, 1));
        assert_eq!(place(&mut c, &request(gemini, g2)), (3, 2));
    }

    #[test]
    fn slugs_are_safe_file_names() {
        assert_eq!(slug("/v1/chat/completions?x=1"), "v1-chat-completions");
        assert_eq!(slug("/"), "root");
        assert_eq!(
            slug("/v1beta/models/gemini-2.5-pro:streamGenerateContent"),
            "v1beta-models-gemini-2-5-pro-streamgeneratecontent"
        );
    }
}
