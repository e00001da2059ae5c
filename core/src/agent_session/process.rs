//! Pi's `_processAgentEvent`: the agent loop's events handled by the session, the queues'
//! bookkeeping, each ended message written to the session, and the retry or compaction a run's
//! end leads to.

use crate::agent::Input;
use crate::event::{AgentEvent, Event, SessionEvent};
use crate::message::{AgentMessage, StopReason};
use crate::session::tree::Persist;

use super::contract::SessionError;
use super::machine::SessionMachine;
use super::retry::is_retryable;

impl SessionMachine {
    pub(super) fn emit(&mut self, event: Event) {
        self.out.events.push(event);
    }

    /// Announces the entry `id` just appended (Pi 1.5's `entry_appended`), carrying it as JSON so
    /// the events stay below the session store. An entry is plain data with string keys, which
    /// always serializes; one that is not in the tree is not announced.
    pub(super) fn emit_entry_appended(&mut self, id: &str) {
        if let Some(entry) = self
            .tree
            .entry(id)
            .and_then(|e| serde_json::to_value(e).ok())
        {
            self.emit(Event::Session(SessionEvent::EntryAppended { entry }));
        }
    }

    pub(super) fn persist(&mut self, decision: Persist) {
        if decision != Persist::Nothing {
            self.out.persist = true;
        }
    }

    /// Pi's `_processAgentEvent`: queue bookkeeping, the event itself, persistence, then retry
    /// and compaction after the run.
    pub(super) fn process(&mut self, event: AgentEvent) -> Result<(), SessionError> {
        self.dequeue_started(&event);
        self.process_told(event)
    }

    /// Pi's bookkeeping before its extensions hear of an event: a user message that starts
    /// leaves the queue it was in, announced.
    pub(super) fn dequeue_started(&mut self, event: &AgentEvent) {
        if self.deaf() {
            return;
        }
        if let AgentEvent::MessageStart {
            message: AgentMessage::User(user),
        } = event
        {
            self.overflow_recovery_attempted = false;
            let text = user.content.text();
            if !text.is_empty() {
                if let Some(i) = self.steering_texts.iter().position(|t| *t == text) {
                    self.steering_texts.remove(i);
                    self.emit_queue_update();
                } else if let Some(i) = self.follow_up_texts.iter().position(|t| *t == text) {
                    self.follow_up_texts.remove(i);
                    self.emit_queue_update();
                }
            }
        }
    }

    /// The rest of [`process`](Self::process), once the extensions have heard of the event.
    pub(super) fn process_told(&mut self, mut event: AgentEvent) -> Result<(), SessionError> {
        if self.deaf() {
            return Ok(());
        }
        if let AgentEvent::AgentEnd {
            messages,
            will_retry,
        } = &mut event
        {
            *will_retry = Some(self.will_retry_after(messages));
        }
        let (ended, run_ended) = match &event {
            AgentEvent::MessageEnd { message } => (Some(message.clone()), false),
            AgentEvent::AgentEnd { .. } => (None, true),
            _ => (None, false),
        };
        self.emit(Event::Agent(event));
        if let Some(message) = ended {
            self.message_ended(message);
        }
        if run_ended {
            if let Some(assistant) = self.last_assistant.take() {
                let context_window = self.agent.model().context_window;
                if is_retryable(&assistant, context_window) && self.schedule_retry(&assistant)? {
                    return Ok(());
                }
                self.check_compaction(&assistant, true)?;
            }
            // The loop drains its queues before `agent_end`: what is queued now an `agent_end`
            // handler queued, and Pi's session continues the run with it.
            if self.compaction.is_none()
                && self.wake.is_none()
                && !self.abort_requested
                && self.agent.has_queued_messages()
            {
                self.agent_step(Input::Continue)?;
            }
        }
        Ok(())
    }

    pub(super) fn message_ended(&mut self, message: AgentMessage) {
        let decision = match &message {
            AgentMessage::Custom(custom) => {
                let (_, decision) = self.tree.append_custom_message_entry(
                    &custom.custom_type,
                    custom.content.clone(),
                    custom.display,
                    custom.details.clone(),
                    self.now,
                    &mut self.ids,
                );
                decision
            }
            AgentMessage::System(_)
            | AgentMessage::User(_)
            | AgentMessage::Assistant(_)
            | AgentMessage::ToolResult(_) => {
                let (_, decision) =
                    self.tree
                        .append_message(message.clone(), self.now, &mut self.ids);
                decision
            }
            _ => Persist::Nothing,
        };
        self.persist(decision);
        if let AgentMessage::Assistant(assistant) = message {
            if !matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Length
            ) {
                self.overflow_recovery_attempted = false;
            }
            if assistant.stop_reason != StopReason::Error && self.retry_attempt > 0 {
                let attempt = std::mem::take(&mut self.retry_attempt);
                self.emit(Event::Session(SessionEvent::AutoRetryEnd {
                    success: true,
                    attempt,
                    final_error: None,
                }));
            }
            self.last_assistant = Some(assistant);
        }
    }

    /// Removes the last message from the agent's transcript when it is an assistant message
    /// (only an error one when `only_errors`); the session file keeps it.
    pub(super) fn drop_trailing_assistant(
        &mut self,
        only_errors: bool,
    ) -> Result<(), SessionError> {
        let messages = self.agent.messages();
        let drop = match messages.last() {
            Some(AgentMessage::Assistant(a)) => !only_errors || a.stop_reason == StopReason::Error,
            _ => false,
        };
        if drop {
            let kept = messages[..messages.len() - 1].to_vec();
            self.replace_messages(kept)?;
        }
        Ok(())
    }
}
