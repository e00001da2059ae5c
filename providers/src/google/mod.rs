//! The Google Generative AI API (`google-generative-ai`): Gemini through
//! `models/<id>:streamGenerateContent`.

mod decode;
mod encode;

pub use decode::{http_error_message, Decoder};
pub use encode::{build_body, convert_messages, requires_tool_call_id};

use pi_core::agent::ModelRequest;

use crate::{CallOptions, HttpRequest};

/// The HTTP request for `request`: `POST <baseUrl>/models/<id>:streamGenerateContent?alt=sse`,
/// authenticated by `x-goog-api-key`.
pub fn encode(request: &ModelRequest, options: &CallOptions, now: u64) -> HttpRequest {
    let model = &request.model;
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("x-goog-api-key".to_owned(), options.api_key.clone()),
    ];
    let extra = model
        .headers
        .iter()
        .flatten()
        .chain(options.headers.iter().map(|(name, value)| (name, value)));
    for (name, value) in extra {
        let name = name.to_lowercase();
        match headers.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value.clone(),
            None => headers.push((name, value.clone())),
        }
    }
    let mut body = build_body(request, options, now);
    if let Some(fields) = body.as_object_mut() {
        for (key, value) in &options.body_overrides {
            fields.insert(key.clone(), value.clone());
        }
    }
    HttpRequest {
        method: "POST",
        url: format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            model.base_url.trim_end_matches('/'),
            model.id
        ),
        headers,
        body,
    }
}
