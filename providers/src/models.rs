//! How a model names thinking levels, and pi-ai's token cap. Which levels a model supports is
//! pure model data and lives in `pi_core::model`; it is re-exported here for the encoders.

pub use pi_core::model::{clamp_thinking_level, supported_thinking_levels};
use pi_core::model::{Model, ThinkingLevel};

/// The value the model's map names for a level, if it names one.
pub fn named_level(model: &Model, level: ThinkingLevel) -> Option<String> {
    model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(&level).cloned().flatten())
}

/// The provider's value for a level: the model's map when it names one, else the level's name.
pub fn mapped_level(model: &Model, level: ThinkingLevel) -> String {
    named_level(model, level).unwrap_or_else(|| level.as_str().to_owned())
}

/// Pi 1.5.2's `buildBaseOptions` token cap: the request's own, else the model's maximum, in
/// either case clamped to the room the context leaves (`clampMaxTokensToContext`).
pub(crate) fn max_tokens_152(request: &pi_core::agent::ModelRequest) -> u64 {
    let wanted = request.max_tokens.unwrap_or(request.model.max_tokens);
    clamp_max_tokens_to_context(request, wanted)
}

/// Pi 1.5.2's reserve beside the context's estimate: 4,096 tokens or 15 % of the input.
const CONTEXT_SAFETY_TOKENS: i64 = 4096;
const CONTEXT_SAFETY_PERCENT: i64 = 15;
/// Below this much room the ratio's margin gives way to the fixed one.
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32_768;

/// pi-ai's `clampMaxTokensToContext`: at most what the context window leaves after the
/// context's estimate and a safety margin, at least 1.
pub(crate) fn clamp_max_tokens_to_context(
    request: &pi_core::agent::ModelRequest,
    max_tokens: u64,
) -> u64 {
    let model = &request.model;
    if model.context_window == 0 {
        return max_tokens.max(1);
    }
    let input = i64::try_from(context_tokens(request)).unwrap_or(i64::MAX);
    let window = i64::try_from(model.context_window).unwrap_or(i64::MAX);
    let ratio = input
        .saturating_mul(CONTEXT_SAFETY_PERCENT)
        .saturating_add(99)
        / 100;
    let margin = CONTEXT_SAFETY_TOKENS.max(ratio);
    let mut room = window.saturating_sub(input).saturating_sub(margin);
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        let fixed = window
            .saturating_sub(input)
            .saturating_sub(CONTEXT_SAFETY_TOKENS);
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(fixed);
    }
    let room = u64::try_from(room.max(1)).unwrap_or(1);
    max_tokens.min(room)
}

/// Pi's `estimateContextTokens` over the request's context. Pi 1.5.2 counts its system message
/// (the prompt's sections and the declared tools) among the messages; the request holds the
/// prompt and the declarations instead, which are counted in its place until a response has
/// reported usage (which covers them).
fn context_tokens(request: &pi_core::agent::ModelRequest) -> u64 {
    use pi_core::compaction::tokens::{estimate_context_tokens, js_len};
    use pi_core::message::AgentMessage;
    let messages: Vec<AgentMessage> = request
        .messages
        .iter()
        .cloned()
        .map(AgentMessage::from)
        .collect();
    let estimate = estimate_context_tokens(&messages);
    if estimate.last_usage_index.is_some() {
        return estimate.tokens;
    }
    let tools = pi_core::json::to_string(&request.tools).unwrap_or_default();
    let system = (js_len(&request.system_prompt) + js_len(&tools)).div_ceil(4);
    estimate.tokens + system
}
