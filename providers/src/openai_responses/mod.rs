//! The OpenAI Responses API (`openai-responses`): OpenAI's newer endpoint, with reasoning items
//! that round-trip as opaque signatures.

mod decode;
mod encode;
mod grammar;
mod transcript;

pub use decode::{map_stop_reason, Decoder, INCOMPLETE_WITHOUT_REASON, NO_TERMINAL_EVENT};
pub use encode::{
    build_body, convert_messages, refusal, requested_effort, sends_session_id_header,
};

use pi_core::agent::ModelRequest;

use crate::{set_header, with_overrides, CacheRetention, CallOptions, HttpRequest};

/// The HTTP request for `request`: `POST <baseUrl>/responses` with bearer auth; the session id
/// (unless caching is off) goes out as `session_id` and `x-client-request-id`.
pub fn encode(request: &ModelRequest, options: &CallOptions, now: u64) -> HttpRequest {
    let model = &request.model;
    let mut headers = Vec::new();
    set_header(&mut headers, "content-type", "application/json".to_owned());
    set_header(&mut headers, "accept", "application/json".to_owned());
    set_header(
        &mut headers,
        "authorization",
        format!("Bearer {}", options.api_key),
    );
    for (name, value) in model.headers.iter().flatten() {
        set_header(&mut headers, name, value.clone());
    }
    if let (Some(session), false) = (
        &request.session_id,
        options.cache_retention == CacheRetention::None,
    ) {
        if sends_session_id_header(model) {
            set_header(&mut headers, "session_id", session.clone());
        }
        set_header(&mut headers, "x-client-request-id", session.clone());
    }
    for (name, value) in &options.headers {
        set_header(&mut headers, name, value.clone());
    }
    let body = with_overrides(build_body(request, options, now), options);
    HttpRequest {
        method: "POST",
        url: format!("{}/responses", model.base_url.trim_end_matches('/')),
        headers,
        body,
    }
}
