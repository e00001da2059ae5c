//! Costs as Pi 1.5.2's `calculateCost` computes them (`fixtures/cost.json`, from
//! `scripts/gen-cost-fixtures.mjs`): each component at the model's prices or at the tier the
//! request's input passes, Anthropic's hour-long cache writes (`cacheWrite1h`) at twice the
//! input price and the other writes at the write price, compared as the JSON text of each
//! figure, so a difference in the last bit shows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::Usage;
use pi_core::model::{Model, ModelCost};
use pi_providers::cost::calculate_cost;
use serde_json::Value;

#[test]
fn costs_are_what_pi_1_5_2_computes() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/cost.json")).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    for case in cases {
        let model = Model {
            cost: serde_json::from_value::<ModelCost>(case["cost"].clone()).unwrap(),
            ..Model::default()
        };
        let usage: Usage = serde_json::from_value(case["usage"].clone()).unwrap();
        let cost = calculate_cost(&model, &usage);
        let ours = [
            cost.input,
            cost.output,
            cost.cache_read,
            cost.cache_write,
            cost.total,
        ]
        .map(pi_core::json::format_number);
        let theirs = ["input", "output", "cacheRead", "cacheWrite", "total"]
            .map(|key| pi_core::json::to_string(&case["expected"][key]).unwrap());
        assert_eq!(ours, theirs, "{}", case["name"]);
    }
}
