//! The extension API's actions that come back with a hook point's decision, applied as Pi 1.5.2's
//! `AgentSession` applies them when a handler calls them (`bindCore`): in the order asked, at
//! once, mid run too, before the decision lets the loop go on.
//!
//! Applied: `pi.appendEntry`, `pi.sendMessage`, `pi.setThinkingLevel`, `pi.setSessionName` and
//! `pi.setLabel`; `ctx.abort()` is applied by the caller after the decision. Each needs only
//! what the machine holds (the model, the entries), so a replay reproduces the same entries and
//! events from the recorded actions with no extension loaded. `pi.setActiveTools`,
//! `pi.setModel`, `pi.sendUserMessage` and `ctx.compact()` are recorded and not applied yet:
//! the first needs the declarations and prompt sections of tools not active, the second a
//! catalog model and its key, which the machine does not hold.

use crate::agent::hooks::HookAction;

use super::contract::SessionError;
use super::machine::SessionMachine;

impl SessionMachine {
    /// Applies the actions a hook point's handlers asked for, in the order asked.
    pub(super) fn apply_asked_actions(
        &mut self,
        actions: &[HookAction],
    ) -> Result<(), SessionError> {
        for action in actions {
            match action {
                HookAction::AppendEntry { custom_type, data } => {
                    self.append_custom(custom_type, data.clone())
                }
                HookAction::SendMessage {
                    message,
                    deliver_as,
                    trigger_turn,
                } => self.send_asked_message(message, deliver_as.as_deref(), *trigger_turn)?,
                // Pi's `setThinkingLevel`: clamped to the model, written and announced only
                // when it changes; the run's next turn asks with it.
                HookAction::SetThinkingLevel { level } => self.set_thinking_level(*level)?,
                // Pi's `setSessionName`: a `session_info` entry and `session_info_changed`.
                HookAction::SetSessionName { name } => self.set_session_name(name),
                HookAction::SetLabel { entry_id, label } => {
                    self.set_asked_label(entry_id, label.as_deref())
                }
                HookAction::Abort
                | HookAction::SetActiveTools { .. }
                | HookAction::SetModel { .. }
                | HookAction::SendUserMessage { .. }
                | HookAction::Compact { .. } => {}
            }
        }
        Ok(())
    }

    /// Pi's `setLabel` (`appendLabelChange`): a `label` entry on `entry_id`, announced by no
    /// event; no label clears one. Pi throws for an entry the session does not hold, which
    /// fails the handler where it asked, after the actions before it; here nothing is written
    /// for it.
    fn set_asked_label(&mut self, entry_id: &str, label: Option<&str>) {
        if let Ok((_, decision)) =
            self.tree
                .append_label_change(entry_id, label, self.now, &mut self.ids)
        {
            self.persist(decision);
        }
    }
}
