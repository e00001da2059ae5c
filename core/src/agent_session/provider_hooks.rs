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
//!
//! Which requests go through which hook is Pi's: `transformHeaders` is in the request options
//! of every request the session's stream function sends (turns, cache warms, compaction and
//! branch summaries), `onPayload` only in the agent loop's (turns, and the cache warms that
//! repeat a turn's options); so summaries ask for the headers only ([`Hooks::HeadersOnly`]).
//! A cancel of a held call (an abort) waits for it and follows its start.

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

/// Which of the provider hooks a request goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hooks {
    /// Headers then body: the agent's turns and the cache warms repeating them.
    Both,
    /// Headers only: compaction and branch summaries.
    HeadersOnly,
}

/// One held call and the hook point it waits at.
#[derive(Debug)]
struct Held {
    hook: CallId,
    call: CallId,
    request: ModelRequest,
    hooked: ProviderHooked,
    /// Whether the body is asked for too (not for a summary's request).
    body: bool,
    /// The hook point it waits at asks for the headers (else for the body).
    asking_headers: bool,
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
        let listened = self.provider_listeners().is_some();
        if !headers && !body && !listened && self.provider_gate.held.is_empty() {
            return effects;
        }
        let mut out = Vec::with_capacity(effects.len());
        for effect in effects {
            match effect {
                Effect::CallModel { call, request } if headers || body || listened => {
                    out.push(self.hold_call(call, request, Hooks::Both))
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

    /// Sends a model call of the session's own (a summary, a cache warm), held first for the
    /// provider hooks `hooks` that some extension handles.
    pub(super) fn send_call(&mut self, call: CallId, request: ModelRequest, hooks: Hooks) {
        // A virtual model's router names the model first.
        if self.route_direct(call, &request, hooks) {
            return;
        }
        let effect = self.hold_call(call, request, hooks);
        self.out.effects.push(effect);
    }

    /// Holds `call` when an extension handles a hook of `hooks` it goes through: the effect to
    /// send is then the first hook point to ask, else the call itself. A call of the agent
    /// loop's (`Hooks::Both`) an extension listens to asks the providers to report its answer.
    fn hold_call(&mut self, call: CallId, mut request: ModelRequest, hooks: Hooks) -> Effect {
        let handled = self.agent.handled_hooks();
        let headers = handled.contains(HookEvent::BeforeProviderHeaders);
        let body = hooks == Hooks::Both && handled.contains(HookEvent::BeforeProviderRequest);
        let listeners = match hooks {
            Hooks::Both => self.provider_listeners(),
            Hooks::HeadersOnly => None,
        };
        if listeners.is_some() {
            self.listen_to(call, &request);
        }
        if !headers && !body {
            request.provider_hooked = listeners.map(Box::new);
            return Effect::CallModel { call, request };
        }
        let hook = self.agent.reserve_call();
        let payload = match headers {
            true => headers_payload(&request),
            false => body_payload(&request),
        };
        self.provider_gate.held.push(Held {
            hook,
            call,
            request,
            hooked: listeners.unwrap_or_default(),
            body,
            asking_headers: headers,
            cancelled: false,
        });
        Effect::Hook {
            call: hook,
            payload,
            state: None,
        }
    }

    /// A step's cancels of held calls (the session's own, sent past the agent's effects) wait
    /// for the calls they cancel.
    pub(super) fn hold_cancels(&mut self) {
        if self.provider_gate.held.is_empty() {
            return;
        }
        let gate = &mut self.provider_gate;
        self.out.effects.retain(|effect| match effect {
            Effect::Cancel { call } if gate.holds(*call) => {
                for held in &mut gate.held {
                    held.cancelled |= held.call == *call;
                }
                false
            }
            _ => true,
        });
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
        match outcome.decision {
            HookDecision::BeforeProviderHeaders { headers } => {
                held.hooked.headers = Some(headers);
            }
            HookDecision::BeforeProviderRequest { payload } => {
                held.hooked.payload = Some(payload);
            }
            _ => {}
        }
        self.apply_asked_actions(&outcome.actions)?;
        if held.asking_headers && held.body {
            held.asking_headers = false;
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
