//! Virtual models (Pi 1.5.2's `pi.registerVirtualModel`): catalog entries under a provider id
//! that name no endpoint. A session may select one; each request is then routed, by the
//! extension's router, to a physical model. Here they are listed and selected; the routing is
//! the extension host's.

use pi_core::model::{Model, ModelCost, ThinkingLevel};
use serde::Deserialize;

use super::ModelRegistry;

pub use pi_core::agent::model_route::{is_virtual, VIRTUAL_MODEL_API};

/// The data of one `pi.registerVirtualModel` definition, its `route` function left in the
/// extension.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualModelDefinition {
    pub provider: String,
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// The levels offered for selection, by name; `off` only when absent.
    #[serde(default)]
    pub thinking_levels: Option<Vec<String>>,
    #[serde(default)]
    pub context_window: Option<u64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Text and images when absent.
    #[serde(default)]
    pub input: Option<Vec<String>>,
    /// The registering extension (for errors).
    #[serde(default)]
    pub extension_path: String,
}

/// The catalog entry of `definition` (Pi 1.5.2's `createVirtualModel`): free, its limits
/// unknown (0) unless given, reasoning when it offers any level beyond `off`.
pub fn virtual_model(definition: &VirtualModelDefinition) -> Model {
    let off = [ThinkingLevel::Off.as_str().to_owned()];
    let levels = definition.thinking_levels.as_deref().unwrap_or(&off);
    let map = ThinkingLevel::ALL
        .into_iter()
        .map(|level| {
            let offered = levels
                .iter()
                .any(|l| l == level.as_str())
                .then(|| level.as_str().to_owned());
            (level, offered)
        })
        .collect();
    Model {
        id: definition.id.clone(),
        name: definition.name.clone(),
        api: VIRTUAL_MODEL_API.to_owned(),
        provider: definition.provider.clone(),
        base_url: String::new(),
        reasoning: levels
            .iter()
            .any(|level| level != ThinkingLevel::Off.as_str()),
        thinking_level_map: Some(map),
        input: definition
            .input
            .clone()
            .unwrap_or_else(|| vec!["text".to_owned(), "image".to_owned()]),
        cost: ModelCost::default(),
        context_window: definition.context_window.unwrap_or(0),
        max_tokens: definition.max_tokens.unwrap_or(0),
        ..Model::default()
    }
}

impl ModelRegistry {
    /// Registers a virtual model as Pi 1.5.2's model runtime does: after its provider's
    /// physical models (a new provider's at the end), replacing one with the same provider and
    /// id; an invalid one leaves the registry as it was and gives Pi's error text.
    pub fn register_virtual_model(
        &mut self,
        definition: &VirtualModelDefinition,
    ) -> Result<(), String> {
        let (provider, id) = (&definition.provider, &definition.id);
        if provider.trim().is_empty() || id.trim().is_empty() {
            return Err("Virtual model provider and id must not be empty.".to_owned());
        }
        if let Some(existing) = self.find(provider, id) {
            if !is_virtual(existing) {
                return Err(format!(
                    "Virtual model {provider}/{id} conflicts with a physical model."
                ));
            }
        }
        let model = virtual_model(definition);
        if let Some(slot) = self
            .models
            .iter_mut()
            .find(|m| m.provider == *provider && m.id == *id)
        {
            *slot = model;
            return Ok(());
        }
        let at = self
            .models
            .iter()
            .rposition(|m| m.provider == *provider)
            .map_or(self.models.len(), |i| i + 1);
        self.models.insert(at, model);
        Ok(())
    }

    /// Whether only virtual models define `provider`: Pi 1.5.2 counts such a provider as
    /// configured, with no credential.
    pub(super) fn only_virtual(&self, provider: &str) -> bool {
        let mut models = self.models.iter().filter(|m| m.provider == provider);
        models.next().is_some_and(is_virtual) && models.all(is_virtual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    fn definition(provider: &str, id: &str) -> VirtualModelDefinition {
        VirtualModelDefinition {
            provider: provider.into(),
            id: id.into(),
            name: "Router".into(),
            ..VirtualModelDefinition::default()
        }
    }

    #[test]
    fn a_virtual_model_goes_after_its_providers_models_and_a_new_provider_at_the_end() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let anthropic_last = registry
            .all()
            .iter()
            .rposition(|m| m.provider == "anthropic")
            .unwrap();
        registry
            .register_virtual_model(&definition("anthropic", "smart"))
            .unwrap();
        registry
            .register_virtual_model(&definition("router", "auto"))
            .unwrap();
        let all = registry.all();
        assert_eq!(all[anthropic_last + 1].id, "smart");
        assert_eq!(all.last().map(|m| m.id.as_str()), Some("auto"));
        assert!(registry.only_virtual("router"));
        assert!(!registry.only_virtual("anthropic"));
    }

    #[test]
    fn a_physical_id_or_a_blank_one_is_refused_in_pis_words() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let physical = registry.all()[0].clone();
        assert_eq!(
            registry.register_virtual_model(&definition(&physical.provider, &physical.id)),
            Err(format!(
                "Virtual model {}/{} conflicts with a physical model.",
                physical.provider, physical.id
            ))
        );
        assert_eq!(
            registry.register_virtual_model(&definition(" ", "x")),
            Err("Virtual model provider and id must not be empty.".to_owned())
        );
    }

    #[test]
    fn the_entry_offers_its_levels_and_is_reasoning_beyond_off() {
        let model = virtual_model(&VirtualModelDefinition {
            thinking_levels: Some(vec!["off".into(), "high".into()]),
            ..definition("router", "auto")
        });
        assert!(model.reasoning);
        let map = model.thinking_level_map.unwrap();
        assert_eq!(map[&ThinkingLevel::High].as_deref(), Some("high"));
        assert_eq!(map[&ThinkingLevel::Low], None);
        assert_eq!(model.input, ["text", "image"]);
    }
}
