//! The models an imported session used, rebuilt from what its file says of them: a session
//! file names a model (provider, id, API) but not its prices or limits, and the costs its
//! messages hold were priced by whatever catalog Pi had that day. Each model is taken from
//! this build's catalog when it knows it, with the prices that give the recorded costs.

use std::collections::BTreeMap;

use pi_core::message::{AssistantMessage, Cost, Usage};
use pi_core::model::{Model, ModelCost, ThinkingLevel};
use pi_providers::catalog;
use pi_providers::cost::calculate_cost;

/// The models of one session, by (provider, id).
#[derive(Debug, Default)]
pub struct Models {
    models: BTreeMap<(String, String), Model>,
}

impl Models {
    /// The models `assistants` were written by, and those `named` (model changes), priced so
    /// that the first message of each with tokens of a kind costs what it recorded.
    pub fn of(assistants: &[&AssistantMessage], named: &[(String, String)]) -> Models {
        let mut models = Models::default();
        for message in assistants {
            let key = (message.provider.clone(), message.model.clone());
            let model = models
                .models
                .entry(key)
                .or_insert_with(|| known_or_made(&message.provider, &message.model));
            model.api = message.api.clone();
            fit_prices(model, &message.usage);
        }
        for (provider, id) in named {
            models
                .models
                .entry((provider.clone(), id.clone()))
                .or_insert_with(|| known_or_made(provider, id));
        }
        models
    }

    /// The model `provider`/`id`, if the session used it.
    pub fn get(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models.get(&(provider.to_owned(), id.to_owned()))
    }

    /// Every model, in (provider, id) order.
    pub fn all(&self) -> Vec<Model> {
        self.models.values().cloned().collect()
    }
}

/// The catalog's model, or one made from its name: reasoning, every thinking level named (a
/// session file says which level was used, not which the model allowed), no prices yet.
fn known_or_made(provider: &str, id: &str) -> Model {
    if let Some(model) = catalog::builtin().get_model(provider, id) {
        return model.clone();
    }
    let levels = ThinkingLevel::ALL;
    Model {
        id: id.to_owned(),
        name: id.to_owned(),
        api: "openai-completions".into(),
        provider: provider.to_owned(),
        base_url: format!("https://{provider}.invalid/v1"),
        reasoning: true,
        thinking_level_map: Some(
            levels
                .into_iter()
                .map(|level| (level, Some(level.as_str().to_owned())))
                .collect(),
        ),
        input: vec!["text".into(), "image".into()],
        context_window: 0,
        max_tokens: 0,
        ..Model::default()
    }
}

/// Where one kind of token's price is kept, and its part of a cost.
type PriceOf = fn(&mut ModelCost) -> &mut f64;
type PartOf = fn(&Cost) -> f64;

/// Sets each price of `model` that `usage` says something about (tokens of that kind) to one
/// at which this build's `calculate_cost` (Pi 1.5.2's) gives exactly the recorded cost, unless
/// the model's price already does.
fn fit_prices(model: &mut Model, usage: &Usage) {
    let cost = &usage.cost;
    let kinds: [(PriceOf, PartOf, u64, f64); 4] = [
        (|c| &mut c.input, |c| c.input, usage.input, cost.input),
        (|c| &mut c.output, |c| c.output, usage.output, cost.output),
        (
            |c| &mut c.cache_read,
            |c| c.cache_read,
            usage.cache_read,
            cost.cache_read,
        ),
        (
            |c| &mut c.cache_write,
            |c| c.cache_write,
            usage.cache_write,
            cost.cache_write,
        ),
    ];
    for (price_of, part_of, tokens, recorded) in kinds {
        if tokens == 0 || part_of(&calculate_cost(model, usage)) == recorded {
            continue;
        }
        let mut candidate = model.clone();
        let gives = |price: f64| {
            *price_of(&mut candidate.cost) = price;
            part_of(&calculate_cost(&candidate, usage))
        };
        if let Some(price) = price_for(tokens, recorded, gives) {
            *price_of(&mut model.cost) = price;
        }
    }
}

/// A price per million tokens at which `tokens` cost exactly `recorded` as `gives` prices
/// them: the quotient, or one of the few floats beside it (the division and the multiplication
/// each round).
fn price_for(tokens: u64, recorded: f64, mut gives: impl FnMut(f64) -> f64) -> Option<f64> {
    let estimate = recorded / tokens as f64 * 1_000_000.0;
    if !estimate.is_finite() || estimate < 0.0 {
        return None;
    }
    let bits = estimate.to_bits();
    (0..=16u64)
        .flat_map(|d| [bits.wrapping_add(d), bits.wrapping_sub(d)])
        .map(f64::from_bits)
        .find(|p| gives(*p) == recorded)
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_price_gives_the_recorded_cost_exactly() {
        let priced = |per_million: f64, tokens: u64| per_million / 1_000_000.0 * tokens as f64;
        for (tokens, recorded) in [
            (965u64, 0.000_135_1_f64),
            (3, 0.000_045),
            (123_457, 0.370_371),
            (1, 1e-7),
        ] {
            let price = price_for(tokens, recorded, |p| priced(p, tokens)).expect("a price");
            assert_eq!(priced(price, tokens), recorded, "{tokens} {recorded}");
        }
        assert_eq!(price_for(10, -1.0, |p| p), None);
    }

    /// Pi 1.5.2 prices cache writes as `(price × tokens) / 1e6`, not `price / 1e6 × tokens` as
    /// the other kinds: 3 tokens at $6.25 cost 1.875e-5 there, 1.8750000000000002e-5 the other
    /// way. A catalog price that gives the recorded figure is kept, not refitted to one beside it
    /// that the decoder would then price differently.
    #[test]
    fn a_cache_write_priced_as_pi_1_5_2_prices_it_keeps_the_catalogs_price() {
        let mut model = known_or_made("anthropic", "claude-opus-4-8");
        assert_eq!(model.cost.cache_write, 6.25);
        let mut usage = Usage {
            cache_write: 3,
            ..Usage::default()
        };
        usage.cost.cache_write = 1.875e-5;
        fit_prices(&mut model, &usage);
        assert_eq!(model.cost.cache_write, 6.25);
        assert_eq!(calculate_cost(&model, &usage).cache_write, 1.875e-5);
    }

    #[test]
    fn unknown_models_allow_every_level_and_known_ones_come_from_the_catalog() {
        let made = known_or_made("pi-fixture", "pi-fixture-model");
        assert!(made.reasoning);
        assert_eq!(made.api, "openai-completions");
        let known = known_or_made("anthropic", "claude-sonnet-4-5");
        assert_eq!(known.api, "anthropic-messages");
        assert!(known.context_window > 0);
    }
}
