//! Model and thinking-level changes: Pi's `setModel` and cycling (the thinking level carried
//! over) and `setThinkingLevel` (clamped to the model), each written to the session and told to
//! the extensions.

use crate::agent::hooks::HookPayload;
use crate::agent::{Change, Input};
use crate::event::{Event, SessionEvent};
use crate::model::{clamp_thinking_level, Model, ThinkingLevel};

use super::contract::SessionError;
use super::machine::SessionMachine;

impl SessionMachine {
    /// Pi's `setModel` (`source` `"set"`) and cycling (`"cycle"`): a `model_change`
    /// entry, the thinking level carried over, and `model_select` for the extensions when the
    /// model changed.
    pub(super) fn set_model(
        &mut self,
        model: Model,
        explicit: Option<ThinkingLevel>,
        source: &str,
    ) -> Result<(), SessionError> {
        // Pi 1.5.2's `_getThinkingLevelForModelSwitch`: the scope's level, the model's own
        // setting, the settings' default, else the current level.
        let per_model = self
            .model_thinking_levels
            .get(&format!("{}/{}", model.provider, model.id))
            .copied();
        let carried = explicit
            .or(per_model)
            .or(self.default_thinking_level)
            .unwrap_or_else(|| self.agent.thinking_level());
        let (provider, id) = (model.provider.clone(), model.id.clone());
        let previous = self.agent.model().clone();
        let step = self
            .agent
            .step(self.now, Input::Change(Change::Model(model.clone())))?;
        self.route(step)?;
        let (_, decision) = self
            .tree
            .append_model_change(&provider, &id, self.now, &mut self.ids);
        self.persist(decision);
        self.set_thinking_level(carried)?;
        if (previous.provider.as_str(), previous.id.as_str()) != (provider.as_str(), id.as_str()) {
            self.tell_session(HookPayload::ModelSelect {
                model: Box::new(model),
                previous_model: Some(Box::new(previous)),
                source: source.to_owned(),
            });
        }
        Ok(())
    }

    /// Pi's `_refreshCurrentModelFromRegistry`: the model in force replaced by the registry's
    /// object for it, with no entry, no event and the thinking level as it is.
    pub(super) fn refresh_model(&mut self, model: Model) -> Result<(), SessionError> {
        let step = self
            .agent
            .step(self.now, Input::Change(Change::Model(model)))?;
        self.route(step)
    }

    pub(super) fn set_thinking_level(&mut self, level: ThinkingLevel) -> Result<(), SessionError> {
        let effective = clamp_thinking_level(self.agent.model(), level);
        let previous = self.agent.thinking_level();
        if effective == previous {
            return Ok(());
        }
        let step = self
            .agent
            .step(self.now, Input::Change(Change::ThinkingLevel(effective)))?;
        self.route(step)?;
        let (_, decision) =
            self.tree
                .append_thinking_level_change(effective.as_str(), self.now, &mut self.ids);
        self.persist(decision);
        self.emit(Event::Session(SessionEvent::ThinkingLevelChanged {
            level: effective,
        }));
        self.tell_session(HookPayload::ThinkingLevelSelect {
            level: effective,
            previous_level: previous,
        });
        Ok(())
    }
}
