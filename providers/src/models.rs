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

/// pi-ai's `buildBaseOptions` token cap: the request's own, else the model's up to 32,000.
pub(crate) fn base_max_tokens(request: &pi_core::agent::ModelRequest) -> Option<u64> {
    let model = &request.model;
    request
        .max_tokens
        .or_else(|| (model.max_tokens > 0).then(|| model.max_tokens.min(32_000)))
}
