//! Runs an extension's message starts while the agent is idle (Pi 1.5.2's `sendUserMessage`,
//! which prompts, and `sendMessage` with `triggerTurn: true`, which `_startRun`s with the message
//! as the prompt). Pi starts them from the handler without waiting, after what the hook point
//! goes on to do: a command's handler returns and its prompt is answered (`handled`) before the
//! run's `agent_start`. A user message's `input` handlers run before that, within the handler's
//! call (`extension_actions`); once decided, its text is held here. Here the message waits for
//! a wake due at once, so the run starts in the step after the hook point's own continuation,
//! and a replay, fed the same wake, starts it at the same point. Print mode ends before that
//! wake ([`SessionMachine::waits_only_for_idle_runs`]): Pi 1.5.2's print mode disposes the
//! session once its prompts are answered, before such a run gets going.

use crate::agent::{Input, Prompt};
use crate::message::{AgentMessage, CustomMessage, ImageContent};

use super::contract::SessionError;
use super::machine::{SessionMachine, Wake};

/// A message that starts a run once the hook point that sent it has gone on.
#[derive(Debug)]
pub(super) enum IdleRun {
    /// `sendUserMessage`: prompted as typed by an extension, its `input` handlers decided and
    /// its text expanded where asked.
    User {
        text: String,
        images: Vec<ImageContent>,
    },
    /// `sendMessage` with `triggerTurn: true`: the run's starting message.
    Custom(CustomMessage),
}

impl SessionMachine {
    /// Holds `run` for the wake that starts it.
    pub(super) fn start_when_idle(&mut self, run: IdleRun) {
        self.idle_runs.push(run);
        self.wake_for_idle_runs();
    }

    /// Whether all that keeps the session busy is the wake that starts held idle runs (where
    /// print mode's end is: Pi 1.5.2 disposes the session before they start).
    pub fn waits_only_for_idle_runs(&self) -> bool {
        matches!(self.wake, Some((_, Wake::IdleRuns)))
            && self.held_reply.is_none()
            && !self.agent.is_streaming()
            && !self.run_active
            && !self.prompt_refused_while_busy()
            && !self.inputs_pending()
            && !self.commands_pending()
    }

    /// Starts the held runs, in the order sent; one that finds the session busy (a run the one
    /// before started) is dropped, as Pi's prompt refuses it then.
    pub(super) fn start_idle_runs(&mut self) -> Result<(), SessionError> {
        for run in std::mem::take(&mut self.idle_runs) {
            if self.agent.is_streaming() || self.prompt_refused_while_busy() || self.run_active {
                continue;
            }
            match run {
                IdleRun::User { text, images } => self.prompt(text, images, Vec::new(), None)?,
                IdleRun::Custom(custom) => self.start_custom_run(custom)?,
            }
        }
        Ok(())
    }

    /// Pi's `_startRun` with a custom message as the trigger: the message, then those held
    /// for the next turn, start the run.
    fn start_custom_run(&mut self, custom: CustomMessage) -> Result<(), SessionError> {
        self.flush_pending_bash()?;
        let mut messages = vec![AgentMessage::Custom(custom)];
        messages.extend(
            std::mem::take(&mut self.pending_next_turn)
                .into_iter()
                .map(AgentMessage::Custom),
        );
        self.run_active = true;
        self.abort_requested = false;
        let started = self.agent_step(Input::Prompt(Prompt::Messages(messages)));
        self.run_active = started.is_ok();
        started
    }
}
