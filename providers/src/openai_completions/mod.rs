//! The OpenAI Chat Completions API (`openai-completions`): OpenAI itself and the many servers
//! that speak it (Ollama, vLLM, llama.cpp, OpenRouter, Groq, ...).

mod chunk;
mod compat;
mod decode;
mod encode;
mod memo;

pub use compat::{compat, Compat, ThinkingFormat};
pub use decode::{api_error_message, map_stop_reason, Decoder};
pub use encode::{build_body, convert_messages};

use pi_core::agent::ModelRequest;

use crate::{with_overrides, CallOptions, HttpRequest};

/// The HTTP request for `request`: `POST <baseUrl>/chat/completions` with bearer auth.
pub fn encode(request: &ModelRequest, options: &CallOptions, now: u64) -> HttpRequest {
    let model = &request.model;
    let compat = compat(model);
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "application/json".to_owned()),
        (
            "authorization".to_owned(),
            format!("Bearer {}", options.api_key),
        ),
    ];
    if let Some(model_headers) = &model.headers {
        headers.extend(
            model_headers
                .iter()
                .map(|(k, v)| (k.to_lowercase(), v.clone())),
        );
    }
    if let (Some(session), true) = (&request.session_id, compat.send_session_affinity_headers) {
        for name in ["session_id", "x-client-request-id", "x-session-affinity"] {
            headers.push((name.to_owned(), session.clone()));
        }
    }
    headers.extend(options.headers.iter().cloned());
    HttpRequest {
        method: "POST",
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers,
        body: with_overrides(build_body(request, &compat, options, now), options),
    }
}
