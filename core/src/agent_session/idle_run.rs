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

use crate::agent::hooks::HookEvent;
use crate::agent::{Input, Prompt};
use crate::event::{Event, SessionEvent};
use crate::message::{AgentMessage, CustomMessage, ImageContent};

use super::contract::{SessionError, SessionRejection};
use super::machine::SessionMachine;
use super::wake::Wake;

/// Where Pi reports an error of the extension API's own (`extensionPath`).
const RUNTIME_EXTENSION: &str = "<runtime>";

/// The event Pi reports a failed `sendUserMessage` at.
const SEND_USER_MESSAGE: &str = "send_user_message";

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
    /// Holds `run` for the wake that starts it, asked once the hook point's actions are all
    /// applied and the `input` decisions of the user messages sent beside it are in (Pi has
    /// run those handlers before the hook point goes on): [`Self::arm_idle_runs`].
    pub(super) fn start_when_idle(&mut self, run: IdleRun) {
        self.idle_runs.push(run);
    }

    /// Asks for the wake that starts the held runs, unless a user message sent beside them
    /// still waits for its `input` decision, or they were asked for while the `agent_settled`
    /// handlers ran (those start once the session's `agent_settled` is out, as Pi 1.5.2
    /// defers a prompt made then and awaits it within the settling).
    pub(super) fn arm_idle_runs(&mut self) {
        if !self.idle_runs.is_empty() && !self.idle_inputs_pending() && !self.settling() {
            self.wake_for_idle_runs();
        }
    }

    /// Whether the wake that starts held idle runs is asked for.
    pub(super) fn idle_runs_armed(&self) -> bool {
        matches!(self.wake, Some((_, Wake::IdleRuns)))
    }

    /// Whether a prompt of `text` now comes before the wake that starts held idle runs: Pi
    /// 1.5.2 starts them during the prompt's `input` handlers, and the prompt finds the agent
    /// busy (print mode fails there, printing nothing of the run from its `agent_start` on).
    pub fn prompt_meets_idle_runs(&self, text: &str) -> bool {
        self.idle_runs_armed() && self.resources.command(text).is_none()
    }

    /// Keeps the held runs from the wake: a prompt came before it, and they start once its
    /// `input` handlers are done ([`Self::start_held_idle_runs`]).
    pub(super) fn hold_idle_runs(&mut self) {
        self.wake = None;
    }

    /// Starts the runs a prompt held ([`Self::hold_idle_runs`]), as the wake would have.
    pub(super) fn start_held_idle_runs(&mut self) -> Result<(), SessionError> {
        if self.idle_runs.is_empty() || self.idle_inputs_pending() || self.settling() {
            return Ok(());
        }
        self.start_idle_runs()
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

    /// Whether a custom message's run is held for the wake: Pi 1.5.2 starts it within the hook
    /// point, so its `before_agent_start` comes before a command's `handled` answer (which a
    /// front end then holds for the run's `agent_start`).
    pub fn holds_custom_idle_run(&self) -> bool {
        self.idle_runs
            .iter()
            .any(|run| matches!(run, IdleRun::Custom(_)))
    }

    /// Starts the first of the held runs, in the order sent; the others (all of them, when the
    /// session is busy) meet the run, as Pi's meet it ([`Self::settle_later_idle_runs`]): once its `before_agent_start` is
    /// decided where handlers wait for it, else at once.
    pub(super) fn start_idle_runs(&mut self) -> Result<(), SessionError> {
        let mut runs = std::mem::take(&mut self.idle_runs).into_iter();
        let busy = self.agent.is_streaming() || self.prompt_refused_while_busy() || self.run_active;
        let started = match (busy, runs.next()) {
            (false, Some(IdleRun::User { text, images })) => {
                self.prompt(text, images, Vec::new(), None)?;
                true
            }
            (false, Some(IdleRun::Custom(custom))) => {
                self.start_custom_run(custom)?;
                true
            }
            (true, Some(run)) => {
                self.later_idle_runs.push(run);
                false
            }
            (_, None) => false,
        };
        self.later_idle_runs.extend(runs);
        if !started
            || !self
                .agent
                .handled_hooks()
                .contains(HookEvent::BeforeAgentStart)
        {
            self.settle_later_idle_runs()?;
        }
        Ok(())
    }

    /// The runs asked for beside the one that started: Pi 1.5.2 starts the first at once, so
    /// the others find the session busy. A custom message steers the run (its first turn
    /// delivers it after the starting message); a user message is refused with Pi's error,
    /// reported as the extension API reports a failed `sendUserMessage`.
    pub(super) fn settle_later_idle_runs(&mut self) -> Result<(), SessionError> {
        for run in std::mem::take(&mut self.later_idle_runs) {
            match run {
                IdleRun::Custom(custom) if self.agent.is_streaming() => {
                    self.agent_step(Input::Steer(AgentMessage::Custom(custom)))?
                }
                IdleRun::Custom(_) => {}
                IdleRun::User { .. } => self.emit(Event::Session(SessionEvent::ExtensionError {
                    extension_path: RUNTIME_EXTENSION.to_owned(),
                    event: SEND_USER_MESSAGE.to_owned(),
                    error: SessionRejection::NeedsStreamingBehavior.to_string(),
                })),
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
