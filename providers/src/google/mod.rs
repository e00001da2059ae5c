//! The Google Generative AI API (`google-generative-ai`): Gemini through
//! `models/<id>:streamGenerateContent`.

mod decode;
mod encode;
mod status;

pub use decode::{http_error_message, Decoder};
pub use encode::{build_body, convert_messages, requires_tool_call_id};

use pi_core::agent::ModelRequest;

use crate::{set_header, with_overrides, CallOptions, HttpRequest};

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
        set_header(&mut headers, name, value.clone());
    }
    let body = with_overrides(build_body(request, options, now), options);
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
