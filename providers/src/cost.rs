//! Usage costs: model prices are dollars per million tokens.

use pi_core::message::Usage;

/// Pi 1.5.2's `calculateCost`, kept in the core where the session prices cache warms too.
pub use pi_core::cost::calculate_cost;

/// Input, output and cache tokens added up; absurd counts from a provider saturate.
pub fn total_tokens(usage: &Usage) -> u64 {
    [usage.output, usage.cache_read, usage.cache_write]
        .iter()
        .fold(usage.input, |sum, n| sum.saturating_add(*n))
}
