//! Providers registered or unregistered once the extensions have loaded (Pi 1.5.2's
//! `pi.registerProvider`/`pi.unregisterProvider`, and a `pi.registerVirtualModel`, which
//! changes its provider's models, from a handler, a command or a tool), as the
//! session holds them: each change's models as the front end's registry composed them when it
//! applied it (recorded with the action, no key among them), and the current model refreshed
//! from them as Pi's `_refreshCurrentModelFromRegistry` refreshes it (replaced, without an
//! entry or an event, when the registry's model of the same provider and id differs).
//!
//! The changes are kept in order so that a front end answers its model lists (RPC
//! `get_available_models`, the key check before a prompt) from the registry it started with
//! and these changes: live and in a replay alike, with no registry there.

use crate::model::Model;

use super::contract::SessionError;
use super::machine::SessionMachine;

/// One provider's models after a change: all of them, and whether the provider has auth.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderChange {
    /// The provider's id.
    pub name: String,
    /// Its models as the registry composed them after the change (none once unregistered,
    /// unless a built-in's come back).
    pub models: Vec<Model>,
    /// Whether a key can be found for it (its models are then available).
    pub available: bool,
}

impl ProviderChange {
    /// `models` (the models a run started with, in the registry's order) with this change
    /// applied: the provider's models replaced in place (at the end for a new provider), kept
    /// only when it has auth.
    pub fn apply(&self, models: &mut Vec<Model>) {
        let at = models.iter().position(|m| m.provider == self.name);
        models.retain(|m| m.provider != self.name);
        if self.available {
            let at = at.unwrap_or(models.len()).min(models.len());
            models.splice(at..at, self.models.iter().cloned());
        }
    }
}

impl SessionMachine {
    /// Takes in a provider change and refreshes the current model from it, unless
    /// `keep_model` (a change through `ctx.modelRegistry`, which Pi does not follow with it).
    pub(super) fn change_provider(
        &mut self,
        name: &str,
        models: &[Model],
        available: bool,
        keep_model: bool,
    ) -> Result<(), SessionError> {
        self.provider_changes.push(ProviderChange {
            name: name.to_owned(),
            models: models.to_vec(),
            available,
        });
        let current = self.agent.model();
        if keep_model || current.provider != name {
            return Ok(());
        }
        let refreshed = models.iter().find(|m| m.id == current.id);
        match refreshed.filter(|m| *m != current) {
            Some(refreshed) => self.refresh_model(refreshed.clone()),
            None => Ok(()),
        }
    }

    /// The provider changes of this session, in the order they were made.
    pub fn provider_changes(&self) -> &[ProviderChange] {
        &self.provider_changes
    }
}
