//! The `context` hook point (Pi 1.5.2's `emitContext`, installed as the agent's
//! `transformContext`): where a handler is registered, each model request waits for the
//! extensions, which see the conversation without its system messages and may return another
//! one for that request only. The transcript keeps what happened; the request's system prompt
//! and tools stay the transcript's (Pi puts its system message back at the head).

use crate::message::AgentMessage;

use super::super::hooks::{HookDecision, HookEvent, HookPayload};
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
        let call = CallId(self.next_call);
        self.next_call += 1;
        if let Some(run) = self.run.as_mut() {
            run.phase = Phase::Context { call };
        }
        self.effect(Effect::Hook {
            call,
            payload: HookPayload::Context { messages },
            state: None,
        });
        true
    }

    /// Whether `call` is the request waiting for its `context` decision.
    pub(super) fn awaits_context(&self, call: CallId, decision: &HookDecision) -> bool {
        matches!(decision, HookDecision::Context { .. })
            && matches!(self.run.as_ref().map(|r| &r.phase),
                Some(Phase::Context { call: c }) if *c == call)
    }

    /// Makes the waiting request with the conversation decided.
    pub(super) fn context_decided(&mut self, decision: HookDecision) {
        let HookDecision::Context { messages } = decision else {
            return;
        };
        let Some(run) = self.run.as_mut() else { return };
        run.phase = Phase::Between;
        run.context_decided = Some(messages);
        self.request_model();
    }
}
