//! Usage costs (pi-ai's `calculateCost`): model prices are dollars per million tokens. Here,
//! with no provider in sight, so that the providers pricing an answer and the session pricing
//! a cache warm agree.

use crate::message::{Cost, Usage};
use crate::model::{CostTier, Model};

/// Pi 1.5.2's `calculateCost`: each component priced, `total` their sum.
pub fn calculate_cost(model: &Model, usage: &Usage) -> Cost {
    let price = |per_million: f64, tokens: u64| per_million / 1_000_000.0 * tokens as f64;
    let base = &model.cost;
    let mut rates = (base.input, base.output, base.cache_read, base.cache_write);
    // Pi 1.5.2's tiers: the one with the highest threshold below the request's input applies.
    let input_tokens = usage
        .input
        .saturating_add(usage.cache_read)
        .saturating_add(usage.cache_write);
    let tier = base
        .tiers
        .iter()
        .flatten()
        .filter(|t| input_tokens > t.input_tokens_above)
        .fold(None, |best: Option<&CostTier>, t| match best {
            Some(b) if b.input_tokens_above >= t.input_tokens_above => Some(b),
            _ => Some(t),
        });
    if let Some(t) = tier {
        rates = (t.input, t.output, t.cache_read, t.cache_write);
    }
    let input = price(rates.0, usage.input);
    let output = price(rates.1, usage.output);
    let cache_read = price(rates.2, usage.cache_read);
    // Pi 1.5.2: writes kept for an hour cost twice the input price, the rest the write price.
    let long_write = usage.cache_write_1h.unwrap_or(0) as f64;
    let short_write = usage.cache_write as f64 - long_write;
    let cache_write = (rates.3 * short_write + rates.0 * 2.0 * long_write) / 1_000_000.0;
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

/// Two usages added up (Pi 1.5's `combineUsage`: two summaries', or the nested calls' of one
/// tool call): every count and cost summed, the
/// optional splits (`cacheWrite1h`, `reasoning`) kept when either side has them, and
/// `cost.totalFromProvider` true only when both are.
pub fn combine_usage(first: &serde_json::Value, second: &serde_json::Value) -> serde_json::Value {
    match (first, second) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            let mut sum = serde_json::Map::new();
            for (key, value) in a {
                let combined = match b.get(key) {
                    Some(other) => combine_usage(value, other),
                    None => value.clone(),
                };
                sum.insert(key.clone(), combined);
            }
            for (key, value) in b {
                if !sum.contains_key(key) {
                    sum.insert(key.clone(), value.clone());
                }
            }
            serde_json::Value::Object(sum)
        }
        (serde_json::Value::Number(a), serde_json::Value::Number(b)) => {
            match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) => serde_json::Value::from(a.saturating_add(b)),
                _ => serde_json::Value::from(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            }
        }
        (serde_json::Value::Bool(a), serde_json::Value::Bool(b)) => {
            serde_json::Value::Bool(*a && *b)
        }
        (serde_json::Value::Bool(_), _) | (_, serde_json::Value::Bool(_)) => {
            serde_json::Value::Bool(false)
        }
        (a, _) => a.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::model::ModelCost;

    use super::*;

    fn tier(above: u64, input: f64) -> CostTier {
        CostTier {
            input_tokens_above: above,
            input,
            ..CostTier::default()
        }
    }

    #[test]
    fn the_tier_with_the_highest_threshold_passed_prices_the_request() {
        let model = Model {
            cost: ModelCost {
                input: 1.0,
                tiers: Some(vec![tier(1_000, 2.0), tier(10_000, 3.0), tier(10_000, 9.0)]),
                ..ModelCost::default()
            },
            ..Model::default()
        };
        // The price per million input tokens that `calculate_cost` applied.
        let rate = |input: u64, cache_read: u64| {
            let usage = Usage {
                input,
                cache_read,
                ..Usage::default()
            };
            let cost = calculate_cost(&model, &usage).input;
            [1.0, 2.0, 3.0, 9.0]
                .into_iter()
                .find(|r| cost == r / 1_000_000.0 * input as f64)
        };
        assert_eq!(rate(1_000, 0), Some(1.0));
        assert_eq!(rate(1_001, 0), Some(2.0));
        // Cache reads count towards the threshold; the first of equal thresholds wins.
        assert_eq!(rate(500, 9_600), Some(3.0));
    }
}
