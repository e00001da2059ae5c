//! Entries extensions write: those a hook point's handlers asked for come with its decision;
//! a session Pi wrote may hold others, which a replay of it gives back as inputs, and they go
//! where Pi put them.

use crate::agent::hooks::HookAction;
use crate::message::{AgentMessage, UserContent};

use super::contract::{ExtensionEntry, SessionError, SessionRejection};
use super::machine::SessionMachine;

impl SessionMachine {
    /// The `custom` entries a hook point's handlers wrote with `pi.appendEntry` (in the order
    /// asked): Pi writes them at once, mid-run too, so they go before anything the decision
    /// makes the loop do, each announced as `entry_appended`.
    pub(super) fn append_asked_entries(&mut self, actions: &[HookAction]) {
        for action in actions {
            if let HookAction::AppendEntry { custom_type, data } = action {
                self.append_custom(custom_type, data.clone());
            }
        }
    }

    fn append_custom(&mut self, custom_type: &str, data: Option<serde_json::Value>) {
        let (id, decision) =
            self.tree
                .append_custom_entry(custom_type, data, self.now, &mut self.ids);
        self.persist(decision);
        // Pi 1.5 announces what an extension's `appendEntry` wrote.
        self.emit_entry_appended(&id);
    }

    /// Writes `entry` as Pi's extension API does while the session is idle: `custom` entries
    /// (announced as `entry_appended`) and labels to the session only, a `custom_message` also
    /// into the conversation.
    pub(super) fn extension_entry(&mut self, entry: ExtensionEntry) -> Result<(), SessionError> {
        if self.agent.is_streaming() {
            return Err(SessionRejection::Entry(
                "an extension entry arrives only while the session is idle".into(),
            )
            .into());
        }
        match entry {
            ExtensionEntry::Custom { custom_type, data } => {
                self.append_custom(&custom_type, data);
                Ok(())
            }
            ExtensionEntry::Label { target_id, label } => {
                let (_, decision) = self
                    .tree
                    .append_label_change(&target_id, label.as_deref(), self.now, &mut self.ids)
                    .map_err(|e| SessionRejection::Entry(e.to_string()))?;
                self.persist(decision);
                Ok(())
            }
            ExtensionEntry::Message(message) => {
                let content: UserContent = message.content.clone();
                let (_, decision) = self.tree.append_custom_message_entry(
                    &message.custom_type,
                    content,
                    message.display,
                    message.details.clone(),
                    self.now,
                    &mut self.ids,
                );
                self.persist(decision);
                let mut messages = self.agent.messages().to_vec();
                messages.push(AgentMessage::Custom(message));
                self.replace_messages(messages)
            }
        }
    }
}
