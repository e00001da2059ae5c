//! The provider hooks before a turn's request goes out (Pi 1.5.2's `transformHeaders` and
//! `onPayload`, which run the extensions' `before_provider_headers` and
//! `before_provider_request` handlers): where an extension handles them, the session holds the
//! agent's model call, asks for the headers, then for the body, applies what the handlers asked
//! for (their entries go before the request, as in Pi), and sends the call with the decided
//! headers and body ([`ProviderHooked`]). A request nobody hooks goes out as it is.
//!
//! The machine cannot build either (the headers are the provider registry's, the body the
//! providers'): it asks with empty ones and the interpreter fills them in from the request the
//! payload carries. The decisions are inputs, so a cassette records them and a replay sends
//! the recorded body without an extension; its request check then compares what was sent.
//! Pi runs neither hook for compaction and summary requests' bodies (they have their own
//! stream options), so only the agent's turns are held here.

use serde_json::{Map, Value};

use crate::agent::hooks::{HookAction, HookDecision, HookEvent, HookOutcome, HookPayload};
use crate::agent::{CallId, Effect, ModelRequest, ProviderHooked};

use super::contract::SessionError;
use super::machine::SessionMachine;

/// The model calls held for their provider hooks.
#[derive(Debug, Default)]
pub(super) struct ProviderGate {
    held: Vec<Held>,
}

/// One held call and the hook point it waits at.
#[derive(Debug)]
struct Held {
    hook: CallId,
    call: CallId,
    request: ModelRequest,
    hooked: ProviderHooked,
    /// The agent cancelled the call while it was held: the cancel follows its start.
    cancelled: bool,
}

impl SessionMachine {
    /// The agent's effects as they go out: a model call the provider hooks must see first is
    /// held, its first hook point asked in its place; a cancel of a held call waits for it.
    pub(super) fn gate_provider_calls(&mut self, effects: Vec<Effect>) -> Vec<Effect> {
        let handled = self.agent.handled_hooks();
        let headers = handled.contains(HookEvent::BeforeProviderHeaders);
        let body = handled.contains(HookEvent::BeforeProviderRequest);
        if !headers && !body && self.provider_gate.held.is_empty() {
            return effects;
        }
        let mut out = Vec::with_capacity(effects.len());
        for effect in effects {
            match effect {
                Effect::CallModel { call, request } if headers || body => {
                    let hook = self.agent.reserve_call();
                    let payload = match headers {
                        true => headers_payload(&request),
                        false => body_payload(&request),
                    };
                    self.provider_gate.held.push(Held {
                        hook,
                        call,
                        request,
                        hooked: ProviderHooked::default(),
                        cancelled: false,
                    });
                    out.push(Effect::Hook {
                        call: hook,
                        payload,
                        state: None,
                    });
                }
                Effect::Cancel { call } if self.provider_gate.holds(call) => {
                    for held in &mut self.provider_gate.held {
                        held.cancelled |= held.call == call;
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    /// Whether `call` is a provider hook point a held request waits at.
    pub(super) fn awaits_provider_hook(&self, call: CallId) -> bool {
        self.provider_gate.held.iter().any(|h| h.hook == call)
    }

    /// A provider hook point was decided: the actions apply, then the body is asked for (after
    /// the headers) or the call goes out as decided.
    pub(super) fn provider_hook_decided(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        let Some(index) = self.provider_gate.held.iter().position(|h| h.hook == call) else {
            return Ok(());
        };
        let mut held = self.provider_gate.held.remove(index);
        let asked_headers = match outcome.decision {
            HookDecision::BeforeProviderHeaders { headers } => {
                held.hooked.headers = Some(headers);
                true
            }
            HookDecision::BeforeProviderRequest { payload } => {
                held.hooked.payload = Some(payload);
                false
            }
            _ => false,
        };
        self.apply_asked_actions(&outcome.actions)?;
        let body = self
            .agent
            .handled_hooks()
            .contains(HookEvent::BeforeProviderRequest);
        if asked_headers && body {
            let hook = self.agent.reserve_call();
            let mut request = held.request.clone();
            request.provider_hooked = Some(Box::new(held.hooked.clone()));
            held.hook = hook;
            self.provider_gate.held.push(held);
            self.push_hook(hook, body_payload(&request));
        } else {
            let Held {
                call,
                mut request,
                hooked,
                cancelled,
                ..
            } = held;
            request.provider_hooked = Some(Box::new(hooked));
            self.out.effects.push(Effect::CallModel { call, request });
            if cancelled {
                self.out.effects.push(Effect::Cancel { call });
            }
        }
        if outcome.actions.iter().any(HookAction::aborts) {
            self.abort()?;
        }
        Ok(())
    }
}

impl ProviderGate {
    fn holds(&self, call: CallId) -> bool {
        self.held.iter().any(|h| h.call == call)
    }
}

/// The `before_provider_headers` question for `request` (the interpreter fills the headers in).
fn headers_payload(request: &ModelRequest) -> HookPayload {
    HookPayload::BeforeProviderHeaders {
        headers: Map::new(),
        request: Some(Box::new(request.clone())),
    }
}

/// The `before_provider_request` question for `request` (the interpreter fills the body in).
fn body_payload(request: &ModelRequest) -> HookPayload {
    HookPayload::BeforeProviderRequest {
        payload: Value::Null,
        request: Some(Box::new(request.clone())),
    }
}
