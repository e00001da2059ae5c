//! The providers extensions register or unregister once they have loaded (Pi 1.5.2 applies
//! `pi.registerProvider`/`pi.unregisterProvider`, and `pi.registerVirtualModel`, to its model
//! runtime at once): the front end's
//! model registry takes each change before the decision that carries it is recorded, and
//! answers the provider's models as it composes them now, which the action then carries (the
//! registration's config, keys and all, is never written). The session refreshes its model and
//! its model lists from those, so a replay needs neither the extension nor the registry.

use std::sync::Arc;

use pi_core::agent::hooks::{HookAction, HookError, HookEvent, HookOutcome};
use pi_core::model::Model;
use serde_json::Value;

/// The provider's models after a change, and whether it has auth.
pub type ProviderModels = (Vec<Model>, bool);

/// A model registry that takes providers while a session runs (the binary's).
pub trait RuntimeProviders: Send + Sync {
    /// Applies `registration` (the extension host's plain data: name, extension, config,
    /// whether it gave JavaScript functions); an invalid one changes nothing and gives Pi's
    /// error text.
    fn register(&self, registration: &Value) -> Result<ProviderModels, String>;
    /// Removes what extensions registered under `name`.
    fn unregister(&self, name: &str) -> ProviderModels;
    /// Adds the virtual model `definition` describes (the extension host's plain data); an
    /// invalid one changes nothing and gives Pi's error text.
    fn register_virtual(&self, definition: &Value) -> Result<ProviderModels, String>;
}

/// Applies the provider changes `outcome`'s actions ask for to `providers`, filling in their
/// models. A change no registry takes (none is given, or it refuses the registration) is
/// dropped, and said as the error of the extension that asked for it at `event`.
pub fn apply(
    providers: Option<&Arc<dyn RuntimeProviders>>,
    event: HookEvent,
    outcome: &mut HookOutcome,
) {
    let mut errors = Vec::new();
    outcome
        .actions
        .retain_mut(|action| match apply_one(providers, action) {
            Ok(()) => true,
            Err(refused) => {
                errors.push(HookError {
                    extension: refused.extension,
                    event,
                    error: refused.error,
                });
                false
            }
        });
    outcome.errors.extend(errors);
}

/// A provider change no registry took: the extension that asked for it, and why.
#[derive(Debug)]
pub struct Refused {
    pub extension: String,
    pub error: String,
}

/// Applies `action` to `providers` when it is a provider change, filling in its models (any
/// other action is left as it is).
pub fn apply_one(
    providers: Option<&Arc<dyn RuntimeProviders>>,
    action: &mut HookAction,
) -> Result<(), Refused> {
    let (name, extension) = match action {
        HookAction::RegisterProvider {
            name, registration, ..
        } => {
            let extension = registration
                .as_ref()
                .and_then(|r| r.get("extensionPath"))
                .and_then(Value::as_str)
                .unwrap_or("<unknown>")
                .to_owned();
            (name.clone(), extension)
        }
        HookAction::UnregisterProvider { name, .. } => (name.clone(), "<unknown>".to_owned()),
        HookAction::RegisterVirtualModel {
            name, definition, ..
        } => {
            let extension = definition
                .as_ref()
                .and_then(|d| d.get("extensionPath"))
                .and_then(Value::as_str)
                .unwrap_or("<unknown>")
                .to_owned();
            (name.clone(), extension)
        }
        _ => return Ok(()),
    };
    let Some(providers) = providers else {
        return Err(Refused {
            extension,
            error: format!(
                "Provider {name}: this session has no model registry to change once the extensions have loaded"
            ),
        });
    };
    let (models, available, changed) = match action {
        HookAction::RegisterProvider {
            models,
            available,
            registration,
            ..
        } => {
            let given = registration.clone().unwrap_or(Value::Null);
            (models, available, providers.register(&given))
        }
        HookAction::UnregisterProvider {
            models, available, ..
        } => (models, available, Ok(providers.unregister(&name))),
        HookAction::RegisterVirtualModel {
            models,
            available,
            definition,
            ..
        } => {
            let given = definition.clone().unwrap_or(Value::Null);
            (models, available, providers.register_virtual(&given))
        }
        _ => return Ok(()),
    };
    let (found, has_auth) = changed.map_err(|error| Refused { extension, error })?;
    *models = found;
    *available = has_auth;
    Ok(())
}
