//! Anthropic message threads as Pi 1.5.2 sends them (`prepareThreadRequest`,
//! `recordThreadReply` and `hashThreadPrefix` of its Anthropic provider): a session's first
//! request creates a thread; a later one whose conversation starts with the last answered
//! request's messages and reply, under the same settings, continues that reply's thread and
//! carries only the messages after them, without the system prompt and the tools.
//!
//! Pi keeps the session's thread state in memory, changed only by threaded calls; here each
//! threaded call hands back the state it leaves ([`Tracking`], sent to the core as
//! `Patch::Thread` before the final event) and the core's machine hands it to the next request
//! ([`ModelRequest::thread`]), so a replay, whose answers are the recorded ones, sends the same
//! bodies.

use pi_core::agent::{ModelRequest, ThreadState};
use pi_core::message::{AssistantMessage, Message, StopReason};
use pi_core::model::Model;
use serde_json::{json, Map, Value};

use super::encode::{convert_messages, is_oauth_token};
use crate::hash::short_hash;
use crate::{compat_flag, CacheRetention, CallOptions, HttpRequest};

/// The beta a threaded request asks for.
pub(crate) const MESSAGE_THREADS_BETA: &str = "message-threads-2026-08-12";

/// Whether requests of this session go in threads: `compat.supportsMessageThreads` (by default
/// provider `anthropic` at api.anthropic.com), a session id, and prompt caching not turned off
/// (Pi keys threads by the caching session id).
pub(crate) fn threads_apply(request: &ModelRequest, options: &CallOptions) -> bool {
    let model = &request.model;
    let default = model.provider == "anthropic" && model.base_url.contains("api.anthropic.com");
    compat_flag(model, "supportsMessageThreads", default)
        && request.session_id.is_some()
        && options.cache_retention != CacheRetention::None
}

/// The errors with which Anthropic refuses a thread that a new thread can replace (Pi 1.5.2's
/// `NEW_THREAD_ERRORS`).
const NEW_THREAD_ERRORS: [&str; 4] = [
    "thread_not_found",
    "thread_already_continued",
    "thread_continue_in_flight",
    "thread_fingerprint_mismatch",
];

/// The diagnostic a call sent again after a refused thread carries.
const THREAD_FALLBACK: &str = "anthropic_thread_fallback";

/// Whether the session's threads are off: an earlier call was sent without its thread after
/// Anthropic refused threads for it (Pi 1.5.2 then sends the session's requests as built).
pub(crate) fn threads_off(request: &ModelRequest) -> bool {
    request.thread == Some(ThreadState::Off)
}

/// How a threaded request was sent, which says how it goes again when its thread is refused.
#[derive(Clone, Debug)]
pub(crate) enum Thread {
    /// The full body with `thread: {type: "create"}`.
    Created,
    /// Only the messages after the previous reply, continuing its thread; the full body (its
    /// `betas` taken out) is kept for sending again.
    Continued(Box<Map<String, Value>>),
}

/// The body as sent in a thread: `params` (the full request body, overrides applied) with
/// `thread: {type: "create"}`, or, when the session's thread state holds a reply whose messages
/// and settings this request starts with, only the messages after that reply, without `system`
/// and `tools`, and `thread: {type: "continue", previous_message_id}`. With it, what the call
/// makes of the session's state.
pub(crate) fn threaded_body(
    request: &ModelRequest,
    options: &CallOptions,
    now: u64,
    mut params: Map<String, Value>,
) -> (Map<String, Value>, Thread, Tracking) {
    let model = &request.model;
    let key = PrefixKey::new(&model.provider, &model.base_url, &params);
    let count = key.as_ref().map_or(0, |key| key.messages.len());
    let continued = match (&request.thread, &key) {
        (
            Some(ThreadState::Reply {
                prefix_count,
                prefix_hash,
                reply_id,
            }),
            Some(key),
        ) if count > *prefix_count && key.hash(*prefix_count, &[]) == *prefix_hash => {
            Some((*prefix_count, reply_id.clone()))
        }
        _ => None,
    };
    let tracking = |unchanged: Option<ThreadState>| Tracking {
        unchanged,
        record: Some(Box::new(Record {
            model: model.clone(),
            oauth: is_oauth_token(&options.api_key),
            now,
            key,
        })),
        without_thread: false,
        responded: false,
    };
    let Some((count, reply_id)) = continued else {
        let tracking = tracking(request.thread.clone());
        params.insert("thread".into(), json!({"type": "create"}));
        return (params, Thread::Created, tracking);
    };
    // Pi drops the state as it continues the thread: a call that then fails leaves none.
    let tracking = tracking(None);
    let mut body: Map<String, Value> = params
        .iter()
        .filter(|(key, _)| *key != "system" && *key != "tools")
        .map(|(key, value)| match (key.as_str(), value) {
            ("messages", Value::Array(messages)) => {
                (key.clone(), Value::Array(messages[count..].to_vec()))
            }
            _ => (key.clone(), value.clone()),
        })
        .collect();
    body.insert(
        "thread".into(),
        json!({"type": "continue", "previous_message_id": reply_id}),
    );
    params.shift_remove("betas");
    (body, Thread::Continued(Box::new(params)), tracking)
}

/// What a threaded call makes of the session's thread state (Pi 1.5.2's `threadState`, which
/// only threaded calls change): a reply recorded after an answer without error, `off` once a
/// request sent again without its thread was answered, else the state as the call left it.
#[derive(Debug)]
pub(crate) struct Tracking {
    /// The state should no reply be recorded: the one the call was given, or none once it
    /// continued the thread.
    unchanged: Option<ThreadState>,
    /// What recording the reply needs; none once the call went again without a thread.
    record: Option<Box<Record>>,
    /// Whether the call went again without a thread (threads refused as unsupported).
    without_thread: bool,
    /// Whether a response came (Pi sets `off` once the send without thread returns).
    responded: bool,
}

/// The request whose reply Pi's `recordThreadReply` records.
#[derive(Debug)]
struct Record {
    /// The call's model (what converting the reply reads).
    model: Model,
    oauth: bool,
    now: u64,
    /// The hash input of the full body as built (overrides applied, `betas` in, no `thread`);
    /// none when it has no messages.
    key: Option<PrefixKey>,
}

impl Tracking {
    /// The call was refused its thread: `new_thread` sends it again in a new one (the same
    /// body), otherwise it goes without a thread.
    pub(crate) fn refused(&mut self, new_thread: bool) {
        if !new_thread {
            self.record = None;
            self.without_thread = true;
        }
    }

    /// The state the call was given, unless it continued the thread (then none).
    pub(crate) fn unchanged(&self) -> &Option<ThreadState> {
        &self.unchanged
    }

    /// A successful response came.
    pub(crate) fn responded(&mut self) {
        self.responded = true;
    }

    /// The state once the call ended with `message` (the final one, failed or not).
    pub(crate) fn after(&self, message: &AssistantMessage) -> Option<ThreadState> {
        let answered = !matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
        if self.without_thread && self.responded {
            return Some(ThreadState::Off);
        }
        let recorded = self
            .record
            .as_deref()
            .filter(|_| answered && message.response_model.is_none())
            .and_then(|record| Some((record, record.key.as_ref()?, message.response_id.clone()?)));
        let Some((record, key, reply_id)) = recorded else {
            return self.unchanged.clone();
        };
        let answer = [Message::Assistant(message.clone())];
        let reply: Vec<String> =
            convert_messages(&answer, &record.model, record.oauth, None, record.now)
                .iter()
                .filter(|m| m["role"] == "assistant")
                .map(|m| text(&normalized(m)))
                .collect();
        let prefix_count = key.messages.len() + reply.len();
        Some(ThreadState::Reply {
            prefix_count,
            prefix_hash: key.hash(prefix_count, &reply),
            reply_id,
        })
    }
}

/// Anthropic's refusal of a thread, read from an error response as Pi 1.5.2's
/// `sendThreadRequest` reads it: `error.details.error_code` one of [`NEW_THREAD_ERRORS`] (send
/// again in a new thread) or `thread_unsupported_request`, or no code with status 400 and
/// "thread" in the error's text (send again without a thread). Any other error is no refusal.
pub(crate) struct Refusal {
    /// The code, or the status without one: the diagnostic's `details.reason`.
    reason: String,
    new_thread: bool,
}

impl Refusal {
    /// Whether the call goes again in a new thread (else without one).
    pub(crate) fn new_thread(&self) -> bool {
        self.new_thread
    }
}

/// The refusal in an error response of `status` with `body`, whose text is `message`.
pub(crate) fn refusal(status: u16, body: &[u8], message: &str) -> Option<Refusal> {
    let json = serde_json::from_slice::<Value>(body).ok();
    let code = json
        .as_ref()
        .and_then(|j| j["error"]["details"]["error_code"].as_str());
    match code {
        Some(code) if NEW_THREAD_ERRORS.contains(&code) => Some(Refusal {
            reason: code.to_owned(),
            new_thread: true,
        }),
        Some(code) if code == "thread_unsupported_request" => Some(Refusal {
            reason: code.to_owned(),
            new_thread: false,
        }),
        None if status == 400 && message.contains("thread") => Some(Refusal {
            reason: status.to_string(),
            new_thread: false,
        }),
        _ => None,
    }
}

/// The diagnostic the answer to a call sent again after `refusal` carries (Pi's is stamped with
/// the time of the refusal; here the call's own time, which a replay reproduces).
pub(crate) fn fallback_diagnostic(refusal: &Refusal, message: &str, timestamp: u64) -> Value {
    json!({
        "type": THREAD_FALLBACK,
        "timestamp": timestamp,
        "error": {"message": message},
        "details": {"reason": refusal.reason},
    })
}

/// The request sent again after `refusal` of `sent`: the full body in a new thread, or without
/// any thread (the beta kept, as Pi keeps it).
pub(crate) fn resend(sent: &HttpRequest, thread: &Thread, refusal: &Refusal) -> HttpRequest {
    let mut full = match thread {
        Thread::Continued(full) => (**full).clone(),
        Thread::Created => match sent.body.to_value().into_owned() {
            Value::Object(body) => body,
            _ => Map::new(),
        },
    };
    full.shift_remove("thread");
    if refusal.new_thread {
        full.insert("thread".into(), json!({"type": "create"}));
    }
    HttpRequest {
        method: sent.method,
        url: sent.url.clone(),
        headers: sent.headers.clone(),
        body: Value::Object(full).into(),
    }
}

/// Pi's `hashThreadPrefix` input, taken apart once per call: the JSON text of the settings a
/// thread is bound to and of each message, without `cache_control` and with string contents as
/// one text block. A request checks its first messages against the session's reply, and the
/// reply's own hash adds the answer to all of them, so neither copies the body.
#[derive(Debug)]
struct PrefixKey {
    settings: String,
    messages: Vec<String>,
}

impl PrefixKey {
    /// The key of `params` (a full body), none without a `messages` array.
    fn new(provider: &str, base_url: &str, params: &Map<String, Value>) -> Option<Self> {
        let messages = params.get("messages")?.as_array()?;
        // Serialized in place (a missing field as `null`), the system prompt and tools uncopied.
        let field = |name: &str| params.get(name);
        let settings = (
            provider,
            base_url,
            field("model"),
            field("system"),
            field("tools"),
            field("thinking"),
            field("output_config"),
            field("tool_choice"),
            field("betas"),
            field("fallbacks"),
        );
        Some(PrefixKey {
            settings: pi_core::json::to_string(&settings).unwrap_or_default(),
            messages: messages.iter().map(|m| text(&normalized(m))).collect(),
        })
    }

    /// The [`short_hash`] Pi compares: the settings with the first `count` messages, then
    /// `more` (each already as text), as one JSON array.
    fn hash(&self, count: usize, more: &[String]) -> String {
        let mut input = self.settings.clone();
        input.push('[');
        for (i, message) in self.messages.iter().chain(more).take(count).enumerate() {
            if i > 0 {
                input.push(',');
            }
            input.push_str(message);
        }
        input.push(']');
        short_hash(&input)
    }
}

/// `JSON.stringify(value)`.
fn text(value: &Value) -> String {
    pi_core::json::to_string(value).unwrap_or_default()
}

/// A message as Pi's hash replacer sees it: no `cache_control`, and a string `content` as
/// `[{type: "text", text}]`, at any depth.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, v)| {
                    let v = match v {
                        Value::String(text) if key == "content" => {
                            json!([{"type": "text", "text": text}])
                        }
                        other => normalized(other),
                    };
                    (key.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}
