//! Server-sent events as providers write them.

use bytes::Bytes;
use serde_json::Value;

/// `data: {json}\n\n`, one read.
pub(crate) fn data(value: &Value) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        pi_core::json::to_string(value).unwrap_or_default()
    ))
}

/// `event: {name}\ndata: {json}\n\n`, one read.
pub(crate) fn named(name: &str, value: &Value) -> Bytes {
    Bytes::from(format!(
        "event: {name}\ndata: {}\n\n",
        pi_core::json::to_string(value).unwrap_or_default()
    ))
}

/// `data: [DONE]\n\n`, the end marker of OpenAI's Chat Completions stream.
pub(crate) fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}
