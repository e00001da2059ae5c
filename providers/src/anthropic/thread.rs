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

use super::encode::{build_body, convert_messages, is_oauth_token};
use crate::{compat_flag, with_overrides, CacheRetention, CallOptions};

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

/// The body as sent in a thread: `params` (the full request body, overrides applied) with
/// `thread: {type: "create"}`, or, when `previous` left a reply this request extends, only the
/// messages after that reply, without `system` and `tools`, and `thread: {type: "continue",
/// previous_message_id}`.
pub(crate) fn threaded_body(
    request: &ModelRequest,
    options: &CallOptions,
    now: u64,
    mut params: Map<String, Value>,
) -> Map<String, Value> {
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
        return params;
    };
    params.shift_remove("system");
    params.shift_remove("tools");
    if let Some(Value::Array(messages)) = params.get_mut("messages") {
        messages.drain(..count);
    }
    params.insert(
        "thread".into(),
        json!({"type": "continue", "previous_message_id": reply_id}),
    );
    params
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
    let mut params = match with_overrides(build_body(&previous.request, options, now), options)
        .to_value()
        .into_owned()
    {
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
