//! The Anthropic Messages API (`anthropic-messages`): Anthropic itself and servers that speak
//! its protocol.

mod decode;
mod encode;

pub use decode::{map_stop_reason, Decoder};
pub use encode::{
    build_body, convert_messages, is_oauth_token, supports_adaptive_thinking,
    supports_eager_tool_input_streaming,
};

use pi_core::agent::ModelRequest;

use crate::{set_header, with_overrides, CallOptions, HttpRequest};

const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
const CLAUDE_CODE_VERSION: &str = "2.1.75";

/// The HTTP request for `request`: `POST <baseUrl>/v1/messages`, authenticated by `x-api-key`
/// (or as a Claude Code subscription for OAuth tokens), with the betas pi-ai asks for.
pub fn encode(request: &ModelRequest, options: &CallOptions, now: u64) -> HttpRequest {
    let model = &request.model;
    let oauth = is_oauth_token(&options.api_key);
    let mut betas = Vec::new();
    if oauth {
        betas.extend(["claude-code-20250219", "oauth-2025-04-20"]);
    }
    if !request.tools.is_empty() && !supports_eager_tool_input_streaming(model) {
        betas.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if !supports_adaptive_thinking(&model.id) {
        betas.push(INTERLEAVED_THINKING_BETA);
    }
    let mut headers = Vec::new();
    set_header(&mut headers, "accept", "application/json".to_owned());
    set_header(&mut headers, "content-type", "application/json".to_owned());
    set_header(&mut headers, "anthropic-version", "2023-06-01".to_owned());
    set_header(
        &mut headers,
        "anthropic-dangerous-direct-browser-access",
        "true".to_owned(),
    );
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
    if !betas.is_empty() {
        set_header(&mut headers, "anthropic-beta", betas.join(","));
    }
    for (name, value) in model.headers.iter().flatten() {
        set_header(&mut headers, name, value.clone());
    }
    for (name, value) in &options.headers {
        set_header(&mut headers, name, value.clone());
    }
    let body = with_overrides(build_body(request, options, now), options);
    HttpRequest {
        method: "POST",
        url: format!("{}/v1/messages", model.base_url.trim_end_matches('/')),
        headers,
        body,
    }
}
