//! The built-in model catalog: every provider and model pi-ai 0.73.1 ships, as data
//! (`models.json`, generated from the original by `scripts/gen-model-catalog.mjs`).

use std::sync::OnceLock;

use pi_core::model::Model;

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
    /// A catalog from JSON of the shape `{provider: {modelId: Model}}`.
    pub fn parse(json: &str) -> Result<Catalog, serde_json::Error> {
        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(json)?;
        let mut providers = Vec::with_capacity(map.len());
        for (provider, models) in map {
            let models: serde_json::Map<String, serde_json::Value> =
                serde_json::from_value(models)?;
            let models = models
                .into_values()
                .map(serde_json::from_value)
                .collect::<Result<Vec<Model>, _>>()?;
            providers.push((provider, models));
        }
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
