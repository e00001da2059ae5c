//! Entries extensions write. This loop runs no extensions, but a session Pi wrote may hold
//! their entries; a replay of it gives them back as inputs, and they go where Pi put them.

use crate::message::{AgentMessage, UserContent};

use super::contract::{ExtensionEntry, SessionError, SessionRejection};
use super::machine::SessionMachine;

impl SessionMachine {
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
                let (id, decision) =
                    self.tree
                        .append_custom_entry(&custom_type, data, self.now, &mut self.ids);
                self.persist(decision);
                // Pi 1.5 announces what an extension's `appendEntry` wrote.
                self.emit_entry_appended(&id);
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
