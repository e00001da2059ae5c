//! Thinking levels a model supports, and clamping a requested level to them.

use pi_core::model::{Model, ThinkingLevel};

/// `off` only for non-reasoning models; otherwise every level the model's map does not mark
/// unsupported (`null`), with `xhigh` only when the map names it.
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = model.thinking_level_map.as_ref().and_then(|m| m.get(level));
            match mapped {
                Some(None) => false,
                _ if *level == ThinkingLevel::Xhigh => mapped.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// The requested level if supported, else the nearest supported level above it, else below it.
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_thinking_levels(model);
    if available.contains(&level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let index = all.iter().position(|l| *l == level).unwrap_or(0);
    all[index..]
        .iter()
        .chain(all[..index].iter().rev())
        .find(|l| available.contains(l))
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}

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
