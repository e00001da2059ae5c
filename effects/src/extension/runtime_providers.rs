//! The providers extensions register or unregister once they have loaded (Pi 1.5.2 applies
//! `pi.registerProvider`/`pi.unregisterProvider` to its model runtime at once): the front end's
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
    outcome.actions.retain_mut(|action| {
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
            _ => return true,
        };
        let Some(providers) = providers else {
            errors.push(HookError {
                extension,
                event,
                error: format!(
                    "Provider {name}: this session has no model registry to change once the extensions have loaded"
                ),
            });
            return false;
        };
        let changed = match action {
            HookAction::RegisterProvider {
                models,
                available,
                registration,
                ..
            } => {
                let given = registration.clone().unwrap_or(Value::Null);
                providers.register(&given).map(|found| (models, available, found))
            }
            HookAction::UnregisterProvider {
                models, available, ..
            } => Ok((models, available, providers.unregister(&name))),
            _ => return true,
        };
        match changed {
            Ok((models, available, (found, has_auth))) => {
                *models = found;
                *available = has_auth;
                true
            }
            Err(error) => {
                errors.push(HookError {
                    extension,
                    event,
                    error,
                });
                false
            }
        }
    });
    outcome.errors.extend(errors);
}
