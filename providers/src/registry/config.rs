//! models.json: reading, schema check (the original's TypeBox schema, as data) and the extra
//! rules the original enforces, with its error texts.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pi_core::model::{ModelCost, ThinkingLevel};
use pi_core::validate::{errors, js_key_order};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::jsonc::strip_json_comments;

const SCHEMA: &str = include_str!("models-config.schema.json");

/// Header name -> configured value (a literal, a `$NAME`/`${NAME}` template or `!command`), in
/// file order.
pub type HeaderConfig = Map<String, Value>;

/// One provider entry of models.json.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub api: Option<String>,
    pub headers: Option<HeaderConfig>,
    pub compat: Option<Value>,
    pub auth_header: Option<bool>,
    pub models: Option<Vec<ModelDefinition>>,
    /// Changes to built-in models, by model id.
    pub model_overrides: Option<BTreeMap<String, ModelOverride>>,
}

/// A custom model; unset fields get defaults suited to local servers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelDefinition {
    pub id: String,
    pub name: Option<String>,
    pub api: Option<String>,
    pub base_url: Option<String>,
    pub reasoning: Option<bool>,
    pub thinking_level_map: Option<BTreeMap<ThinkingLevel, Option<String>>>,
    pub input: Option<Vec<String>>,
    pub cost: Option<ModelCost>,
    pub context_window: Option<f64>,
    pub max_tokens: Option<f64>,
    pub headers: Option<HeaderConfig>,
    pub compat: Option<Value>,
    /// Pi 1.5.2: the prompt cache's lifetimes in seconds (`{short?, long?}`), which cache
    /// warming times its warms by.
    pub prompt_cache: Option<Map<String, Value>>,
}

/// Changes to one built-in model; cost fields may be given one at a time.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelOverride {
    pub name: Option<String>,
    pub reasoning: Option<bool>,
    pub thinking_level_map: Option<BTreeMap<ThinkingLevel, Option<String>>>,
    pub input: Option<Vec<String>>,
    pub cost: Option<PartialCost>,
    pub context_window: Option<f64>,
    pub max_tokens: Option<f64>,
    pub headers: Option<HeaderConfig>,
    pub compat: Option<Value>,
    /// Merged key by key into the built-in model's `promptCache`.
    pub prompt_cache: Option<Map<String, Value>>,
}

/// A cost override: unset fields keep the built-in price.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialCost {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

/// A checked models.json: providers in the order JavaScript enumerates them.
#[derive(Clone, Debug, Default)]
pub struct ModelsConfig {
    pub providers: Vec<(String, ProviderConfig)>,
}

/// Why models.json was not used; `Display` is the original's message, file path included.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelsJsonError {
    /// Not JSON (after removing comments and trailing commas).
    #[error("Failed to parse models.json: {message}\n\nFile: {}", path.display())]
    Parse { path: PathBuf, message: String },
    /// JSON, but not the shape the schema allows; one line per violation.
    #[error("Invalid models.json schema:\n{}\n\nFile: {}", violations.join("\n"), path.display())]
    Schema {
        path: PathBuf,
        violations: Vec<String>,
    },
    /// Unreadable.
    #[error("Failed to load models.json: {message}\n\nFile: {}", path.display())]
    Invalid { path: PathBuf, message: String },
    /// Well-formed, but some providers' entries break a rule the schema cannot express: those
    /// providers are left out and the rest used (Pi 1.5.2's composition errors, one a provider,
    /// without the file).
    #[error("{}", provider_errors_text(errors))]
    Providers { errors: Vec<(String, String)> },
}

fn provider_errors_text(errors: &[(String, String)]) -> String {
    let each: Vec<String> = errors
        .iter()
        .map(|(provider, message)| format!("Provider \"{provider}\": {message}"))
        .collect();
    each.join("\n\n")
}

fn schema() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(SCHEMA).unwrap_or(Value::Bool(true)))
}

/// Parses models.json text read from `path` and checks it against the schema (the rules
/// beyond it are [`reject_broken_providers`]'s).
pub fn parse_models_json(text: &str, path: &Path) -> Result<ModelsConfig, ModelsJsonError> {
    let value: Value =
        serde_json::from_str(&strip_json_comments(text)).map_err(|e| ModelsJsonError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
    let value = js_key_order(&value);
    let violations: Vec<String> = errors(schema(), &value)
        .iter()
        .take(pi_core::validate::MAX_ERRORS)
        .map(|e| format!("  - {}: {}", e.display_path(), e.message))
        .collect();
    if !violations.is_empty() {
        return Err(ModelsJsonError::Schema {
            path: path.to_owned(),
            violations,
        });
    }
    let providers = match value.get("providers") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(name, config)| {
                let config = ProviderConfig::deserialize(config).map_err(|e| e.to_string());
                config.map(|c| (name.clone(), c))
            })
            .collect::<Result<Vec<_>, String>>(),
        _ => Ok(Vec::new()),
    };
    let config = ModelsConfig {
        providers: providers.map_err(|message| ModelsJsonError::Invalid {
            path: path.to_owned(),
            message,
        })?,
    };
    check_limits(&config).map_err(|violations| ModelsJsonError::Schema {
        path: path.to_owned(),
        violations,
    })?;
    Ok(config)
}

/// Leaves out the providers whose entries break a rule beyond the schema, as Pi 1.5.2 leaves
/// each out of its composition; the error naming them, if any did.
pub fn reject_broken_providers(
    config: &mut ModelsConfig,
    builtin_providers: &[&str],
) -> Option<ModelsJsonError> {
    let mut errors = Vec::new();
    config.providers.retain(|(name, provider)| {
        match broken_rule(name, provider, builtin_providers) {
            Some(message) => {
                errors.push((name.clone(), message));
                false
            }
            None => true,
        }
    });
    (!errors.is_empty()).then_some(ModelsJsonError::Providers { errors })
}

/// Pi 1.5.2's schema bounds on token counts (`exclusiveMinimum: 0`), reported as its schema
/// violations are.
fn check_limits(config: &ModelsConfig) -> Result<(), Vec<String>> {
    let mut violations = Vec::new();
    let mut check = |path: String, field: &str, value: Option<f64>| {
        if value.is_some_and(|n| n <= 0.0) {
            violations.push(format!("  - {path}.{field}: must be > 0"));
        }
    };
    for (name, provider) in &config.providers {
        for (i, model) in provider.models.iter().flatten().enumerate() {
            let path = format!("providers.{name}.models.{i}");
            check(path.clone(), "contextWindow", model.context_window);
            check(path, "maxTokens", model.max_tokens);
        }
        for (id, over) in provider.model_overrides.iter().flatten() {
            let path = format!("providers.{name}.modelOverrides.{id}");
            check(path.clone(), "contextWindow", over.context_window);
            check(path, "maxTokens", over.max_tokens);
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// The first rule beyond the schema that a provider entry breaks (what it must say for its
/// models to be usable), in Pi 1.5.2's words.
fn broken_rule(
    name: &str,
    provider: &ProviderConfig,
    builtin_providers: &[&str],
) -> Option<String> {
    let is_builtin = builtin_providers.contains(&name);
    let models = provider.models.as_deref().unwrap_or_default();
    let has_overrides = provider
        .model_overrides
        .as_ref()
        .is_some_and(|o| !o.is_empty());
    if models.is_empty() {
        if provider.base_url.is_none()
            && provider.headers.is_none()
            && provider.compat.is_none()
            && !has_overrides
            && provider.api_key.is_none()
            && provider.auth_header.is_none()
        {
            return Some(format!(
                "Provider {name}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
            ));
        }
    } else if !is_builtin && provider.base_url.is_none() {
        return Some(format!(
            "Provider {name}: \"baseUrl\" is required when defining custom models."
        ));
    }
    models
        .iter()
        .find(|model| provider.api.is_none() && model.api.is_none() && !is_builtin)
        .map(|model| {
            format!(
                "Provider {name}, model {}: no \"api\" specified. Set at provider or model level.",
                model.id
            )
        })
}
