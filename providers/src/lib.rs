//! pi-ai in Rust. Each provider API has a pure encoder (a context -> an HTTP request body) and a
//! pure, incremental decoder (response bytes -> the core's `StreamEvent`s). Live traffic and
//! recorded cassettes go through the same decoder, fed the same bytes.

pub mod anthropic;
pub mod call;
pub mod catalog;
pub mod cost;
pub mod error_text;
pub mod google;
mod hash;
mod js_value;
pub mod models;
mod object;
pub mod openai_completions;
pub mod openai_responses;
pub mod registry;
mod report;
mod request_body;
pub mod retry;
pub mod sse;
mod strict_schema;
pub mod synth;
pub mod transform;
pub mod transport;

use serde_json::Value;

pub use request_body::{RequestBody, SharedArray};

/// Prompt-cache retention preference (`PI_CACHE_RETENTION=long` selects long by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    None,
    #[default]
    Short,
    Long,
}

/// Per-call options that are not part of the conversation. Serializable: a recording keeps the
/// options of each call (its key replaced by a placeholder), so a replay builds the same request.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CallOptions {
    pub api_key: String,
    pub cache_retention: CacheRetention,
    pub temperature: Option<f64>,
    pub tool_choice: Option<Value>,
    /// Extra headers, last (they override).
    pub headers: Vec<(String, String)>,
    /// Thinking budgets (tokens) replacing pi-ai's defaults for some levels (the settings'
    /// `thinkingBudgets`); used by APIs with budget-based thinking.
    pub thinking_budgets: std::collections::BTreeMap<pi_core::model::ThinkingLevel, u64>,
    /// Fields set on the request body after it is built (Pi's `onPayload` in data form), e.g.
    /// `stop` or a server's own sampling options.
    pub body_overrides: serde_json::Map<String, Value>,
    /// How many times a failed request is sent again before its failure is reported, as the
    /// original's OpenAI and Anthropic SDKs do (connection errors, timeouts, 408, 409, 429, 5xx;
    /// see [`retry`]). Only the `openai-completions`, `openai-responses` and
    /// `anthropic-messages` APIs retry (the Google SDK does not). 0 (the default) sends every
    /// request once, leaving retries to the session, where they are visible; Pi's setting
    /// `retry.provider.maxRetries` sets it.
    pub max_retries: u32,
    /// How long one attempt may wait for the response headers (the SDKs' `timeout`, Pi's
    /// `retry.provider.timeoutMs`); `None` leaves the transport's own limit. Same APIs as
    /// `max_retries`.
    pub timeout_ms: Option<u64>,
    /// Why the original's SDK would refuse these options (a `timeout` that is not a whole
    /// number of milliseconds): the call then fails with this text without being sent, as
    /// there.
    pub refused: Option<String>,
}

/// Sets a header (lower-cased name), replacing an earlier value of the same name in place.
pub(crate) fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    let name = name.to_lowercase();
    match headers.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => headers.push((name, value)),
    }
}

/// The request body with the caller's `body_overrides` applied last.
pub(crate) fn with_overrides(body: impl Into<RequestBody>, options: &CallOptions) -> RequestBody {
    let mut body = body.into();
    body.override_fields(&options.body_overrides);
    body
}

/// A boolean compat flag of the model, `default` when unset.
pub(crate) fn compat_flag(model: &pi_core::model::Model, name: &str, default: bool) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.get(name))
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// An HTTP request, ready for a transport (or a cassette).
#[derive(Clone, Debug, PartialEq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: RequestBody,
}

/// How a response body ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ended (with or without the provider's end marker; Pi treats both as complete).
    Complete,
    /// The call was cancelled.
    Aborted,
    /// The connection failed; the text becomes the error message.
    Failed(String),
}

/// An API's incremental stream decoder: live responses and recordings are fed through the same
/// three calls, so one driver serves every API.
pub trait StreamDecoder: std::fmt::Debug + Send {
    /// The HTTP response arrived with a success status: the stream starts.
    fn start(&mut self) -> Vec<pi_core::agent::StreamEvent>;
    /// Bytes of the response body, as they arrive.
    fn feed(&mut self, bytes: &[u8]) -> Vec<pi_core::agent::StreamEvent>;
    /// The body ended, the call was aborted, or the connection failed.
    fn finish(&mut self, end: StreamEnd) -> Vec<pi_core::agent::StreamEvent>;
    /// The text of an error response, worded as pi-ai words it for the API (chat completions
    /// unless the API says otherwise).
    fn http_error_message(&self, status: u16, _content_type: Option<&str>, body: &[u8]) -> String {
        sdk_error_message(status, body)
    }
}

macro_rules! stream_decoder {
    ($($decoder:ty),*) => {$(
        impl StreamDecoder for $decoder {
            fn start(&mut self) -> Vec<pi_core::agent::StreamEvent> {
                <$decoder>::start(self)
            }
            fn feed(&mut self, bytes: &[u8]) -> Vec<pi_core::agent::StreamEvent> {
                <$decoder>::feed(self, bytes)
            }
            fn finish(&mut self, end: StreamEnd) -> Vec<pi_core::agent::StreamEvent> {
                <$decoder>::finish(self, end)
            }
        }
    )*};
}

stream_decoder!(openai_completions::Decoder);

impl StreamDecoder for anthropic::Decoder {
    fn start(&mut self) -> Vec<pi_core::agent::StreamEvent> {
        anthropic::Decoder::start(self)
    }
    fn feed(&mut self, bytes: &[u8]) -> Vec<pi_core::agent::StreamEvent> {
        anthropic::Decoder::feed(self, bytes)
    }
    fn finish(&mut self, end: StreamEnd) -> Vec<pi_core::agent::StreamEvent> {
        anthropic::Decoder::finish(self, end)
    }
    fn http_error_message(&self, status: u16, _content_type: Option<&str>, body: &[u8]) -> String {
        error_text::anthropic_error_text(status, body)
    }
}

impl StreamDecoder for openai_responses::Decoder {
    fn start(&mut self) -> Vec<pi_core::agent::StreamEvent> {
        openai_responses::Decoder::start(self)
    }
    fn feed(&mut self, bytes: &[u8]) -> Vec<pi_core::agent::StreamEvent> {
        openai_responses::Decoder::feed(self, bytes)
    }
    fn finish(&mut self, end: StreamEnd) -> Vec<pi_core::agent::StreamEvent> {
        openai_responses::Decoder::finish(self, end)
    }
    fn http_error_message(&self, status: u16, _content_type: Option<&str>, body: &[u8]) -> String {
        error_text::openai_responses_error_text(self.provider(), status, body)
    }
}

impl StreamDecoder for google::Decoder {
    fn start(&mut self) -> Vec<pi_core::agent::StreamEvent> {
        google::Decoder::start(self)
    }
    fn feed(&mut self, bytes: &[u8]) -> Vec<pi_core::agent::StreamEvent> {
        google::Decoder::feed(self, bytes)
    }
    fn finish(&mut self, end: StreamEnd) -> Vec<pi_core::agent::StreamEvent> {
        google::Decoder::finish(self, end)
    }
    fn http_error_message(&self, status: u16, content_type: Option<&str>, body: &[u8]) -> String {
        google::http_error_message(status, content_type, body)
    }
}

/// How pi-ai words an error response of the chat completions API ([`error_text`]).
pub fn sdk_error_message(status: u16, body: &[u8]) -> String {
    error_text::openai_error_text(status, body)
}

/// An HTTP error response of the OpenAI or Anthropic API as a failed stream (no `start`: pi-ai
/// starts a stream only once a response arrived successfully).
pub fn http_error(
    model: &pi_core::model::Model,
    timestamp: u64,
    status: u16,
    body: &[u8],
) -> Vec<pi_core::agent::StreamEvent> {
    failed_before_start(model, timestamp, sdk_error_message(status, body))
}

/// A call that failed before any response: one error event carrying `message`.
pub fn failed_before_start(
    model: &pi_core::model::Model,
    timestamp: u64,
    message: String,
) -> Vec<pi_core::agent::StreamEvent> {
    let reason = pi_core::message::StopReason::Error;
    vec![failure(response_head(model, timestamp), reason, message)]
}

/// The message a response of `model` to a request made at `timestamp` starts as: who answers
/// and when, no content yet.
pub(crate) fn response_head(
    model: &pi_core::model::Model,
    timestamp: u64,
) -> pi_core::message::AssistantMessage {
    pi_core::message::AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp,
        ..Default::default()
    }
}

/// A provider's finish reason as Pi 1.5 keeps it in `rawStopReason`: the text, or the JSON of
/// anything else.
pub(crate) fn raw_reason(reason: &serde_json::Value) -> String {
    reason
        .as_str()
        .map_or_else(|| reason.to_string(), str::to_owned)
}

/// The error event ending a stream: `message` as it stands, with the stop reason and the text.
pub(crate) fn failure(
    mut message: pi_core::message::AssistantMessage,
    reason: pi_core::message::StopReason,
    text: String,
) -> pi_core::agent::StreamEvent {
    message.stop_reason = reason;
    message.error_message = Some(text);
    pi_core::agent::StreamEvent::Error {
        reason,
        error: message,
    }
}
