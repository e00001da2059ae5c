//! The model a session the builder opens calls, and the keys it sends: the catalog with the
//! extensions' providers merged in, Pi's choice of a model when none is named, and what a
//! recording scrubs.

use std::sync::Arc;

use pi_core::model::Model;
use pi_effects::clock::SystemClock;
use pi_effects::extension::sidecar::HostModels;
use pi_effects::host::process_environment;
use pi_effects::live::CallOptionsFor;
use pi_effects::registry_files::{load_auth, load_models};
use pi_effects::settings::Settings;
use pi_providers::registry::{ModelRegistry, ProviderRegistration, VirtualModelDefinition};
use pi_providers::retry::RetryClock;
use pi_providers::{catalog, CallOptions};

use super::{ModelChoice, SessionBuilder};
use crate::Error;

impl SessionBuilder {
    /// The agent dir's models.json over the built-ins, with the providers the extensions
    /// register merged in, the Rust extensions' then the `typescript` ones, then the virtual
    /// models the `typescript` ones register (as Pi 1.5.2's runner registers the loaded
    /// extensions' when it binds, before the model is chosen).
    pub(super) fn model_catalog(
        &self,
        typescript: &[ProviderRegistration],
        virtual_models: &[VirtualModelDefinition],
    ) -> ModelCatalog {
        let mut registry = load_models(catalog::builtin(), &self.agent_dir.join("models.json"));
        let mut refused = Vec::new();
        for registration in self.extensions.providers().iter().chain(typescript) {
            if let Err(message) = registry.register_provider(registration) {
                refused.push(format!(
                    "Extension \"{}\" error: {message}",
                    registration.extension_path
                ));
            }
        }
        for definition in virtual_models {
            if let Err(message) = registry.register_virtual_model(definition) {
                refused.push(format!(
                    "Extension \"{}\" error: {message}",
                    definition.extension_path
                ));
            }
        }
        ModelCatalog { registry, refused }
    }

    /// The catalog's models as the TypeScript extensions' `ctx.modelRegistry` reads them, and
    /// the providers with a key configured (by which `pi.setModel` answers).
    pub(super) fn host_models(&self, registry: &ModelRegistry) -> HostModels {
        let (auth, _) = load_auth(&self.agent_dir.join("auth.json"));
        let environment = process_environment();
        let models = registry.all().to_vec();
        let mut auth_providers: Vec<String> = Vec::new();
        for model in &models {
            if !auth_providers.contains(&model.provider)
                && (self.api_key.is_some()
                    || registry.has_configured_auth(model, &auth, &environment))
            {
                auth_providers.push(model.provider.clone());
            }
        }
        HostModels {
            models,
            auth_providers,
            oauth_providers: auth.oauth_providers(),
        }
    }

    /// The model asked for, looked up in the registry when named.
    pub(super) fn resolve_model(
        &self,
        settings: &Settings,
        catalog: &ModelCatalog,
    ) -> Result<Model, Error> {
        let registry = &catalog.registry;
        match &self.model {
            None => self
                .settings_model(settings, registry)
                .or_else(|| self.first_available_model(registry))
                .ok_or(Error::NoModel),
            Some(ModelChoice::Given(model)) => Ok((**model).clone()),
            Some(ModelChoice::Registry { provider, id }) => {
                if !catalog.refused.is_empty() {
                    return Err(Error::Extension(catalog.refused.join("\n")));
                }
                registry
                    .find(provider, id)
                    .cloned()
                    .ok_or_else(|| Error::UnknownModel {
                        provider: provider.clone(),
                        id: id.clone(),
                    })
            }
        }
    }

    /// The model the settings name (`defaultProvider` / `defaultModel`), as Pi 1.5.2's
    /// `createAgentSession` takes it when it is told none: found in the agent dir's
    /// `models.json`, the built-in list or an extension's provider, with a key the session can
    /// send.
    fn settings_model(&self, settings: &Settings, registry: &ModelRegistry) -> Option<Model> {
        let (provider, id) = (settings.default_provider()?, settings.default_model()?);
        let model = registry.find(provider, id)?;
        let (auth, _) = load_auth(&self.agent_dir.join("auth.json"));
        let keyed = self.api_key.is_some()
            || registry.has_configured_auth(model, &auth, &process_environment());
        keyed.then(|| model.clone())
    }

    /// Pi 1.5.2's `findInitialModel` once the settings name no usable model: among the models
    /// with a configured key (the built-in list, the agent dir's `models.json` and the
    /// extensions' providers), the first provider default, else the first.
    fn first_available_model(&self, registry: &ModelRegistry) -> Option<Model> {
        let (auth, _) = load_auth(&self.agent_dir.join("auth.json"));
        let environment = process_environment();
        let available: Vec<Model> = registry.available(&auth, &environment).cloned().collect();
        catalog::preferred_available(&available).cloned()
    }

    /// Every credential the session could send or the agent could come across, with where it
    /// came from, for a recording to scrub wherever it shows up (a prompt, a tool result, an
    /// answer): the set the `pi` binary's recorder is given (`pi_mcp::machine_credentials`:
    /// the agent dir's `models.json`, `auth.json` and `mcp.json`, the environment), the given
    /// key, the keys of the MCP configs given and those the settings keep (which the
    /// extensions read); `registry` holds the extensions' providers with their keys. The
    /// recorder learns only the keys calls send.
    pub(super) fn secrets(
        &self,
        settings: &Settings,
        registry: &ModelRegistry,
    ) -> Vec<(String, String)> {
        let (auth, _) = load_auth(&self.agent_dir.join("auth.json"));
        let given = self
            .api_key
            .iter()
            .map(|key| (key.clone(), "api key".to_owned()));
        // A program's session trusts no project's `mcp.json` (it reads none).
        pi_mcp::machine_credentials(
            registry,
            &auth,
            &process_environment(),
            &pi_mcp::load_mcp_config(&self.agent_dir, &self.cwd, false),
            given
                .chain(self.mcp_secrets.iter().cloned())
                .chain(settings.credentials()),
        )
    }

    /// The key and headers of each call: the given key, or resolved from `registry` as Pi
    /// resolves them.
    pub(super) fn call_options(&self, registry: &ModelRegistry) -> CallOptionsFor {
        if let Some(key) = &self.api_key {
            let key = key.clone();
            return Arc::new(move |_| {
                Ok(CallOptions {
                    api_key: key.clone(),
                    ..CallOptions::default()
                })
            });
        }
        let registry = registry.clone();
        let (auth, _) = load_auth(&self.agent_dir.join("auth.json"));
        let env = process_environment();
        let clock = SystemClock;
        Arc::new(move |request| {
            let now = i64::try_from(clock.now_ms()).unwrap_or(i64::MAX);
            let resolved = registry
                .request_auth(&request.model, &auth, &env, now)
                .map_err(|e| e.to_string())?;
            let api_key = resolved
                .api_key
                .ok_or_else(|| format!("No API key for provider: {}", request.model.provider))?;
            Ok(CallOptions {
                api_key,
                headers: resolved.headers.unwrap_or_default(),
                ..CallOptions::default()
            })
        })
    }
}

/// The models a session being opened may call, and Pi's error text for each provider
/// registration the registry refused (an error only when the session's model is named).
pub(super) struct ModelCatalog {
    pub(super) registry: ModelRegistry,
    refused: Vec<String>,
}
