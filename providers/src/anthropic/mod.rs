//! The Anthropic Messages API (`anthropic-messages`): Anthropic itself and servers that speak
//! its protocol.

mod decode;
mod effort;
mod encode;
mod mid_convo;
mod thread;

pub(crate) use thread::{fallback_diagnostic, refusal, resend, Thread, Tracking};

pub(crate) use decode::MESSAGE_EVENTS;
pub use decode::{map_stop_reason, Decoder};
pub use encode::{
    build_body, convert_messages, is_oauth_token, supports_eager_tool_input_streaming,
};

use encode::build_body_with;
pub(crate) use encode::{requested_effort, strict_tools_given_up};

use pi_core::agent::ModelRequest;

use serde_json::Value;

use crate::{compat_flag, set_header, with_overrides, CacheRetention, CallOptions, HttpRequest};

/// The Claude Code version a subscription request names (Pi 1.5.2's `claudeCodeVersion`).
const CLAUDE_CODE_VERSION: &str = "2.1.322";

/// The HTTP request for `request`: `POST <baseUrl>/v1/messages?beta=true` (pi-ai 1.5 calls the
/// SDK's beta endpoint), authenticated by `x-api-key` (or as a Claude Code subscription for
/// OAuth tokens); the body's `betas` travel as the `anthropic-beta` header, as the SDK sends them.
/// Where message threads apply, the body creates or continues the session's thread
/// (see `thread`).
pub fn encode(request: &ModelRequest, options: &CallOptions, now: u64) -> HttpRequest {
    encode_call(request, options, now, strict_tools_given_up(request)).http
}

/// An encoded call and what sending it again needs.
pub(crate) struct Encoded {
    pub(crate) http: HttpRequest,
    /// How the request went in a thread (none when threads do not apply or the session turned
    /// them off), which says how it goes again if Anthropic refuses the thread.
    pub(crate) thread: Option<Thread>,
    /// What the call makes of the session's thread state (with `thread`).
    pub(crate) tracking: Option<Tracking>,
    /// Whether a tool that only prefers strict went strict (Pi's `hasPreferredStrictTools`):
    /// the call goes again without when Anthropic's strict-tool limits refuse it.
    pub(crate) preferred_strict: bool,
}

/// [`encode`], preferred strict tools sent without strict when `without_preferred_strict`.
pub(crate) fn encode_call(
    request: &ModelRequest,
    options: &CallOptions,
    now: u64,
    without_preferred_strict: bool,
) -> Encoded {
    let model = &request.model;
    let oauth = is_oauth_token(&options.api_key);
    let mut headers = Vec::new();
    set_header(&mut headers, "accept", "application/json".to_owned());
    set_header(&mut headers, "content-type", "application/json".to_owned());
    set_header(&mut headers, "anthropic-version", "2023-06-01".to_owned());
    set_header(
        &mut headers,
        "anthropic-dangerous-direct-browser-access",
        "true".to_owned(),
    );
    if let Some((name, session)) = session_affinity(request, options, oauth) {
        set_header(&mut headers, name, session.to_owned());
    }
    if oauth {
        set_header(
            &mut headers,
            "authorization",
            format!("Bearer {}", options.api_key),
        );
        set_header(
            &mut headers,
            "user-agent",
            format!("claude-cli/{CLAUDE_CODE_VERSION}"),
        );
        set_header(&mut headers, "x-app", "cli".to_owned());
    } else {
        set_header(&mut headers, "x-api-key", options.api_key.clone());
    }
    for (name, value) in model.headers.iter().flatten() {
        set_header(&mut headers, name, value.clone());
    }
    for (name, value) in &options.headers {
        set_header(&mut headers, name, value.clone());
    }
    let mut body = with_overrides(
        build_body_with(request, options, now, without_preferred_strict),
        options,
    )
    .to_value()
    .into_owned();
    let preferred_strict = preferred_strict_sent(request, &body);
    let mut thread = None;
    let mut tracking = None;
    if thread::threads_apply(request, options) && !thread::threads_off(request) {
        if let Value::Object(params) = body {
            let (threaded, how, tracked) = thread::threaded_body(request, options, now, params);
            body = Value::Object(threaded);
            thread = Some(how);
            tracking = Some(tracked);
        }
    }
    let betas = body.as_object_mut().and_then(|b| b.shift_remove("betas"));
    if let Some(Value::Array(betas)) = betas.filter(|b| b.as_array().is_some_and(|a| !a.is_empty()))
    {
        let names: Vec<String> = betas
            .iter()
            .map(|b| b.as_str().map_or_else(|| b.to_string(), str::to_owned))
            .collect();
        set_header(&mut headers, "anthropic-beta", names.join(","));
    }
    let http = HttpRequest {
        method: "POST",
        url: format!(
            "{}/v1/messages?beta=true",
            model.base_url.trim_end_matches('/')
        ),
        headers,
        body: body.into(),
    };
    Encoded {
        http,
        thread,
        tracking,
        preferred_strict,
    }
}

/// Whether `body` sends a tool strict that only prefers it.
fn preferred_strict_sent(request: &ModelRequest, body: &Value) -> bool {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return false;
    };
    tools.iter().zip(&request.tools).any(|(sent, tool)| {
        sent.get("strict") == Some(&Value::Bool(true))
            && crate::strict_schema::prefers_strict(tool.constrained_sampling.as_ref())
    })
}

/// Whether an error response says Anthropic's strict-tool limits refused the request (Pi
/// 1.5.2's `isStrictToolLimitErrorMessage` on a 400 `invalid_request_error`).
pub(crate) fn strict_limits_refused(status: u16, body: &[u8], message: &str) -> bool {
    const LIMITS: [&str; 3] = [
        "The compiled grammar is too large",
        "Too many strict tools (",
        "Schemas contains too many parameters with union types (",
    ];
    let kind = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|b| b["error"]["type"].as_str().map(str::to_owned));
    status == 400
        && kind.as_deref() == Some("invalid_request_error")
        && LIMITS.iter().any(|limit| message.contains(limit))
}

/// The diagnostic of an answer whose call went again without preferred strict tools (stamped
/// with the call's time, as the thread fallback's is).
pub(crate) fn strict_fallback_diagnostic(message: &str, timestamp: u64) -> Value {
    serde_json::json!({
        "type": encode::STRICT_TOOLS_FALLBACK,
        "timestamp": timestamp,
        "error": {"message": message},
        "details": {"reason": "strict_tool_limits_exceeded"},
    })
}

/// Pi 1.5.2's session-affinity header, which routes a session's calls to one backend:
/// `compat.sendSessionAffinityHeaders` (by default OpenRouter's) with a session id and caching
/// on, named `x-session-id` in OpenRouter's format and `x-session-affinity` otherwise; never for
/// a subscription token or Copilot, whose clients are built without it.
fn session_affinity<'a>(
    request: &'a ModelRequest,
    options: &CallOptions,
    oauth: bool,
) -> Option<(&'static str, &'a str)> {
    let model = &request.model;
    let openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
    let session = request.session_id.as_deref()?;
    if oauth
        || model.provider == "github-copilot"
        || options.cache_retention == CacheRetention::None
        || !compat_flag(model, "sendSessionAffinityHeaders", openrouter)
    {
        return None;
    }
    let format = model
        .compat
        .as_ref()
        .and_then(|c| c.get("sessionAffinityFormat"))
        .and_then(Value::as_str);
    let openrouter_format = format.map_or(openrouter, |f| f == "openrouter");
    Some((
        if openrouter_format {
            "x-session-id"
        } else {
            "x-session-affinity"
        },
        session,
    ))
}
