//! The built-in model catalog: every provider and model pi-ai 0.73.1 ships, as data
//! (`models.json`, generated from the original by `scripts/gen-model-catalog.mjs`).

use std::sync::OnceLock;

use pi_core::model::Model;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// Providers and their models, in the catalog's order.
#[derive(Debug, Default)]
pub struct Catalog {
    providers: Vec<(String, Vec<Model>)>,
}

const DATA: &str = include_str!("models.json");

/// The built-in catalog, parsed on first use.
pub fn builtin() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::parse(DATA).unwrap_or_default())
}

impl Catalog {
    /// A catalog from JSON of the shape `{provider: {modelId: Model}}`, read straight into the
    /// models (no JSON tree first: every run that resolves a model reads all 336 KB of it).
    pub fn parse(json: &str) -> Result<Catalog, serde_json::Error> {
        let Providers(providers) = serde_json::from_str(json)?;
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

/// `{provider: {modelId: Model}}` in the file's order.
struct Providers(Vec<(String, Vec<Model>)>);

/// `{modelId: Model}` in the file's order (the ids repeat each model's own `id`).
struct Models(Vec<Model>);

impl<'de> Deserialize<'de> for Providers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Providers;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of providers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Providers, A::Error> {
                let mut providers = Vec::new();
                while let Some((provider, Models(models))) = map.next_entry::<String, Models>()? {
                    providers.push((provider, models));
                }
                Ok(Providers(providers))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

impl<'de> Deserialize<'de> for Models {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Models;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of models")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Models, A::Error> {
                let mut models = Vec::new();
                while let Some((_, model)) = map.next_entry::<serde::de::IgnoredAny, Model>()? {
                    models.push(model);
                }
                Ok(Models(models))
            }
        }
        deserializer.deserialize_map(Entries)
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
    fn a_catalog_that_is_not_two_levels_of_objects_is_refused() {
        assert!(Catalog::parse("[]").is_err());
        assert!(Catalog::parse(r#"{"p": []}"#).is_err());
        assert!(Catalog::parse(r#"{"p": {"m": {"id": 1}}}"#).is_err());
    }
}
