//! Entries extensions write: those a hook point's handlers asked for come with its decision;
//! a session Pi wrote may hold others, which a replay of it gives back as inputs, and they go
//! where Pi put them.

use crate::agent::hooks::{HookAction, InjectedMessage};
use crate::agent::{Change, Input};
use crate::event::{AgentEvent, Event};
use crate::message::{AgentMessage, CustomMessage, UserContent};

use super::contract::{ExtensionEntry, SessionError, SessionRejection};
use super::idle_run::IdleRun;
use super::machine::SessionMachine;

/// Pi's `deliverAs` for a message that waits for the next prompt.
const NEXT_TURN: &str = "nextTurn";
/// Pi's `deliverAs` for a message queued as a follow-up.
const FOLLOW_UP: &str = "followUp";

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

    /// A message a hook point's handler sent with `pi.sendMessage`, delivered as Pi's
    /// `sendCustomMessage` delivers it: a `nextTurn` one waits for the next prompt; while the
    /// agent streams, one whose `triggerTurn` is not `false` is queued as steering (or as a
    /// follow-up), which the run delivers before it settles, and one whose `triggerTurn` is
    /// `false` waits for the turn's end; while idle, one with `triggerTurn: true` starts a run once
    /// the hook point has gone on, another is written at once.
    /// It is queued before the decision lets the loop go on, as Pi's handlers queue it before it
    /// resumes.
    pub(super) fn send_asked_message(
        &mut self,
        message: &InjectedMessage,
        deliver_as: Option<&str>,
        trigger_turn: Option<bool>,
    ) -> Result<(), SessionError> {
        let custom = message.clone().into_custom(self.now);
        match (deliver_as, self.streaming(), trigger_turn) {
            (Some(NEXT_TURN), _, _) => self.pending_next_turn.push(custom),
            (Some(FOLLOW_UP), true, None | Some(true)) => {
                self.agent_step(Input::FollowUp(AgentMessage::Custom(custom)))?
            }
            (_, true, None | Some(true)) => {
                self.agent_step(Input::Steer(AgentMessage::Custom(custom)))?
            }
            (_, true, Some(false)) => self.agent_step(Input::Change(Change::AtTurnEnd(
                AgentMessage::Custom(custom),
            )))?,
            // Pi's `_startRun` with the message as the trigger, once the hook point goes on.
            (_, false, Some(true)) => self.start_when_idle(IdleRun::Custom(custom)),
            (_, false, _) => self.append_custom_message(custom)?,
        }
        Ok(())
    }

    /// Pi's `_appendCustomMessage`: the entry, the transcript (once the run no longer uses it),
    /// then `message_start` and `message_end`.
    fn append_custom_message(&mut self, custom: CustomMessage) -> Result<(), SessionError> {
        let (_, decision) = self.tree.append_custom_message_entry(
            &custom.custom_type,
            custom.content.clone(),
            custom.display,
            custom.details.clone(),
            self.now,
            &mut self.ids,
        );
        self.persist(decision);
        let message = AgentMessage::Custom(custom);
        if !self.agent.is_streaming() {
            let mut messages = self.agent.messages().to_vec();
            messages.push(message.clone());
            self.replace_messages(messages)?;
        }
        self.emit(Event::Agent(AgentEvent::MessageStart {
            message: message.clone(),
        }));
        self.emit(Event::Agent(AgentEvent::MessageEnd { message }));
        Ok(())
    }

    /// Writes a `custom` entry (`pi.appendEntry`), announced as `entry_appended`.
    pub(super) fn append_custom(&mut self, custom_type: &str, data: Option<serde_json::Value>) {
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
