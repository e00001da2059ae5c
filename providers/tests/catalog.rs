//! The built-in catalog holds Pi 1.5.2's providers and models, each model read and written
//! back unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::model::ThinkingLevel;
use pi_providers::catalog::{builtin, Catalog};
use pi_providers::models::{clamp_thinking_level, supported_thinking_levels};
use serde_json::Value;

#[test]
fn every_model_round_trips() {
    let raw: serde_json::Map<String, Value> =
        serde_json::from_str(include_str!("../src/catalog/models.json")).unwrap();
    let catalog = builtin();
    assert_eq!(catalog.get_providers().len(), raw.len());
    assert!(catalog.get_providers().len() > 25);
    let mut count = 0;
    for (provider, models) in &raw {
        for (id, model) in models.as_object().unwrap() {
            let ours = catalog
                .get_model(provider, id)
                .unwrap_or_else(|| panic!("{provider}/{id} missing"));
            let written: Value =
                serde_json::from_str(&pi_core::json::to_string(ours).unwrap()).unwrap();
            assert_eq!(&written, model, "{provider}/{id}");
            count += 1;
        }
    }
    assert!(count > 900, "{count}");
    assert!(catalog.get_models("no-such-provider").is_empty());
    assert!(Catalog::parse("{\"p\": {\"m\": {\"id\": 1}}}").is_err());
}

#[test]
fn thinking_levels_follow_the_model() {
    let catalog = builtin();
    let reasoning = catalog
        .all()
        .find(|m| m.reasoning && m.thinking_level_map.is_none())
        .unwrap();
    assert_eq!(
        supported_thinking_levels(reasoning),
        [
            ThinkingLevel::Off,
            ThinkingLevel::Minimal,
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High
        ]
    );
    assert_eq!(
        clamp_thinking_level(reasoning, ThinkingLevel::Xhigh),
        ThinkingLevel::High
    );
    let plain = catalog.all().find(|m| !m.reasoning).unwrap();
    assert_eq!(supported_thinking_levels(plain), [ThinkingLevel::Off]);
    assert_eq!(
        clamp_thinking_level(plain, ThinkingLevel::High),
        ThinkingLevel::Off
    );
    if let Some(xhigh) = catalog.all().find(|m| {
        m.thinking_level_map
            .as_ref()
            .is_some_and(|map| map.get(&ThinkingLevel::Xhigh).is_some_and(Option::is_some))
    }) {
        assert!(
            supported_thinking_levels(xhigh).contains(&ThinkingLevel::Xhigh),
            "{}",
            xhigh.id
        );
    }
}
