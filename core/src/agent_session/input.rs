//! A user's text on its way in (Pi 1.5.2's `_preparePrompt` and `_queueUserInput`): where an
//! `input` handler is registered it waits for the extensions' decision first, then `/skill:`
//! and template expansion, then it is prompted or queued. The expansion is here, not in the
//! front ends, so the handlers see the text as typed, as Pi's do; the skills and templates are
//! data of the session's configuration, so a replay expands as the recording did. A prompt
//! while the agent streams without a behaviour goes through the handlers too before Pi refuses
//! it (its refusal, or `handled`, comes back as [`Reply::BusyPrompt`]).

use crate::agent::hooks::{HookDecision, HookEvent, HookOutcome, HookPayload, InputAction};
use crate::agent::CallId;
use crate::message::ImageContent;

use super::contract::{BusyAnswer, Reply, SessionError, SessionRejection, StreamingBehavior};
use super::idle_run::IdleRun;
use super::machine::SessionMachine;

/// Pi's input `source` for a session driven by a program or the terminal (`"interactive"`,
/// the default of `prompt`, `steer` and `followUp`).
pub const INTERACTIVE_SOURCE: &str = "interactive";

/// Pi's input `source` for the texts RPC mode's `prompt`, `steer` and `follow_up` commands send.
pub const RPC_SOURCE: &str = "rpc";

/// Pi's input `source` of the texts an extension sends with `pi.sendUserMessage`.
pub(super) const EXTENSION_SOURCE: &str = "extension";

/// What an input becomes once decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum InputKind {
    /// `prompt`: a run, or queued with the behaviour when the agent is streaming then.
    Prompt(Option<StreamingBehavior>),
    /// `steer` / `followUp`: queued.
    Queue(StreamingBehavior),
    /// A prompt while the agent streams, without a behaviour: Pi runs its `input` handlers,
    /// then refuses it unless one handled it ([`Reply::BusyPrompt`]).
    Refused,
    /// An extension's `sendUserMessage` while idle: held, once decided, for the run that
    /// starts after the hook point goes on (`idle_run`).
    Idle,
}

/// An input waiting for the `input` decision.
#[derive(Clone, Debug)]
pub(super) struct PendingInput {
    pub(super) call: CallId,
    kind: InputKind,
    /// The text as the handlers were shown it (what `continue` goes on with).
    text: String,
    images: Vec<ImageContent>,
    /// Whether `/skill:` and templates expand once decided (not for an extension's
    /// `sendUserMessage`, unless it asks).
    expand: bool,
}

impl SessionMachine {
    /// Takes a user's text: a prompt naming an extension command runs it (`command.rs`), a
    /// queued one is refused; else refuses it as Pi's `prompt` does before its handlers run, asks the
    /// `input` handlers when there are some, else expands and prompts or queues it at once.
    pub(super) fn user_input(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        kind: InputKind,
    ) -> Result<(), SessionError> {
        match kind {
            InputKind::Prompt(_) if self.run_extension_command(&text) => return Ok(()),
            InputKind::Queue(_) => self.refuse_queued_command(&text)?,
            InputKind::Prompt(_) | InputKind::Refused | InputKind::Idle => {}
        }
        let source = self.input_source.clone();
        self.input_from(text, images, kind, source, true)
    }

    /// [`Self::user_input`] past the extension commands, with Pi's input `source` and whether
    /// the text expands (an extension's `sendUserMessage` comes in here).
    pub(super) fn input_from(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        kind: InputKind,
        source: String,
        expand: bool,
    ) -> Result<(), SessionError> {
        let kind = match kind {
            // Pi 1.5.2 starts the runs an extension asked for while idle during the prompt's
            // own `input` handlers: the prompt then finds the agent busy. Held till they decide.
            InputKind::Prompt(None) if self.idle_runs_armed() => {
                self.hold_idle_runs();
                InputKind::Refused
            }
            InputKind::Prompt(None) if self.streaming() && self.handles_input() => {
                InputKind::Refused
            }
            InputKind::Prompt(behavior) if self.streaming() || self.prompt_pending() => {
                let behavior = behavior.ok_or(SessionRejection::NeedsStreamingBehavior)?;
                match self.agent.is_streaming() {
                    true => InputKind::Prompt(Some(behavior)),
                    // A prompt still before its run: this one is queued behind it.
                    false => InputKind::Queue(behavior),
                }
            }
            InputKind::Prompt(_) if self.prompt_refused_while_busy() => {
                return Err(SessionRejection::PromptWhileCompacting.into())
            }
            kind => kind,
        };
        if !self.handles_input() {
            if kind == InputKind::Refused {
                self.start_held_idle_runs()?;
                let answer = self.busy_prompt_decided(text, images, expand);
                self.reply(Reply::BusyPrompt(answer));
                return Ok(());
            }
            let text = self.expanded(text, expand);
            return self.decided_input(kind, text, images);
        }
        let streaming_behavior = match (self.streaming(), kind) {
            (true, InputKind::Prompt(b)) => b,
            (true, InputKind::Queue(b)) => Some(b),
            (_, InputKind::Refused | InputKind::Idle) | (false, _) => None,
        };
        let call = self.agent.reserve_call();
        let payload = HookPayload::Input {
            text: text.clone(),
            images: images.clone(),
            source,
            streaming_behavior: streaming_behavior.map(behavior_name),
        };
        self.pending_inputs.push(PendingInput {
            call,
            kind,
            text,
            images,
            expand,
        });
        self.push_hook(call, payload);
        Ok(())
    }

    /// Whether `call` is an input waiting for `decision`.
    pub(super) fn awaits_input(&self, call: CallId, decision: &HookDecision) -> bool {
        matches!(decision, HookDecision::Input(_))
            && self.pending_inputs.iter().any(|p| p.call == call)
    }

    /// Whether an input waits for its decision (the session is busy meanwhile).
    pub(super) fn inputs_pending(&self) -> bool {
        !self.pending_inputs.is_empty()
    }

    /// Applies the `input` decision for `call` (which [`Self::awaits_input`] checked): the
    /// entries and messages asked for first, then what the handlers threw, then the text
    /// handled, refused, or expanded and prompted or queued.
    pub(super) fn input_decided(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        self.apply_input_decision(call, outcome)?;
        self.resume_stashed_actions(call)?;
        self.release_held_reply();
        Ok(())
    }

    /// Whether an extension's idle user message waits for its decision, or actions asked after
    /// one wait for it.
    pub(super) fn idle_inputs_pending(&self) -> bool {
        self.stashed_actions.is_some()
            || self
                .pending_inputs
                .iter()
                .any(|p| p.kind == InputKind::Idle)
    }

    fn apply_input_decision(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        let Some(index) = self.pending_inputs.iter().position(|p| p.call == call) else {
            return Ok(());
        };
        let pending = self.pending_inputs.remove(index);
        self.apply_asked_actions(&outcome.actions)?;
        self.report_hook_errors(&outcome.errors);
        if pending.kind == InputKind::Refused {
            self.start_held_idle_runs()?;
            let answer = match outcome.decision {
                HookDecision::Input(InputAction::Transform { text, images }) => {
                    self.busy_prompt_decided(text, images.unwrap_or(pending.images), pending.expand)
                }
                HookDecision::Input(InputAction::Continue) => {
                    self.busy_prompt_decided(pending.text, pending.images, pending.expand)
                }
                _ => Ok(BusyAnswer::Handled),
            };
            self.reply(Reply::BusyPrompt(answer));
            return self.release_held_decision(call);
        }
        let (text, images) = match outcome.decision {
            HookDecision::Input(InputAction::Transform { text, images }) => {
                (text, images.unwrap_or(pending.images))
            }
            HookDecision::Input(InputAction::Continue) => (pending.text, pending.images),
            _ => return self.release_held_decision(call),
        };
        let text = self.expanded(text, pending.expand);
        self.decided_input(pending.kind, text, images)?;
        self.release_held_decision(call)
    }

    /// A busy prompt its handlers let through: Pi refuses it if a run is still going, else
    /// (the run ended while they decided) starts a run with it, held for a wake due at once so
    /// that the answer goes out before the run's `agent_start`.
    fn busy_prompt_decided(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        expand: bool,
    ) -> Result<BusyAnswer, String> {
        if self.agent.is_streaming() || self.run_active || self.prompt_refused_while_busy() {
            return Err(SessionRejection::NeedsStreamingBehavior.to_string());
        }
        let text = self.expanded(text, expand);
        self.start_when_idle(IdleRun::User { text, images });
        Ok(BusyAnswer::Started)
    }

    /// The calls of the inputs waiting for their decision, in the order they came.
    pub(super) fn pending_input_calls(&self) -> Vec<CallId> {
        self.pending_inputs.iter().map(|p| p.call).collect()
    }

    /// Whether an extension handles the `input` hook point.
    fn handles_input(&self) -> bool {
        self.agent.handled_hooks().contains(HookEvent::Input)
    }

    /// `text` with `/skill:` and templates expanded, when `expand`.
    fn expanded(&self, text: String, expand: bool) -> String {
        match expand {
            true => self.resources.expand(&text),
            false => text,
        }
    }

    fn decided_input(
        &mut self,
        kind: InputKind,
        text: String,
        images: Vec<ImageContent>,
    ) -> Result<(), SessionError> {
        match kind {
            InputKind::Prompt(behavior) => self.prompt(text, images, Vec::new(), behavior),
            InputKind::Queue(behavior) => self.queue(text, images, behavior),
            InputKind::Idle => {
                self.start_when_idle(IdleRun::User { text, images });
                Ok(())
            }
            InputKind::Refused => Ok(()),
        }
    }

    /// Whether a prompt (not a queued message) waits for its decision: the session's next
    /// prompt is refused or queued as during a run.
    fn prompt_pending(&self) -> bool {
        self.pending_inputs
            .iter()
            .any(|p| matches!(p.kind, InputKind::Prompt(_)))
    }
}

/// Pi's `streamingBehavior` value.
fn behavior_name(behavior: StreamingBehavior) -> String {
    match behavior {
        StreamingBehavior::Steer => "steer",
        StreamingBehavior::FollowUp => "followUp",
    }
    .to_owned()
}
