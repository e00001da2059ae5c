//! The model registry of pi-coding-agent: built-in models, the user's models.json (custom
//! providers such as a local OpenAI-compatible server, overrides of built-ins) and the
//! credentials each request carries (auth.json, `--api-key`, environment variables, models.json
//! keys and headers, `!command` values).
//!
//! A broken models.json never hides the built-in models: the registry keeps them and reports the
//! error, as the original does.

mod auth;
mod config;
mod credentials;
mod env;
mod extension;
mod jsonc;
mod merge;
mod virtual_models;

use std::path::Path;

use pi_core::model::Model;
use serde_json::Value;

pub use auth::{env_api_key, key_variables, AuthStorage, OAuthExpired};
pub use config::{
    parse_models_json, reject_broken_providers, ModelsConfig, ModelsJsonError, ProviderConfig,
};
pub use credentials::{is_credential_name, is_credential_variable, Credential};
pub use env::{Environment, Host};
pub use extension::{ProviderRegistration, Unusable};
pub use jsonc::strip_json_comments;
pub use merge::merge_compat;
pub use virtual_models::{is_virtual, virtual_model, VirtualModelDefinition, VIRTUAL_MODEL_API};

use crate::catalog::Catalog;
use config::HeaderConfig;

/// What a request to a model carries beyond the body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAuth {
    pub api_key: Option<String>,
    /// Extra headers in the order they are sent; `None` when there are none.
    pub headers: Option<Vec<(String, String)>>,
    /// The variables the stored credential carries (auth.json's `env`), handed on with it.
    pub env: Vec<(String, String)>,
}

/// Why a request's credentials could not be put together; `Display` is the original's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("Failed to resolve {what} from shell command: {command}")]
    CommandFailed { what: String, command: String },
    /// A `$NAME` the value interpolates is unset or empty (one or more, each named once).
    #[error(
        "Failed to resolve {what} from environment variable{}: {}",
        if names.len() > 1 { "s" } else { "" },
        names.join(", ")
    )]
    MissingVariables { what: String, names: Vec<String> },
    #[error("No API key found for \"{provider}\"")]
    MissingKey { provider: String },
    #[error(transparent)]
    OAuthExpired(#[from] OAuthExpired),
    /// The model's provider was registered by an extension whose JavaScript makes its requests.
    #[error(transparent)]
    Unusable(#[from] Unusable),
}

/// Where a provider's key and headers were configured (named by the redaction's sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    ModelsJson,
    Extension,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::ModelsJson => "models.json",
            Origin::Extension => "extension",
        }
    }
}

#[derive(Clone, Debug)]
struct ProviderRequestConfig {
    api_key: Option<String>,
    headers: Option<HeaderConfig>,
    auth_header: bool,
    origin: Origin,
}

/// Models by provider and id, and how to authenticate requests to them.
#[derive(Clone, Debug, Default)]
pub struct ModelRegistry {
    models: Vec<Model>,
    request_configs: Vec<(String, ProviderRequestConfig)>,
    model_headers: Vec<((String, String), HeaderConfig)>,
    error: Option<ModelsJsonError>,
    /// The providers extensions registered (`extension.rs`), in registration order.
    extension_layers: Vec<extension::ExtensionLayer>,
}

impl ModelRegistry {
    /// The built-in models only.
    pub fn builtin(catalog: &Catalog) -> Self {
        ModelRegistry::from_config(catalog, &ModelsConfig::default())
    }

    /// Built-ins only, with the reason the models.json at `path` could not be read (`message`)
    /// as the registry's error. Reading the file is the caller's (pi-effects'
    /// `registry_files::load_models`, which gives a missing file no error).
    pub fn unreadable(catalog: &Catalog, path: &Path, message: String) -> Self {
        ModelRegistry {
            error: Some(ModelsJsonError::Invalid {
                path: path.to_owned(),
                message,
            }),
            ..ModelRegistry::builtin(catalog)
        }
    }

    /// Built-ins plus models.json text (read from `path`, which error messages name).
    pub fn from_text(catalog: &Catalog, text: &str, path: &Path) -> Self {
        let builtin_providers = catalog.get_providers();
        match parse_models_json(text, path) {
            Ok(mut config) => {
                let rejected = reject_broken_providers(&mut config, &builtin_providers);
                ModelRegistry {
                    error: rejected,
                    ..ModelRegistry::from_config(catalog, &config)
                }
            }
            Err(error) => ModelRegistry {
                error: Some(error),
                ..ModelRegistry::builtin(catalog)
            },
        }
    }

    /// Built-ins plus an already checked models.json.
    pub fn from_config(catalog: &Catalog, config: &ModelsConfig) -> Self {
        let mut registry = ModelRegistry {
            models: merge::build_models(catalog, config),
            ..ModelRegistry::default()
        };
        for (name, provider) in &config.providers {
            if provider.api_key.is_some()
                || provider.headers.is_some()
                || provider.auth_header.unwrap_or(false)
            {
                registry.request_configs.push((
                    name.clone(),
                    ProviderRequestConfig {
                        api_key: provider.api_key.clone(),
                        headers: provider.headers.clone(),
                        auth_header: provider.auth_header.unwrap_or(false),
                        origin: Origin::ModelsJson,
                    },
                ));
            }
            for (id, over) in provider.model_overrides.iter().flatten() {
                registry.store_model_headers(name, id, over.headers.as_ref());
            }
        }
        for (name, provider) in &config.providers {
            for def in provider.models.iter().flatten() {
                registry.store_model_headers(name, &def.id, def.headers.as_ref());
            }
        }
        registry
    }

    fn store_model_headers(&mut self, provider: &str, id: &str, headers: Option<&HeaderConfig>) {
        self.model_headers
            .retain(|((p, m), _)| !(p == provider && m == id));
        if let Some(headers) = headers.filter(|h| !h.is_empty()) {
            self.model_headers
                .push(((provider.to_owned(), id.to_owned()), headers.clone()));
        }
    }

    /// Why models.json was not used, if it was not.
    pub fn error(&self) -> Option<&ModelsJsonError> {
        self.error.as_ref()
    }

    /// Every model, built-in first.
    pub fn all(&self) -> &[Model] {
        &self.models
    }

    /// The model with this provider and id.
    pub fn find(&self, provider: &str, id: &str) -> Option<&Model> {
        self.models
            .iter()
            .find(|m| m.provider == provider && m.id == id)
    }

    fn request_config(&self, provider: &str) -> Option<&ProviderRequestConfig> {
        self.request_configs
            .iter()
            .find(|(p, _)| p == provider)
            .map(|(_, c)| c)
    }

    /// Whether some credential is configured for the model's provider (no command is run; a
    /// models.json key counts when every variable it names is set, as Pi 1.5.2 checks it).
    pub fn has_configured_auth(
        &self,
        model: &Model,
        auth: &AuthStorage,
        env: &Environment,
    ) -> bool {
        let configured = self
            .request_config(&model.provider)
            .and_then(|c| c.api_key.as_deref());
        if self.only_virtual(&model.provider) {
            return true;
        }
        auth.has_stored_auth(&model.provider)
            .unwrap_or_else(|| match configured {
                Some(configured) => env.is_configured(configured),
                None => auth.has_auth(&model.provider, env),
            })
    }

    /// The models a request could be authenticated for.
    pub fn available<'a>(
        &'a self,
        auth: &'a AuthStorage,
        env: &'a Environment,
    ) -> impl Iterator<Item = &'a Model> {
        self.models
            .iter()
            .filter(move |m| self.has_configured_auth(m, auth, env))
    }

    /// The key and headers a request to `model` carries. Headers layer model, then provider,
    /// then `authHeader`'s `Authorization: Bearer <key>`, then per-model configuration.
    pub fn request_auth(
        &self,
        model: &Model,
        auth: &AuthStorage,
        env: &Environment,
        now_ms: i64,
    ) -> Result<RequestAuth, AuthError> {
        if let Some(why) = self.unusable(model) {
            return Err(why.clone().into());
        }
        let provider = &model.provider;
        let config = self.request_config(provider);
        // Pi 1.5.2's order: the run's key and auth.json, then models.json (a value that does
        // not resolve fails the request), then the provider's key variable.
        let api_key = match auth.stored_api_key(provider, env, now_ms)? {
            Some(key) => key,
            None => match config.and_then(|c| c.api_key.as_deref()) {
                Some(configured) => Some(resolve_or_fail(
                    env,
                    configured,
                    &format!("API key for provider \"{provider}\""),
                )?),
                None => auth::env_key(provider, env),
            },
        };
        let carried: Vec<(String, String)> = match auth.runtime_keys().any(|(p, _)| p == provider) {
            true => Vec::new(),
            false => (auth.credential_env(provider).into_iter())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        };
        let env = &env.overlaid(carried.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let provider_headers = resolve_headers(
            env,
            config.and_then(|c| c.headers.as_ref()),
            &format!("provider \"{provider}\""),
        )?;
        let model_headers = resolve_headers(
            env,
            self.model_headers
                .iter()
                .find(|((p, m), _)| p == provider && *m == model.id)
                .map(|(_, h)| h),
            &format!("model \"{provider}/{}\"", model.id),
        )?;
        let mut headers: Option<Vec<(String, String)>> = None;
        let layers = [
            model.headers.as_ref().map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>()
            }),
            provider_headers,
        ];
        for layer in layers.into_iter().flatten() {
            let merged = headers.get_or_insert_with(Vec::new);
            for (name, value) in layer {
                set_header(merged, name, value);
            }
        }
        if config.is_some_and(|c| c.auth_header) {
            let Some(key) = &api_key else {
                return Err(AuthError::MissingKey {
                    provider: provider.clone(),
                });
            };
            set_header(
                headers.get_or_insert_with(Vec::new),
                "Authorization".to_owned(),
                format!("Bearer {key}"),
            );
        }
        // A model's own models.json headers come last and replace a header of any case (Pi
        // 1.5.2's `mergeHeaders`); the layers before them merge by exact name.
        for (name, value) in model_headers.into_iter().flatten() {
            let merged = headers.get_or_insert_with(Vec::new);
            merged.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            merged.push((name, value));
        }
        Ok(RequestAuth {
            api_key,
            env: carried,
            headers: headers.filter(|h| !h.is_empty()),
        })
    }
}

fn set_header(headers: &mut Vec<(String, String)>, name: String, value: String) {
    match headers.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => headers.push((name, value)),
    }
}

fn resolve_or_fail(env: &Environment, configured: &str, what: &str) -> Result<String, AuthError> {
    if let Some(value) = env.resolve(configured) {
        return Ok(value);
    }
    Err(match configured.strip_prefix('!') {
        Some(command) => AuthError::CommandFailed {
            what: what.to_owned(),
            command: command.to_owned(),
        },
        None => AuthError::MissingVariables {
            what: what.to_owned(),
            names: env
                .missing_variables(configured)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        },
    })
}

fn resolve_headers(
    env: &Environment,
    headers: Option<&HeaderConfig>,
    owner: &str,
) -> Result<Option<Vec<(String, String)>>, AuthError> {
    let Some(headers) = headers else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let configured = value.as_str().unwrap_or_default();
        let resolved = resolve_or_fail(env, configured, &format!("{owner} header \"{name}\""))?;
        out.push((name.clone(), resolved));
    }
    Ok((!out.is_empty()).then_some(out))
}

/// The JSON the original's `getApiKeyAndHeaders` answers with, for comparisons and RPC.
pub fn request_auth_json(result: &Result<RequestAuth, AuthError>) -> Value {
    let mut out = serde_json::Map::new();
    match result {
        Ok(auth) => {
            out.insert("ok".into(), Value::Bool(true));
            if let Some(key) = &auth.api_key {
                out.insert("apiKey".into(), Value::String(key.clone()));
            }
            if let Some(headers) = &auth.headers {
                let map = headers
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                out.insert("headers".into(), Value::Object(map));
            }
            if !auth.env.is_empty() {
                let map = (auth.env.iter())
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                out.insert("env".into(), Value::Object(map));
            }
        }
        Err(e) => {
            out.insert("ok".into(), Value::Bool(false));
            out.insert("error".into(), Value::String(e.to_string()));
        }
    }
    Value::Object(out)
}
