//! Pi's `prompt` and the queues: a prompt started (or held for the compaction before it), a text
//! queued as steering or a follow-up while the agent streams, the queues cleared and announced,
//! and the session's abort.

use crate::agent::{Change, Input, Prompt};
use crate::event::{Event, SessionEvent};
use crate::message::{AgentMessage, CustomMessage, ImageContent};

use super::contract::{SessionError, SessionRejection, StreamingBehavior};
use super::machine::SessionMachine;

impl SessionMachine {
    /// Pi's `prompt`; `added` are the messages extensions added to it (they follow the user's
    /// message in the same run).
    pub(super) fn prompt(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        added: Vec<CustomMessage>,
        behavior: Option<StreamingBehavior>,
    ) -> Result<(), SessionError> {
        if self.agent.is_streaming() {
            let behavior = behavior.ok_or(SessionRejection::NeedsStreamingBehavior)?;
            return self.queue(text, images, behavior);
        }
        if self.prompt_refused_while_busy() {
            return Err(SessionRejection::PromptWhileCompacting.into());
        }
        self.flush_pending_bash()?;
        // Pi puts the messages held for the next turn right after the prompt's own.
        let mut added = added;
        added.splice(0..0, std::mem::take(&mut self.pending_next_turn));
        let prompt = match added.is_empty() {
            true => Prompt::Text { text, images },
            false => {
                let user = crate::message::UserMessage::from_text(text, images, self.now);
                let mut messages = vec![AgentMessage::User(user)];
                messages.extend(added.into_iter().map(AgentMessage::Custom));
                Prompt::Messages(messages)
            }
        };
        let last_assistant = self.agent.messages().iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.clone()),
            _ => None,
        });
        if let Some(assistant) = last_assistant {
            self.check_compaction(&assistant, false)?;
        }
        // The prompt's work starts here (its compaction first, if one is due).
        self.apply_later_sections();
        self.run_active = true;
        self.abort_requested = false;
        if self.compaction.is_some() || self.settling() {
            self.pending_prompt = Some(prompt);
            return Ok(());
        }
        let started = self.agent_step(Input::Prompt(prompt));
        self.run_active = started.is_ok();
        started
    }

    /// Whether a prompt now is refused as during a compaction (Pi's check before its input
    /// handlers run).
    pub(super) fn prompt_refused_while_busy(&self) -> bool {
        self.compaction.is_some()
            || self.automatic_failing()
            || self.pending_prompt.is_some()
            || self.navigating()
    }

    pub(super) fn queue(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        behavior: StreamingBehavior,
    ) -> Result<(), SessionError> {
        let message = AgentMessage::User(crate::message::UserMessage::from_text(
            text.clone(),
            images,
            self.now,
        ));
        match behavior {
            StreamingBehavior::Steer => {
                self.steering_texts.push(text);
                self.emit_queue_update();
                self.agent_step(Input::Steer(message))
            }
            StreamingBehavior::FollowUp => {
                self.follow_up_texts.push(text);
                self.emit_queue_update();
                self.agent_step(Input::FollowUp(message))
            }
        }
    }

    /// Pi's `clearQueue`: both queues emptied, in the agent too, and announced.
    pub(super) fn clear_queue(&mut self) -> Result<(), SessionError> {
        self.steering_texts.clear();
        self.follow_up_texts.clear();
        let step = self
            .agent
            .step(self.now, Input::Change(Change::ClearAllQueues))?;
        self.route(step)?;
        self.emit_queue_update();
        Ok(())
    }

    pub(super) fn emit_queue_update(&mut self) {
        self.emit(Event::Session(SessionEvent::QueueUpdate {
            steering: self.steering_texts.clone(),
            follow_up: self.follow_up_texts.clone(),
        }));
    }

    pub(super) fn abort(&mut self) -> Result<(), SessionError> {
        if self.run_active {
            self.abort_requested = true;
        }
        self.abort_retry();
        self.cancel_continue();
        self.pending_prompt = None;
        self.abort_compaction()?;
        self.abort_navigation();
        if self.agent.is_streaming() {
            self.agent_step(Input::Abort)?;
        }
        Ok(())
    }
}
