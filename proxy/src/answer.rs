//! The proxy's own answers (no recording for a request, an unreachable upstream) in the error
//! shape of the API the client speaks, so that its SDK reads the message instead of failing to
//! parse the body; and which headers pass through.

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use crate::body::ProxyBody;

/// Headers that belong to one connection, not to the message (RFC 9110 section 7.6.1), and
/// those the proxy sets itself: `content-length` (a replayed body is sent in its recorded
/// chunks) and `host`.
const CONNECTION_HEADERS: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
];

/// Whether a header travels with the message from one side of the proxy to the other.
pub fn passes_through(name: &str) -> bool {
    !CONNECTION_HEADERS
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// The API a path belongs to, by the shape of its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    /// Anthropic Messages: `{"type":"error","error":{"type","message"}}`.
    Anthropic,
    /// Gemini: `{"error":{"code","message","status"}}`.
    Gemini,
    /// OpenAI (Chat Completions, Responses) and the many servers that copy it:
    /// `{"error":{"message","type","code"}}`.
    OpenAi,
}

fn api_of(path: &str) -> Api {
    let path = path.split('?').next().unwrap_or("");
    if path.ends_with("/messages") || path.ends_with("/messages/count_tokens") {
        Api::Anthropic
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        Api::Gemini
    } else {
        Api::OpenAi
    }
}

/// An error answer to a request for `path`: `status`, a machine-readable `kind`, a `message`
/// for the person reading the client's error.
pub fn error(path: &str, status: StatusCode, kind: &str, message: &str) -> Response<ProxyBody> {
    let body = match api_of(path) {
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Api::Gemini => json!({"error": {
            "code": status.as_u16(),
            "message": message,
            "status": status.canonical_reason().unwrap_or("ERROR").to_ascii_uppercase().replace(' ', "_"),
        }}),
        Api::OpenAi => json!({"error": {"message": message, "type": kind, "code": kind}}),
    };
    let mut response = Response::new(ProxyBody::whole(body.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn errors_take_the_shape_of_the_api() {
        assert_eq!(api_of("/v1/messages"), Api::Anthropic);
        assert_eq!(api_of("/v1/chat/completions"), Api::OpenAi);
        assert_eq!(api_of("/v1/responses"), Api::OpenAi);
        assert_eq!(
            api_of("/v1beta/models/g:streamGenerateContent?alt=sse"),
            Api::Gemini
        );
        let answer = error("/v1/chat/completions", StatusCode::NOT_FOUND, "k", "m");
        assert_eq!(answer.status(), 404);
        assert!(passes_through("Content-Type"));
        assert!(!passes_through("Transfer-Encoding"));
    }
}
