//! The models a run can use and their keys: the models with credentials (a replay's are the
//! recorded ones), each call's key and headers, and the model and thinking level a session
//! starts with, as Pi's `createAgentSession` chooses them.

use std::sync::Arc;

use pi_core::model::{Model, ThinkingLevel};
use pi_core::session::selection::branch_selection;
use pi_effects::clock::now_ms;
use pi_effects::live::CallOptionsFor;
use pi_effects::session::SessionStore;
use pi_providers::catalog;
use pi_providers::registry::ModelRegistry;

use super::Runtime;
use crate::model_select::ScopedModel;
use crate::request_options::RequestSettings;

impl Runtime {
    /// The models with credentials, in the registry's order.
    pub fn available_models(&self) -> Vec<Model> {
        if let Some(models) = &self.recorded_models {
            return models.clone();
        }
        self.registry
            .available(&self.auth, &self.env)
            .cloned()
            .collect()
    }

    /// The options of each call: the key and headers as the model registry resolves them, and
    /// what the settings and environment add (see [`RequestSettings`]).
    pub fn call_options(&self) -> CallOptionsFor {
        let registry = self.registry.clone();
        let live = self.live_providers();
        let auth = self.auth.clone();
        let env = self.env.clone();
        let shaping = RequestSettings::new(&self.settings, &self.env);
        Arc::new(move |request| {
            let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
            // The providers extensions registered or unregistered since they loaded count.
            let changed = live.current();
            if let Some(unknown) = changed
                .as_ref()
                .and_then(|registry| unknown_provider(registry, &request.model))
            {
                let mut options = shaping.options(request, String::new(), Vec::new());
                options.refused = Some(unknown);
                return Ok(options);
            }
            let resolved = changed
                .as_ref()
                .unwrap_or(&registry)
                .request_auth(&request.model, &auth, &env, now)
                .map_err(|e| e.to_string())?;
            let api_key = resolved
                .api_key
                .ok_or_else(|| format!("No API key for provider: {}", request.model.provider))?;
            Ok(shaping.options(request, api_key, resolved.headers.unwrap_or_default()))
        })
    }

    /// Whether a key can be found for `model` (Pi's check before prompting).
    pub fn has_auth(&self, model: &Model) -> bool {
        if let Some(models) = &self.recorded_models {
            return models
                .iter()
                .any(|m| m.provider == model.provider && m.id == model.id);
        }
        self.registry
            .has_configured_auth(model, &self.auth, &self.env)
    }

    /// The model and (unclamped) thinking level of a session over `store`. The model: the
    /// command line's; else, for a session without messages, the `--models` scope's (the
    /// saved default if in scope, else the first); else the session's own if it still has
    /// credentials; else the settings' default; else the preferred available model; else Pi's
    /// `unknown` placeholder, which fails on the first prompt for want of a key. The level:
    /// the command line's (or the chosen scope entry's); else the session's last change; else,
    /// for a new session, the model's entry in `modelThinkingLevels`; else the settings'
    /// default; else `medium`.
    pub fn choose(&self, store: &SessionStore) -> (Model, ThinkingLevel) {
        let tree = store.tree();
        let context = tree.context();
        let has_messages = !context.messages.is_empty();
        let mut thinking = self.thinking;
        let mut model = self.cli_model.clone();
        if model.is_none() && !has_messages {
            if let Some(scoped) = self.scoped_default() {
                if !self.thinking_flag && scoped.thinking.is_some() {
                    thinking = scoped.thinking;
                }
                model = Some(scoped.model.clone());
            }
        }
        if model.is_none() && has_messages {
            // Responses name the physical model a virtual selection routed to: the branch's
            // selection is Pi 1.5.2's `getBranchSelection`.
            let selected = branch_selection(&tree.branch_path(None), |provider, id| {
                self.registry
                    .find(provider, id)
                    .is_some_and(pi_providers::registry::is_virtual)
            });
            model = selected
                .as_ref()
                .and_then(|saved| self.registry.find(&saved.provider, &saved.model_id))
                .filter(|found| self.has_auth(found))
                .cloned();
        }
        let model = model
            .or_else(|| {
                let provider = self.settings.default_provider()?;
                let id = self.settings.default_model()?;
                self.registry.find(provider, id).cloned()
            })
            .or_else(|| catalog::preferred_available(&self.available_models()).cloned())
            .unwrap_or_else(Model::unknown);
        let session_level = has_messages
            .then(|| {
                tree.branch_path(None)
                    .iter()
                    .any(|e| e.kind() == "thinking_level_change")
                    .then(|| ThinkingLevel::parse(&context.thinking_level))
                    .flatten()
            })
            .flatten();
        // A new session asks for the model's own level first (Pi 1.5.2's `modelThinkingLevels`);
        // a resumed one without a level of its own takes the default.
        let per_model = (!has_messages)
            .then(|| {
                let key = format!("{}/{}", model.provider, model.id);
                self.settings.model_thinking_levels().get(&key).copied()
            })
            .flatten();
        let level = thinking
            .or(session_level)
            .or(per_model)
            .or(self.settings.default_thinking_level())
            .unwrap_or(ThinkingLevel::Medium);
        (model, level)
    }

    /// The scope's model for a new session: the saved default when it is in scope, else the
    /// first.
    fn scoped_default(&self) -> Option<&ScopedModel> {
        let provider = self.settings.default_provider();
        let id = self.settings.default_model();
        self.scoped_models
            .iter()
            .find(|s| {
                Some(s.model.provider.as_str()) == provider && Some(s.model.id.as_str()) == id
            })
            .or(self.scoped_models.first())
    }
}

/// Pi 1.5.2's failure of a request to a model whose provider an extension unregistered
/// (`Unknown provider: <p>`), which the call streams as its error without sending anything.
fn unknown_provider(registry: &ModelRegistry, model: &Model) -> Option<String> {
    let known = registry.all().iter().any(|m| m.provider == model.provider);
    (!known).then(|| format!("Unknown provider: {}", model.provider))
}
