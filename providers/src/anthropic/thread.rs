//! Anthropic message threads as Pi 1.5.2 sends them (`prepareThreadRequest`,
//! `recordThreadReply` and `hashThreadPrefix` of its Anthropic provider): a session's first
//! request creates a thread; a later one whose conversation starts with the last answered
//! request's messages and reply, under the same settings, continues that reply's thread and
//! carries only the messages after them, without the system prompt and the tools.
//!
//! Pi keeps the last reply's prefix per session in memory; here it is recomputed from the
//! request's [`ModelRequest::previous`], which the core's machine keeps, so a replay sends the
//! same bodies.

use pi_core::agent::{ModelRequest, PreviousCall};
use pi_core::message::Message;
use serde_json::{json, Map, Value};

use super::encode::{
    build_body_with, convert_messages, is_oauth_token, strict_tools_given_up, STRICT_TOOLS_FALLBACK,
};
use crate::{compat_flag, with_overrides, CacheRetention, CallOptions, HttpRequest};

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

/// Whether the session's threads are off: an earlier answer was sent without its thread after
/// Anthropic refused threads for the request (Pi 1.5.2 then keeps the session `off`, sending
/// every later request as built). Read from the diagnostic that answer carries.
pub(crate) fn threads_off(request: &ModelRequest) -> bool {
    request.session_diagnostics.iter().any(|diagnostic| {
        diagnostic["type"] == THREAD_FALLBACK
            && diagnostic["details"]["reason"]
                .as_str()
                .is_some_and(|reason| !NEW_THREAD_ERRORS.contains(&reason))
    })
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
/// `thread: {type: "create"}`, or, when `previous` left a reply this request extends, only the
/// messages after that reply, without `system` and `tools`, and `thread: {type: "continue",
/// previous_message_id}`.
pub(crate) fn threaded_body(
    request: &ModelRequest,
    options: &CallOptions,
    now: u64,
    mut params: Map<String, Value>,
) -> (Map<String, Value>, Thread) {
    let continued = request
        .previous
        .as_deref()
        .and_then(|previous| continued_prefix(previous, options, now))
        .filter(|(count, prefix, _)| {
            let messages = params.get("messages").and_then(Value::as_array);
            messages.is_some_and(|m| m.len() > *count)
                && *prefix
                    == prefix_key(
                        &request.model.provider,
                        &request.model.base_url,
                        &params,
                        *count,
                    )
        });
    let Some((count, _, reply_id)) = continued else {
        params.insert("thread".into(), json!({"type": "create"}));
        return (params, Thread::Created);
    };
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
    (body, Thread::Continued(Box::new(params)))
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

/// What Pi's `recordThreadReply` keeps of an answered threaded request: how many messages the
/// request and its reply make, the key they hash to, and the reply's id. Nothing when the
/// reply has no id or came from a fallback model (`responseModel`).
fn continued_prefix(
    previous: &PreviousCall,
    options: &CallOptions,
    now: u64,
) -> Option<(usize, String, String)> {
    let reply_id = previous.reply.response_id.clone()?;
    if previous.reply.response_model.is_some() || !threads_apply(&previous.request, options) {
        return None;
    }
    // The previous call went without preferred strict tools if the session had given them up
    // or the call itself had to (its answer says so).
    let without_strict = strict_tools_given_up(&previous.request)
        || previous
            .reply
            .diagnostics
            .iter()
            .flatten()
            .any(|d| d["type"] == STRICT_TOOLS_FALLBACK);
    let body = build_body_with(&previous.request, options, now, without_strict);
    let mut params = match with_overrides(body, options).to_value().into_owned() {
        Value::Object(params) => params,
        _ => return None,
    };
    let answer = ModelRequest {
        messages: vec![Message::Assistant(previous.reply.clone())].into(),
        ..previous.request.clone()
    };
    let oauth = is_oauth_token(&options.api_key);
    let reply = convert_messages(&answer, oauth, None, now)
        .into_iter()
        .filter(|m| m["role"] == "assistant");
    let Some(Value::Array(messages)) = params.get_mut("messages") else {
        return None;
    };
    messages.extend(reply);
    let count = messages.len();
    let model = &previous.request.model;
    let key = prefix_key(&model.provider, &model.base_url, &params, count);
    Some((count, key, reply_id))
}

/// Pi's `hashThreadPrefix` input: the settings a thread is bound to and the first `count`
/// messages, without `cache_control` and with string contents as one text block. Compared
/// whole where Pi compares a short hash of it.
fn prefix_key(provider: &str, base_url: &str, params: &Map<String, Value>, count: usize) -> String {
    let field = |name: &str| params.get(name).cloned().unwrap_or(Value::Null);
    let settings = json!([
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
    ]);
    let messages: Vec<Value> = params
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().take(count).map(normalized).collect())
        .unwrap_or_default();
    let text = |v: &Value| pi_core::json::to_string(v).unwrap_or_default();
    text(&settings) + &text(&Value::Array(messages))
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
