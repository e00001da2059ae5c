//! The model registry as extensions change it while the run goes on (Pi 1.5.2's
//! `pi.registerProvider`/`pi.unregisterProvider` after loading): a copy of the run's registry
//! taken once the extensions have loaded, which each change goes to before its decision is
//! recorded, and which each model call's key and headers are then resolved from. A change's
//! credentials reach the recording's redaction before anything that could repeat them is
//! written; what the session and the front ends read of a change is the models the action
//! carries (`ProviderChange`), so a replay reads the same with no registry.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pi_core::agent_session::{LoadedProvider, ProviderChange};
use pi_core::model::Model;
use pi_effects::extension::runtime_providers::{ProviderModels, RuntimeProviders};
use pi_providers::registry::{
    AuthStorage, Environment, ModelRegistry, ProviderRegistration, VirtualModelDefinition,
};
use serde_json::Value;

use super::Runtime;

/// What learns a credential (its value, and where it came from).
pub type CredentialSink = Box<dyn Fn(&str, &str) + Send + Sync>;

/// The registry extensions change after loading (none changed it yet: `None`, the run's own
/// stands), and who learns the credentials a change brings.
#[derive(Default)]
pub struct LiveProviders {
    state: Mutex<Option<(ModelRegistry, AuthStorage, Environment)>>,
    credentials: Mutex<Option<CredentialSink>>,
}

impl std::fmt::Debug for LiveProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveProviders").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveProviders {
    /// Starts from the run's registry as the extensions' loading left it.
    pub fn start_from(&self, registry: ModelRegistry, auth: AuthStorage, env: Environment) {
        *lock(&self.state) = Some((registry, auth, env));
    }

    /// The registry as it is now, when extensions changed it since they loaded.
    pub fn current(&self) -> Option<ModelRegistry> {
        lock(&self.state)
            .as_ref()
            .map(|(registry, ..)| registry.clone())
    }

    /// Tells `sink` the credentials of every provider change from now on.
    pub fn on_credentials(&self, sink: CredentialSink) {
        *lock(&self.credentials) = Some(sink);
    }

    fn models(
        registry: &ModelRegistry,
        auth: &AuthStorage,
        env: &Environment,
        name: &str,
    ) -> ProviderModels {
        let models: Vec<Model> = registry
            .all()
            .iter()
            .filter(|m| m.provider == name)
            .cloned()
            .collect();
        let available = models
            .first()
            .is_some_and(|m| registry.has_configured_auth(m, auth, env));
        (models, available)
    }
}

impl LiveProviders {
    /// Registers `registration` in the registry as it is now (see
    /// [`RuntimeProviders::register`]): the provider's models after it, or the registry's
    /// refusal.
    pub fn register_provider(
        &self,
        registration: &ProviderRegistration,
    ) -> Result<ProviderModels, String> {
        let mut state = lock(&self.state);
        let Some((registry, auth, env)) = state.as_mut() else {
            return Err(format!(
                "Provider {}: no model registry is running to register it in",
                registration.name
            ));
        };
        registry.register_provider(registration)?;
        // Before the decision (and any request using the key) is recorded.
        if let Some(sink) = lock(&self.credentials).as_ref() {
            for (value, source) in pi_effects::secrets::credentials(registry, auth, env, []) {
                sink(&value, &source);
            }
        }
        Ok(Self::models(registry, auth, env, &registration.name))
    }
}

impl RuntimeProviders for LiveProviders {
    fn register(&self, registration: &Value) -> Result<ProviderModels, String> {
        let registration: ProviderRegistration = serde_json::from_value(registration.clone())
            .map_err(|e| {
                format!(
                    "the extension host sent a provider registration this harness cannot read: {e}"
                )
            })?;
        self.register_provider(&registration)
    }

    fn unregister(&self, name: &str) -> ProviderModels {
        let mut state = lock(&self.state);
        let Some((registry, auth, env)) = state.as_mut() else {
            return (Vec::new(), false);
        };
        registry.unregister_provider(name);
        Self::models(registry, auth, env, name)
    }

    fn register_virtual(&self, definition: &Value) -> Result<ProviderModels, String> {
        let definition: VirtualModelDefinition = serde_json::from_value(definition.clone())
            .map_err(|e| {
                format!("the extension host sent a virtual model this harness cannot read: {e}")
            })?;
        let mut state = lock(&self.state);
        let Some((registry, auth, env)) = state.as_mut() else {
            return Err(format!(
                "Virtual model {}/{}: no model registry is running to register it in",
                definition.provider, definition.id
            ));
        };
        registry.register_virtual_model(&definition)?;
        Ok(Self::models(registry, auth, env, &definition.provider))
    }
}

impl Runtime {
    /// The models with credentials once `changes` (a session's provider changes) are applied.
    pub fn available_models_after(&self, changes: &[ProviderChange]) -> Vec<Model> {
        let mut models = self.available_models();
        for change in changes {
            change.apply(&mut models);
        }
        models
    }

    /// Whether a key can be found for `model` once `changes` are applied: the last change of
    /// its provider says, else the run's registry.
    pub fn has_auth_after(&self, model: &Model, changes: &[ProviderChange]) -> bool {
        match changes.iter().rev().find(|c| c.name == model.provider) {
            Some(change) => change.available,
            None => self.has_auth(model),
        }
    }

    /// Takes the providers a load for a replacing session registered while loading, in a run
    /// that started with no extension (Pi builds that session's registry with them; a run
    /// whose start loaded them has them in its own): each registered in the registry
    /// extensions change (its keys told to a recording first), the extensions' catalog
    /// following. The providers as the session takes them come back, and Pi's diagnostic for
    /// each the registry refused.
    pub(crate) fn adopt_loaded_providers(
        &self,
        registrations: &[ProviderRegistration],
    ) -> (Vec<LoadedProvider>, Vec<String>) {
        let (mut adopted, mut refused) = (Vec::new(), Vec::new());
        if self.extension_host.is_some() || registrations.is_empty() {
            return (adopted, refused);
        }
        let live = self.live_providers();
        for registration in registrations {
            match live.register_provider(registration) {
                Ok((models, available)) => adopted.push(LoadedProvider {
                    name: registration.name.clone(),
                    models,
                    available,
                }),
                Err(message) => refused.push(format!(
                    "Extension \"{}\" error: {message}",
                    registration.extension_path
                )),
            }
        }
        if let (Some(host), Some(registry)) = (self.host(), live.current()) {
            if let Err(error) = host.set_catalog(&self.host_models_of(&registry)) {
                refused.push(error.to_string());
            }
        }
        (adopted, refused)
    }

    /// The registry extensions change while the run goes on, shared with each call's options.
    pub fn live_providers(&self) -> Arc<LiveProviders> {
        Arc::clone(&self.live_providers)
    }
}
