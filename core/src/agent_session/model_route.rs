//! Requests for a virtual model (Pi 1.5.2's `prepareRequest` routing): the session holds the
//! agent's model call and asks the model's router, at a `route_model` hook point, which
//! physical model and thinking level it goes to. The router's new state is written as a
//! `pi.virtual-model-state` entry before the request goes; the request then goes on to the
//! provider hooks (if any) with the physical model, and its response names that model. A
//! retry's request tells the router of the failed response it repeats. A
//! routing failure fails the request with the router's message, as Pi's rejected
//! `prepareRequest` ends the run with an error response naming the virtual model.
//!
//! The decision is an input, so a cassette records it and a replay routes without the
//! extension that registered the model.

use serde_json::{json, Value};

use crate::agent::convert::convert_to_llm;
use crate::agent::hooks::{HookDecision, HookOutcome, HookPayload};
use crate::agent::model_route::{
    is_virtual, RouteDecision, RouteQuestion, RouteReason, VIRTUAL_MODEL_STATE_ENTRY,
};
use crate::agent::{CallId, Change, Effect, Input, ModelRequest};
use crate::compaction::prepare::projected_tokens;
use crate::compaction::tokens::should_compact;
use crate::event::CompactionReason;
use crate::message::{AgentMessage, AssistantMessage};
use crate::model::{Model, ThinkingLevel};
use crate::session::entry::SessionEntry;

use super::contract::SessionError;
use super::machine::SessionMachine;
use super::provider_hooks::Hooks;

/// The model calls held for their routers.
#[derive(Debug, Default)]
pub(super) struct RouteGate {
    held: Vec<Held>,
    /// The failed response an automatic retry repeats (Pi's `_failedResponse`), which the next
    /// request takes: a virtual model's router is told of it.
    pub(super) failed: Option<AssistantMessage>,
    /// The physical models routers sent requests to, each once: their limits apply to the
    /// responses.
    routed: Vec<Model>,
    /// A routed request held back while the session compacts first, or the route its request,
    /// made again, takes without asking the router again.
    standing: Option<Standing>,
}

/// A route that stands while the session compacts before its request (Pi 1.5.2 compacts when
/// a routed request exceeds the routed model's threshold, then prepares the request again: the
/// router is not asked again).
#[derive(Debug)]
enum Standing {
    /// The compaction runs; the request as first made waits.
    Compacting {
        call: CallId,
        request: ModelRequest,
        thinking_level: ThinkingLevel,
        /// The agent cancelled the call meanwhile: it goes as first made, and is cancelled.
        cancelled: bool,
    },
    /// The agent makes the request again from the compacted transcript; it goes to `model`.
    Redo {
        model: Model,
        thinking_level: ThinkingLevel,
    },
}

#[derive(Debug)]
struct Held {
    hook: CallId,
    call: CallId,
    request: ModelRequest,
    /// The session's own request (a summary), routed `direct`: sent through `hooks` once
    /// routed; `None` for the agent's.
    direct: Option<Hooks>,
    /// The agent cancelled the call while it was held: the cancel follows its start.
    cancelled: bool,
}

impl RouteGate {
    fn holds(&self, call: CallId) -> bool {
        self.held.iter().any(|h| h.call == call)
    }

    /// Whether `call` is the request held while the session compacts before it.
    fn compacting(&self, call: CallId) -> bool {
        matches!(&self.standing, Some(Standing::Compacting { call: c, .. }) if *c == call)
    }

    /// The model whose limits apply to `message` under the selection `selected` (Pi's
    /// `_modelForMessage`): a virtual selection's are those of the physical model a router
    /// sent the message's request to, when one did; otherwise the selection's.
    pub(super) fn limits_for<'a>(
        &'a self,
        selected: &'a Model,
        message: &AssistantMessage,
    ) -> &'a Model {
        if !is_virtual(selected) {
            return selected;
        }
        self.routed
            .iter()
            .find(|m| m.provider == message.provider && m.id == message.model)
            .unwrap_or(selected)
    }
}

impl SessionMachine {
    /// The agent's effects as they go out: a model call for a virtual model is held and its
    /// router asked in its place; a cancel of a held call waits for it.
    pub(super) fn gate_routed_calls(&mut self, effects: Vec<Effect>) -> Vec<Effect> {
        let mut out = Vec::with_capacity(effects.len());
        for effect in effects {
            let failed = match &effect {
                Effect::CallModel { .. } => self.route_gate.failed.take(),
                _ => None,
            };
            match effect {
                Effect::CallModel { call, mut request }
                    if is_virtual(&request.model)
                        && matches!(self.route_gate.standing, Some(Standing::Redo { .. })) =>
                {
                    if let Some(Standing::Redo {
                        model,
                        thinking_level,
                    }) = self.route_gate.standing.take()
                    {
                        request.model = model;
                        out.extend(self.routed_call(call, request, thinking_level, false));
                    }
                }
                Effect::CallModel { call, request } if is_virtual(&request.model) => {
                    let hook = self.agent.reserve_call();
                    let payload = HookPayload::RouteModel(self.route_question(&request, failed));
                    self.route_gate.held.push(Held {
                        hook,
                        call,
                        request,
                        direct: None,
                        cancelled: false,
                    });
                    out.push(Effect::Hook {
                        call: hook,
                        payload,
                        state: None,
                    });
                }
                Effect::Cancel { call } if self.route_gate.holds(call) => {
                    for held in &mut self.route_gate.held {
                        held.cancelled |= held.call == call;
                    }
                }
                Effect::Cancel { call } if self.route_gate.compacting(call) => {
                    if let Some(Standing::Compacting { cancelled, .. }) =
                        self.route_gate.standing.as_mut()
                    {
                        *cancelled = true;
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    /// A request of the session's own (a summary) for a virtual model is held and its router
    /// asked with reason `direct` (Pi's `_getSummarizationRequestAuth`), over the agent's
    /// conversation, with no state; false for a request of a physical model.
    pub(super) fn route_direct(
        &mut self,
        call: CallId,
        request: &ModelRequest,
        hooks: Hooks,
    ) -> bool {
        if !is_virtual(&request.model) {
            return false;
        }
        let question = RouteQuestion {
            provider: request.model.provider.clone(),
            model_id: request.model.id.clone(),
            thinking_level: self.agent.thinking_level(),
            reason: RouteReason::Direct,
            failed: None,
            state: None,
            messages: self
                .agent
                .messages()
                .iter()
                .flat_map(|message| match message {
                    AgentMessage::System(_) => {
                        serde_json::to_value(message).ok().into_iter().collect()
                    }
                    other => convert_to_llm(std::slice::from_ref(other))
                        .iter()
                        .filter_map(|m| serde_json::to_value(m).ok())
                        .collect::<Vec<_>>(),
                })
                .collect(),
        };
        let hook = self.agent.reserve_call();
        self.route_gate.held.push(Held {
            hook,
            call,
            request: request.clone(),
            direct: Some(hooks),
            cancelled: false,
        });
        self.push_hook(hook, HookPayload::RouteModel(question));
        true
    }

    /// Whether `call` is the router's hook point a held request waits at.
    pub(super) fn awaits_route(&self, call: CallId) -> bool {
        self.route_gate.held.iter().any(|h| h.hook == call)
    }

    /// The router answered: its new state is written, and the request goes on to the physical
    /// model (through the provider hooks), or fails with the router's message.
    pub(super) fn route_decided(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        let Some(index) = self.route_gate.held.iter().position(|h| h.hook == call) else {
            return Ok(());
        };
        let Held {
            call,
            mut request,
            direct,
            cancelled,
            ..
        } = self.route_gate.held.remove(index);
        // What the router asked of the session was done as it ran, before the request.
        self.apply_asked_actions(&outcome.actions)?;
        let decision = match outcome.decision {
            HookDecision::RouteModel(decision) => decision,
            _ => RouteDecision::Failed {
                error: format!(
                    "Virtual model {}/{} is not registered.",
                    request.model.provider, request.model.id
                ),
            },
        };
        match decision {
            RouteDecision::Routed {
                model,
                thinking_level,
                ..
            } if direct.is_some() => {
                request.model = *model;
                request.reasoning =
                    (thinking_level != ThinkingLevel::Off).then_some(thinking_level);
                self.send_call(call, request, direct.unwrap_or(Hooks::HeadersOnly));
                Ok(())
            }
            RouteDecision::Failed { error } if direct.is_some() => {
                self.answer(Input::ModelFailed { call, error })
            }
            RouteDecision::Routed {
                model,
                thinking_level,
                state,
            } => {
                if let Some(state) = state {
                    let data = json!({
                        "provider": request.model.provider,
                        "modelId": request.model.id,
                        "state": state,
                    });
                    self.append_custom(VIRTUAL_MODEL_STATE_ENTRY, Some(data));
                }
                request.model = *model;
                if !cancelled && self.compacts_before(&request.model)? {
                    self.route_gate.standing = Some(Standing::Compacting {
                        call,
                        request,
                        thinking_level,
                        cancelled: false,
                    });
                    return Ok(());
                }
                if !cancelled && self.agent.asks_context() {
                    // The request went out before the `context` hooks: the agent makes it
                    // again, asking them, and it goes where the router sent it.
                    self.route_gate.standing = Some(Standing::Redo {
                        model: request.model,
                        thinking_level,
                    });
                    return self.agent_step(Input::Change(Change::RedoRequest));
                }
                let effects = self.routed_call(call, request, thinking_level, cancelled);
                self.out.effects.extend(effects);
                Ok(())
            }
            RouteDecision::Failed { error } => {
                self.agent_step(Input::RequestRejected { call, error })
            }
        }
    }

    /// The agent's request, routed to the physical model it now names at `thinking_level`:
    /// the effects that send it (through the provider hooks), cancelled after if `cancelled`.
    fn routed_call(
        &mut self,
        call: CallId,
        mut request: ModelRequest,
        thinking_level: ThinkingLevel,
        cancelled: bool,
    ) -> Vec<Effect> {
        let model = &request.model;
        if !self
            .route_gate
            .routed
            .iter()
            .any(|m| m.provider == model.provider && m.id == model.id)
        {
            self.route_gate.routed.push(model.clone());
        }
        request.reasoning = (thinking_level != ThinkingLevel::Off).then_some(thinking_level);
        self.agent.routed(thinking_level);
        let mut effects = self.gate_provider_calls(vec![Effect::CallModel { call, request }]);
        if cancelled {
            effects.push(Effect::Cancel { call });
        }
        effects
    }

    /// Whether the session compacts before a request routed to `model` (Pi 1.5.2's
    /// `_exceedsCompactionThreshold` on the routed model): the projection as the request would
    /// carry it exceeds that model's threshold. The compaction starts here; false when there
    /// was nothing to compact, or another compaction is under way.
    fn compacts_before(&mut self, model: &Model) -> Result<bool, SessionError> {
        if self.compaction.is_some() || !self.failing.is_empty() || model.context_window == 0 {
            return Ok(false);
        }
        let tokens = projected_tokens(
            &self.tree.branch_path(None),
            &self.tree.context().into_messages(),
        );
        if !should_compact(tokens, model.context_window, &self.compaction_settings) {
            return Ok(false);
        }
        self.queue_compaction(CompactionReason::Threshold, false, None);
        self.begin_compaction_calls()?;
        Ok(self.compaction.is_some() || !self.failing.is_empty())
    }

    /// The compaction before a routed request has ended (its failure heard out): the agent
    /// makes the request again from the transcript as it now is, and it goes where the router
    /// sent it. A request cancelled meanwhile goes as it was, and is cancelled.
    pub(super) fn release_routed_request(&mut self) -> Result<(), SessionError> {
        if self.compaction.is_some() || !self.failing.is_empty() {
            return Ok(());
        }
        if !matches!(self.route_gate.standing, Some(Standing::Compacting { .. })) {
            if !self.agent.is_streaming() {
                self.route_gate.standing = None;
            }
            return Ok(());
        }
        let Some(Standing::Compacting {
            call,
            request,
            thinking_level,
            cancelled,
        }) = self.route_gate.standing.take()
        else {
            return Ok(());
        };
        if cancelled {
            let effects = self.routed_call(call, request, thinking_level, true);
            self.out.effects.extend(effects);
            return Ok(());
        }
        self.route_gate.standing = Some(Standing::Redo {
            model: request.model,
            thinking_level,
        });
        self.agent_step(Input::Change(Change::RedoRequest))
    }

    /// What the router of `request`'s virtual model is asked (Pi's `resolveModel` request):
    /// the reason is `user` when a message the user wrote follows the last response. That is
    /// read off the transcript as it is, not the request's converted messages: an extension's
    /// message (a custom one, sent or from `before_agent_start`) is sent as a user message but
    /// is not the user's.
    fn route_question(
        &self,
        request: &ModelRequest,
        failed: Option<AssistantMessage>,
    ) -> RouteQuestion {
        let transcript = self.agent.messages();
        let after_response = transcript
            .iter()
            .rposition(|m| matches!(m, AgentMessage::Assistant(_)))
            .map_or(0, |i| i + 1);
        let user_turn = transcript[after_response..]
            .iter()
            .any(|m| matches!(m, AgentMessage::User(_)));
        RouteQuestion {
            provider: request.model.provider.clone(),
            model_id: request.model.id.clone(),
            thinking_level: request.reasoning.unwrap_or(ThinkingLevel::Off),
            reason: match (&failed, user_turn) {
                (Some(_), _) => RouteReason::Retry,
                (None, true) => RouteReason::User,
                (None, false) => RouteReason::Continuation,
            },
            failed: failed.map(Box::new),
            state: self.router_state(&request.model),
            messages: with_system_messages(request),
        }
    }

    /// The router state the branch last stored for `model` (Pi's `getVirtualModelState`).
    fn router_state(&self, model: &Model) -> Option<Value> {
        self.tree.branch_path(None).iter().rev().find_map(|entry| {
            let SessionEntry::Custom(custom) = entry else {
                return None;
            };
            let data = custom.data.as_ref()?;
            (custom.custom_type == VIRTUAL_MODEL_STATE_ENTRY
                && data.get("provider").and_then(Value::as_str) == Some(model.provider.as_str())
                && data.get("modelId").and_then(Value::as_str) == Some(model.id.as_str()))
            .then(|| data.get("state").cloned().unwrap_or(Value::Null))
        })
    }
}

/// The request's conversation with its system messages in place, as Pi's router sees it.
fn with_system_messages(request: &ModelRequest) -> Vec<Value> {
    let mut system = request.system_messages.iter().peekable();
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    for (index, message) in request.messages.iter().enumerate() {
        while let Some(placed) = system.next_if(|p| p.at <= index) {
            out.extend(serde_json::to_value(AgentMessage::System(placed.message.clone())).ok());
        }
        out.extend(serde_json::to_value(message).ok());
    }
    for placed in system {
        out.extend(serde_json::to_value(AgentMessage::System(placed.message.clone())).ok());
    }
    out
}
