//! Usage costs: model prices are dollars per million tokens.

use pi_core::message::{Cost, Usage};
use pi_core::model::Model;

/// Pi's `calculateCost`: each component priced, `total` their sum.
pub fn calculate_cost(model: &Model, usage: &Usage) -> Cost {
    let price = |per_million: f64, tokens: u64| per_million / 1_000_000.0 * tokens as f64;
    let input = price(model.cost.input, usage.input);
    let output = price(model.cost.output, usage.output);
    let cache_read = price(model.cost.cache_read, usage.cache_read);
    let cache_write = price(model.cost.cache_write, usage.cache_write);
    Cost {
        input,
        output,
        cache_read,
        cache_write,
        total: input + output + cache_read + cache_write,
        total_from_provider: None,
        extra: Default::default(),
    }
}

/// Input, output and cache tokens added up; absurd counts from a provider saturate.
pub fn total_tokens(usage: &Usage) -> u64 {
    [usage.output, usage.cache_read, usage.cache_write]
        .iter()
        .fold(usage.input, |sum, n| sum.saturating_add(*n))
}
