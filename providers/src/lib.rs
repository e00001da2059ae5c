//! pi-ai in Rust. Each provider API has a pure encoder (a context -> an HTTP request body) and a
//! pure, incremental decoder (response bytes -> the core's `StreamEvent`s). Live traffic and
//! recorded cassettes go through the same decoder, fed the same bytes.

pub mod call;
pub mod catalog;
pub mod cost;
pub mod models;
pub mod openai_completions;
pub mod sse;
pub mod transform;
pub mod transport;

use serde_json::Value;

/// Prompt-cache retention preference (`PI_CACHE_RETENTION=long` selects long by default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheRetention {
    None,
    #[default]
    Short,
    Long,
}

/// Per-call options that are not part of the conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallOptions {
    pub api_key: String,
    pub cache_retention: CacheRetention,
    pub temperature: Option<f64>,
    pub tool_choice: Option<Value>,
    /// Extra headers, last (they override).
    pub headers: Vec<(String, String)>,
    /// Fields set on the request body after it is built (Pi's `onPayload` in data form), e.g.
    /// `stop` or a server's own sampling options.
    pub body_overrides: serde_json::Map<String, Value>,
}

/// An HTTP request, ready for a transport (or a cassette).
#[derive(Clone, Debug, PartialEq)]
pub struct HttpRequest {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
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
