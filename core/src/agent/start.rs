//! The `before_agent_start` hook point (Pi 1.5.2's `AgentSession._prepareRun`): where a handler
//! is registered, a prompt's run (or one an extension's custom message starts, the message as
//! the event's `message`) waits for the extensions before `agent_start`. The decision
//! adds its messages after the prompt's and forces the run's system prompt: Pi 1.5.2 sets
//! `forceSystemPrompt`, which projects every request of the run onto that text and leaves the
//! transcript's system messages (its sections and tool declarations) as they are.

use crate::message::{AgentMessage, ImageContent};

use super::super::hooks::{HookDecision, HookEvent, HookPayload, InjectedMessage};
use super::{AgentMachine, CallId, Effect};

/// A prompt's run waiting for the `before_agent_start` decision.
#[derive(Debug)]
pub(super) struct Starting {
    pub(super) call: CallId,
    /// The prompt's messages, which the run starts with.
    pub(super) messages: Vec<AgentMessage>,
    /// An abort arrived meanwhile: the run is aborted as soon as it exists.
    pub(super) aborted: bool,
}

/// Pi's `before_agent_start` trigger for a prompt.
const USER_TRIGGER: &str = "user";
/// Pi's `before_agent_start` trigger for an extension's message that starts a run.
const CUSTOM_TRIGGER: &str = "custom";

impl AgentMachine {
    /// Whether a text prompt waits for `before_agent_start` first; if so, asks for the decision
    /// and holds the prompt's message.
    pub(super) fn ask_before_start(
        &mut self,
        text: &str,
        images: &[ImageContent],
        message: AgentMessage,
    ) -> bool {
        if !self.handled_hooks.contains(HookEvent::BeforeAgentStart) {
            return false;
        }
        let call = self.new_call();
        let payload = HookPayload::BeforeAgentStart {
            message_type: USER_TRIGGER.to_owned(),
            prompt: Some(text.to_owned()),
            message: None,
            images: images.to_vec(),
            system_prompt: self.system_prompt(),
        };
        self.hold_start(call, payload, vec![message]);
        true
    }

    /// Whether a run an extension's custom message starts (`messages`, that message first)
    /// waits for `before_agent_start` first (Pi's `_startRun` with a custom trigger); if so,
    /// asks for the decision and holds the messages.
    pub(super) fn ask_before_custom_start(&mut self, messages: &[AgentMessage]) -> bool {
        let Some(first @ AgentMessage::Custom(_)) = messages.first() else {
            return false;
        };
        if !self.handled_hooks.contains(HookEvent::BeforeAgentStart) {
            return false;
        }
        let call = self.new_call();
        let payload = HookPayload::BeforeAgentStart {
            message_type: CUSTOM_TRIGGER.to_owned(),
            prompt: None,
            message: Some(Box::new(first.clone())),
            images: Vec::new(),
            system_prompt: self.system_prompt(),
        };
        self.hold_start(call, payload, messages.to_vec());
        true
    }

    /// Holds `messages` for the decision of the `before_agent_start` hook `call`.
    fn hold_start(&mut self, call: CallId, payload: HookPayload, messages: Vec<AgentMessage>) {
        self.starting = Some(Starting {
            call,
            messages,
            aborted: false,
        });
        self.effect(Effect::Hook {
            call,
            payload,
            state: None,
        });
    }

    /// Whether `call` is the waiting start and `decision` answers it.
    pub(super) fn awaits_start(&self, call: CallId, decision: &HookDecision) -> bool {
        matches!(decision, HookDecision::BeforeAgentStart { .. })
            && self.starting.as_ref().is_some_and(|s| s.call == call)
    }

    /// Starts the waiting run with the decision's messages (stamped now, as Pi stamps them)
    /// and forced prompt.
    /// `actions_abort`: a handler called `ctx.abort()`.
    pub(super) fn start_decided(&mut self, decision: HookDecision, actions_abort: bool) {
        let (
            Some(starting),
            HookDecision::BeforeAgentStart {
                messages,
                system_prompt,
            },
        ) = (self.starting.take(), decision)
        else {
            return;
        };
        let mut prompts = starting.messages;
        let aborted = starting.aborted || actions_abort;
        prompts.extend(messages.into_iter().map(|m| self.injected(m)));
        self.begin_forced_run(prompts, system_prompt, aborted);
    }

    /// A handler's message as the transcript records it.
    fn injected(&self, message: InjectedMessage) -> AgentMessage {
        AgentMessage::Custom(message.into_custom(self.now))
    }
}
