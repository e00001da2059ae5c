//! How an error response becomes the failed message's `errorMessage`, as Pi 1.5.2 words it.
//!
//! Two layers make the text. The API's SDK makes a message (`"<status> <message>"`, see
//! [`crate::openai_completions::api_error_message`]); then pi-ai 1.5's `formatProviderError`
//! keeps that message only when it already holds the response body, and otherwise writes
//! [`STATUS_BODY_FORMAT`]: the status and the body's error object as compact JSON (at most
//! [`MAX_BODY_CHARS`] characters). The Anthropic SDK puts the whole body into its message, so
//! its texts are the SDK's.

use serde_json::Value;

use crate::openai_completions::api_error_message;

/// pi-ai 1.5's text for an error whose message does not carry the body: `"<status>: <body>"`.
pub const STATUS_BODY_FORMAT: &str = "{status}: {body}";

/// Longer bodies are cut, with a note of how much (pi-ai's `MAX_PROVIDER_ERROR_BODY_CHARS`).
pub const MAX_BODY_CHARS: usize = 4000;

/// The text of an OpenAI-SDK error response (chat completions): the body's `error` object,
/// or the whole body when it has none (the SDK's `makeStatusError`).
pub fn openai_error_text(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Ok(json) = serde_json::from_str::<Value>(&text) else {
        return api_error_message(Some(status), None, Some(&text));
    };
    let error = match json.get("error") {
        Some(error) if !error.is_null() => error,
        _ if json.is_object() => &json,
        _ => &Value::Null,
    };
    let message = api_error_message(Some(status), Some(error), None);
    match body_text(error) {
        Some(body) if !message.contains(&body) => status_body(status, &body),
        _ => message,
    }
}

/// The text of an Anthropic-SDK error response: the SDK's own message, made from the whole
/// body (its top-level `message`, else the body as JSON), which always carries the body.
pub fn anthropic_error_text(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match serde_json::from_str::<Value>(&text) {
        Ok(json) => api_error_message(Some(status), Some(&json), None),
        Err(_) => api_error_message(Some(status), None, Some(&text)),
    }
}

/// The text of an OpenAI-SDK error response of the Responses API: pi-ai 1.5 names the provider,
/// `"<Provider> API error (<status>): <body or message>"` ([`PREFIXED_FORMAT`]), and calls the
/// provider `openai` "OpenAI".
pub fn openai_responses_error_text(provider: &str, status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let json = serde_json::from_str::<Value>(&text).ok();
    let error = match json.as_ref().map(|j| (j, j.get("error"))) {
        Some((_, Some(error))) if !error.is_null() => Some(error),
        Some((json, _)) if json.is_object() => Some(json),
        _ => None,
    };
    let message = match (&json, error) {
        (None, _) => api_error_message(Some(status), None, Some(&text)),
        (Some(_), error) => api_error_message(Some(status), error, None),
    };
    let detail = match error.and_then(body_text) {
        Some(body) if !message.contains(&body) => body,
        _ => message,
    };
    let name = match provider {
        "openai" => "OpenAI",
        other => other,
    };
    PREFIXED_FORMAT
        .replace("{provider}", name)
        .replace("{status}", &status.to_string())
        .replace("{detail}", &detail)
}

/// pi-ai 1.5's text for an error of the Responses API.
pub const PREFIXED_FORMAT: &str = "{provider} API error ({status}): {detail}";

/// [`STATUS_BODY_FORMAT`] filled in.
fn status_body(status: u16, body: &str) -> String {
    STATUS_BODY_FORMAT
        .replace("{status}", &status.to_string())
        .replace("{body}", body)
}

/// pi-ai's `extractBody` of an SDK error: a non-empty object as JSON, trimmed and cut.
fn body_text(error: &Value) -> Option<String> {
    let object = error.as_object().filter(|o| !o.is_empty())?;
    let json = pi_core::json::to_string(&pi_core::validate::js_key_order(&Value::Object(
        object.clone(),
    )))
    .ok()?;
    Some(truncate(json.trim()))
}

/// pi-ai's `truncateErrorText`, counting UTF-16 units as JavaScript does.
fn truncate(text: &str) -> String {
    let units = text.encode_utf16().count();
    if units <= MAX_BODY_CHARS {
        return text.to_owned();
    }
    let mut kept = String::new();
    let mut count = 0;
    for c in text.chars() {
        count += c.len_utf16();
        if count > MAX_BODY_CHARS {
            break;
        }
        kept.push(c);
    }
    format!(
        "{kept}... [truncated {} chars]",
        units - kept.encode_utf16().count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_follows_the_status_unless_the_message_holds_it() {
        let body = br#"{"error":{"message":"mock error 500","type":"server_error","code":null}}"#;
        assert_eq!(
            openai_error_text(500, body),
            r#"500: {"message":"mock error 500","type":"server_error","code":null}"#
        );
        assert_eq!(
            openai_error_text(400, br#"{"message":"top-level only"}"#),
            r#"400: {"message":"top-level only"}"#
        );
        assert_eq!(
            openai_error_text(400, br#"{"error":"a string"}"#),
            r#"400 "a string""#
        );
        assert_eq!(
            openai_error_text(502, br#""plain text body""#),
            "502 status code (no body)"
        );
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"mock error 529"}}"#;
        assert_eq!(
            anthropic_error_text(529, anthropic),
            format!("529 {}", std::str::from_utf8(anthropic).unwrap())
        );
    }

    #[test]
    fn the_responses_api_names_the_provider() {
        let body = br#"{"error":{"message":"mock error 500","type":"server_error"}}"#;
        assert_eq!(
            openai_responses_error_text("openai", 500, body),
            r#"OpenAI API error (500): {"message":"mock error 500","type":"server_error"}"#
        );
        assert_eq!(
            openai_responses_error_text("mock", 502, b"not json"),
            "mock API error (502): 502 not json"
        );
    }

    #[test]
    fn a_long_body_is_cut_with_a_note() {
        let long = "x".repeat(MAX_BODY_CHARS + 10);
        let body = serde_json::json!({"error": {"message": long}}).to_string();
        let text = openai_error_text(500, body.as_bytes());
        assert!(text.starts_with("500: {\"message\":\"xxx"), "{text}");
        assert!(text.ends_with("... [truncated 24 chars]"), "{text}");
    }
}
