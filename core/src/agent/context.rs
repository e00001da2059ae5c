//! The `context` and `context_with_system` hook points (Pi 1.5.2's `emitContext`, installed as
//! the agent's `transformContext`): where a handler is registered, each model request waits for
//! the extensions. `context` handlers see the conversation without its system messages and may
//! return another one for that request only (Pi puts the prompt in force back at its head);
//! `context_with_system` handlers then see it with its system messages and may return another,
//! whose system messages make the request's prompt. The transcript keeps what happened.

use crate::message::AgentMessage;

use super::super::hooks::{HookDecision, HookEvent, HookPayload};
use super::super::system::SystemState;
use super::{AgentMachine, CallId, Effect, Phase};

impl AgentMachine {
    /// Whether the next request waits for `context` first; if so, asks for the decision.
    pub(super) fn ask_context(&mut self) -> bool {
        if !self.handled_hooks.contains(HookEvent::Context) {
            return false;
        }
        let Some(run) = &self.run else { return false };
        let messages = self.messages[..run.context_len]
            .iter()
            .filter(|m| !matches!(m, AgentMessage::System(_)))
            .cloned()
            .collect();
        self.ask(HookPayload::Context { messages }, false);
        true
    }

    /// Whether the next request waits for `context_with_system` after the `context` decision
    /// (`decided`: the conversation a `context` handler chose); if so, asks for it.
    pub(super) fn ask_context_with_system(&mut self, decided: Option<&[AgentMessage]>) -> bool {
        if !self.handled_hooks.contains(HookEvent::ContextWithSystem) {
            return false;
        }
        let Some(run) = &self.run else { return false };
        let context = &self.messages[..run.context_len];
        let messages = match decided {
            None => context.to_vec(),
            Some(chosen) => {
                // Pi's `restoreSystemMessages`: the prompt in force, merged into one message
                // stamped as the first, at the head of what the handler chose.
                let first = context.iter().find_map(|m| match m {
                    AgentMessage::System(system) => Some(system.timestamp),
                    _ => None,
                });
                let head = first
                    .and_then(|t| SystemState::of(context).checkpoint(t))
                    .and_then(|v| serde_json::from_value::<AgentMessage>(v).ok());
                head.into_iter().chain(chosen.iter().cloned()).collect()
            }
        };
        self.ask(HookPayload::ContextWithSystem { messages }, true);
        true
    }

    fn ask(&mut self, payload: HookPayload, with_system: bool) {
        let call = CallId(self.next_call);
        self.next_call += 1;
        if let Some(run) = self.run.as_mut() {
            run.phase = Phase::Context { call, with_system };
        }
        self.effect(Effect::Hook {
            call,
            payload,
            state: None,
        });
    }

    /// Whether `call` is the request waiting for its `context` decision.
    pub(super) fn awaits_context(&self, call: CallId, decision: &HookDecision) -> bool {
        matches!(decision, HookDecision::Context { .. })
            && matches!(self.run.as_ref().map(|r| &r.phase),
                Some(Phase::Context { call: c, .. }) if *c == call)
    }

    /// Makes the waiting request with the conversation decided.
    pub(super) fn context_decided(&mut self, decision: HookDecision) {
        let HookDecision::Context { messages } = decision else {
            return;
        };
        let Some(run) = self.run.as_mut() else { return };
        let with_system = matches!(
            run.phase,
            Phase::Context {
                with_system: true,
                ..
            }
        );
        run.phase = Phase::Between;
        match with_system {
            true => run.system_context_decided = Some(messages),
            false => run.context_decided = Some(messages),
        }
        self.request_model();
    }
}
