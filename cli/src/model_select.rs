//! Choosing the model of a run (Pi's `model-resolver.js`): `--provider` / `--model` (with
//! `provider/id` and `:thinking`), the session's model, the settings' default, then the first
//! available model.

use pi_core::model::{Model, ThinkingLevel};
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

/// A model chosen from the command line, with the thinking level its pattern named.
#[derive(Clone, Debug, PartialEq)]
pub struct CliModel {
    pub model: Model,
    pub thinking: Option<ThinkingLevel>,
}

/// Resolves `--provider` / `--model`; `Ok(None)` when no model was asked for.
pub fn resolve_cli_model(
    provider: Option<&str>,
    pattern: Option<&str>,
    registry: &ModelRegistry,
) -> Result<Option<CliModel>, String> {
    let Some(pattern) = pattern else {
        return Ok(None);
    };
    let (pattern, thinking) = match pattern.rsplit_once(':') {
        Some((head, level)) if ThinkingLevel::parse(level).is_some() => {
            (head, ThinkingLevel::parse(level))
        }
        _ => (pattern, None),
    };
    let (provider, id) = match (provider, pattern.split_once('/')) {
        (Some(p), _) => (
            Some(p),
            pattern.strip_prefix(&format!("{p}/")).unwrap_or(pattern),
        ),
        (None, Some((p, id))) if registry.all().iter().any(|m| m.provider == p) => (Some(p), id),
        (None, _) => (None, pattern),
    };
    let candidates: Vec<&Model> = registry
        .all()
        .iter()
        .filter(|m| provider.is_none_or(|p| m.provider == p))
        .collect();
    let lower = id.to_lowercase();
    let found = candidates
        .iter()
        .find(|m| m.id.to_lowercase() == lower)
        .or_else(|| {
            candidates
                .iter()
                .find(|m| m.id.to_lowercase().contains(&lower))
        });
    match found {
        Some(model) => Ok(Some(CliModel {
            model: (*model).clone(),
            thinking,
        })),
        None => {
            let display = match provider {
                Some(p) => format!("{p}/{id}"),
                None => pattern.to_owned(),
            };
            Err(format!(
                "Model \"{display}\" not found. Use --list-models to see available models."
            ))
        }
    }
}

/// The model when none was asked for: the settings' default, else the first available.
pub fn default_model(
    registry: &ModelRegistry,
    auth: &AuthStorage,
    env: &Environment,
    default_provider: Option<&str>,
    default_model: Option<&str>,
) -> Option<Model> {
    if let (Some(provider), Some(id)) = (default_provider, default_model) {
        if let Some(model) = registry.find(provider, id) {
            return Some(model.clone());
        }
    }
    registry.available(auth, env).next().cloned()
}
