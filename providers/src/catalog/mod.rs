//! The built-in model catalog: every provider and model Pi 1.5.2's pi-ai ships, and the model
//! each provider starts with, as data (`models.json` and `default_models.json`, generated from
//! the original by `scripts/gen-model-catalog.mjs` and `scripts/gen-default-models.mjs`), and
//! its models of other types than chat (`typed_models.json`, from the first script).

use std::marker::PhantomData;
use std::sync::OnceLock;

use pi_core::model::Model;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Providers and their models, in the catalog's order.
#[derive(Debug, Default)]
pub struct Catalog {
    providers: Vec<(String, Vec<Model>)>,
}

const DATA: &str = include_str!("models.json");

const DEFAULTS: &str = include_str!("default_models.json");

/// The built-in catalog, parsed on first use.
pub fn builtin() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::parse(DATA).unwrap_or_default())
}

const TYPED: &str = include_str!("typed_models.json");

/// The built-in models of other types than chat (classifiers, image models) as Pi's objects, in
/// its providers' order: no chat list holds them (they are not [`Model`]s); the extension host
/// answers codemode's `models.*` reads with them. Empty if the data were broken, which the
/// tests forbid.
pub fn builtin_typed() -> &'static [serde_json::Value] {
    static TYPED_MODELS: OnceLock<Vec<serde_json::Value>> = OnceLock::new();
    TYPED_MODELS.get_or_init(|| serde_json::from_str(TYPED).unwrap_or_default())
}

/// Pi's `defaultModelPerProvider`: `(provider, model id)` pairs in its order (empty if the data
/// were broken, which the tests forbid).
pub fn default_models() -> &'static [(String, String)] {
    static DEFAULT_MODELS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    DEFAULT_MODELS.get_or_init(|| serde_json::from_str(DEFAULTS).unwrap_or_default())
}

/// The model `provider` starts with when nothing names one.
pub fn default_model(provider: &str) -> Option<&'static str> {
    default_models()
        .iter()
        .find(|(p, _)| p == provider)
        .map(|(_, id)| id.as_str())
}

/// The preferred model among `available` (Pi's `findInitialModel` once no model is named): the
/// first provider default that is available, in Pi's order, else the first available model.
pub fn preferred_available(available: &[Model]) -> Option<&Model> {
    default_models()
        .iter()
        .find_map(|(provider, id)| {
            available
                .iter()
                .find(|m| m.provider == *provider && m.id == *id)
        })
        .or(available.first())
}

impl Catalog {
    /// A catalog from JSON of the shape `{provider: {modelId: Model}}`, read straight into the
    /// models (no JSON tree first: every run that resolves a model reads all 336 KB of it).
    pub fn parse(json: &str) -> Result<Catalog, serde_json::Error> {
        let Entries(providers): Entries<String, Entries<IgnoredAny, Model>> =
            serde_json::from_str(json)?;
        let providers = providers
            .into_iter()
            .map(|(provider, Entries(models))| {
                (provider, models.into_iter().map(|(_, m)| m).collect())
            })
            .collect();
        Ok(Catalog { providers })
    }

    /// Pi's `getModel(provider, id)`.
    pub fn get_model(&self, provider: &str, id: &str) -> Option<&Model> {
        self.get_models(provider).iter().find(|m| m.id == id)
    }

    /// Pi's `getModels(provider)`: empty for an unknown provider.
    pub fn get_models(&self, provider: &str) -> &[Model] {
        self.providers
            .iter()
            .find(|(p, _)| p == provider)
            .map_or(&[], |(_, models)| models.as_slice())
    }

    /// Pi's `getProviders()`.
    pub fn get_providers(&self) -> Vec<&str> {
        self.providers.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// Every model, provider by provider.
    pub fn all(&self) -> impl Iterator<Item = &Model> {
        self.providers.iter().flat_map(|(_, models)| models)
    }
}

/// A JSON object's entries in the file's order: the catalog is
/// `Entries<String, Entries<IgnoredAny, Model>>` (each model's key repeats its own `id`).
struct Entries<K, V>(Vec<(K, V)>);

impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Deserialize<'de> for Entries<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Deserialize<'de>, V: Deserialize<'de>> Visitor<'de> for InOrder<K, V> {
            type Value = Entries<K, V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(InOrder(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Map, Value};

    use super::*;

    /// Read through a JSON tree, the way the catalog was read before.
    fn through_a_tree(json: &str) -> Vec<(String, Vec<Model>)> {
        let map: Map<String, Value> = serde_json::from_str(json).unwrap();
        map.into_iter()
            .map(|(provider, models)| {
                let models: Map<String, Value> = serde_json::from_value(models).unwrap();
                let models = models
                    .into_values()
                    .map(|m| serde_json::from_value(m).unwrap());
                (provider, models.collect())
            })
            .collect()
    }

    #[test]
    fn the_builtin_catalog_reads_as_its_json_tree_does() {
        let catalog = Catalog::parse(DATA).unwrap();
        assert!(catalog.all().count() > 100);
        assert_eq!(catalog.providers, through_a_tree(DATA));
    }

    #[test]
    fn the_preferred_model_is_the_first_available_provider_default_else_the_first() {
        let model = |provider: &str, id: &str| Model {
            id: id.into(),
            provider: provider.into(),
            ..Model::default()
        };
        let (anthropic, _) = &default_models()[0];
        let default_id = default_model(anthropic).unwrap();
        let all = vec![
            model("mock", "first"),
            model(anthropic, "not-the-default"),
            model(anthropic, default_id),
        ];
        assert_eq!(preferred_available(&all).unwrap().id, default_id);
        assert_eq!(preferred_available(&all[..2]).unwrap().id, "first");
        assert_eq!(preferred_available(&[]), None);
    }

    #[test]
    fn every_default_model_is_in_the_catalog() {
        let catalog = Catalog::parse(DATA).unwrap();
        let defaults: Vec<(String, String)> = serde_json::from_str(DEFAULTS).unwrap();
        assert!(defaults.len() > 40, "{}", defaults.len());
        for (provider, id) in &defaults {
            assert!(catalog.get_model(provider, id).is_some(), "{provider}/{id}");
        }
        assert_eq!(default_model("anthropic"), Some("claude-opus-5-5"));
    }

    #[test]
    fn the_typed_models_read_and_none_is_a_chat_model() {
        let typed: Vec<Value> = serde_json::from_str(TYPED).unwrap();
        assert!(typed.len() > 100, "{}", typed.len());
        assert_eq!(builtin_typed().len(), typed.len());
        for model in builtin_typed() {
            assert!(
                matches!(model["type"].as_str(), Some("classifier" | "image")),
                "{model}"
            );
            assert!(
                model["provider"].is_string() && model["api"].is_string(),
                "{model}"
            );
        }
    }

    #[test]
    fn a_catalog_that_is_not_two_levels_of_objects_is_refused() {
        assert!(Catalog::parse("[]").is_err());
        assert!(Catalog::parse(r#"{"p": []}"#).is_err());
        assert!(Catalog::parse(r#"{"p": {"m": {"id": 1}}}"#).is_err());
    }
}
