//! The provider's answer told to the extensions (Pi 1.5.2's `onResponse` and
//! `onProviderStreamEvent`, which run the `after_provider_response` and `provider_stream_event`
//! handlers): where an extension handles them, the call's request asks the providers for its
//! response head and its stream's data ([`ProviderHooked`]'s `response` and `stream`), which
//! arrive as silent patches among the call's stream events. Each is a hook point; the call's
//! later stream events wait until its handlers are done and their actions applied, as Pi awaits
//! each before it goes on with the stream. A call nobody listens to reports neither.
//!
//! Which requests report them is Pi's: both callbacks are the agent loop's options, so the
//! agent's turns and the cache warms repeating them report, summaries do not. Google's SDK gives
//! pi-ai no response head, so its calls report their data only (the providers decide that).

use std::collections::VecDeque;

use crate::agent::hooks::{HookAction, HookEvent, HookOutcome, HookPayload};
use crate::agent::{CallId, Input, ModelRequest, Patch, ProviderHooked, StreamEvent};

use super::contract::SessionError;
use super::machine::SessionMachine;

/// The calls that report their answer, and the notices being heard.
#[derive(Debug, Default)]
pub(super) struct ProviderNotices {
    /// Each reporting call and the model it asked (what `provider_stream_event` names).
    calls: Vec<(CallId, Asked)>,
    /// The notices being heard: each holds its call's later stream events.
    waiting: Vec<Waiting>,
}

/// The model a reporting call asked, as `provider_stream_event` names it.
#[derive(Debug)]
struct Asked {
    provider: String,
    api: String,
    model: String,
}

/// A notice being heard and the call's stream events that came after it.
#[derive(Debug)]
struct Waiting {
    hook: CallId,
    call: CallId,
    held: VecDeque<Input>,
}

impl SessionMachine {
    /// What a request of the agent loop (`Hooks::Both`) asks the providers to report, `None`
    /// when no extension listens.
    pub(super) fn provider_listeners(&self) -> Option<ProviderHooked> {
        let handled = self.agent.handled_hooks();
        let response = handled.contains(HookEvent::AfterProviderResponse);
        let stream = handled.contains(HookEvent::ProviderStreamEvent);
        (response || stream).then(|| ProviderHooked {
            response,
            stream,
            ..ProviderHooked::default()
        })
    }

    /// Notes that `call` reports its answer for `request`.
    pub(super) fn listen_to(&mut self, call: CallId, request: &ModelRequest) {
        let model = &request.model;
        self.provider_notices.calls.push((
            call,
            Asked {
                provider: model.provider.clone(),
                api: model.api.clone(),
                model: model.id.clone(),
            },
        ));
    }

    /// Takes a model call's stream event if it is a report to tell the extensions (asked in its
    /// place) or comes after one still heard (held); gives back any other input.
    pub(super) fn provider_notice(&mut self, input: Input) -> Option<Input> {
        let (call, event) = match &input {
            Input::Model { call, event } => (call, event),
            Input::ModelFailed { call, .. } => {
                self.provider_notices.calls.retain(|c| c.0 != *call);
                return Some(input);
            }
            _ => return Some(input),
        };
        let call = *call;
        if let Some(waiting) = self
            .provider_notices
            .waiting
            .iter_mut()
            .find(|w| w.call == call)
        {
            waiting.held.push_back(input);
            return None;
        }
        let position = self.provider_notices.calls.iter().position(|c| c.0 == call);
        let payload = match (event, position) {
            (StreamEvent::Patch(Patch::ProviderResponse { status, headers }), Some(_)) => {
                HookPayload::AfterProviderResponse {
                    status: *status,
                    headers: headers.clone(),
                }
            }
            (StreamEvent::Patch(Patch::ProviderData(data)), Some(at)) => {
                let asked = &self.provider_notices.calls[at].1;
                HookPayload::ProviderStreamEvent {
                    data: data.clone(),
                    provider: asked.provider.clone(),
                    api: asked.api.clone(),
                    model: asked.model.clone(),
                }
            }
            // A report nobody asked for says nothing.
            (StreamEvent::Patch(Patch::ProviderResponse { .. } | Patch::ProviderData(_)), None) => {
                return None
            }
            (StreamEvent::Done { .. } | StreamEvent::Error { .. }, Some(at)) => {
                self.provider_notices.calls.remove(at);
                return Some(input);
            }
            _ => return Some(input),
        };
        let hook = self.agent.reserve_call();
        self.provider_notices.waiting.push(Waiting {
            hook,
            call,
            held: VecDeque::new(),
        });
        self.push_hook(hook, payload);
        None
    }

    /// Whether `call` is a notice of a provider's answer being heard.
    pub(super) fn awaits_provider_notice(&self, call: CallId) -> bool {
        self.provider_notices.waiting.iter().any(|w| w.hook == call)
    }

    /// A notice was heard: its handlers' actions apply, then the call's held stream events go
    /// on in order (a later report among them is asked in turn and holds the rest), then the
    /// abort a handler asked for.
    pub(super) fn provider_notice_heard(
        &mut self,
        hook: CallId,
        outcome: &HookOutcome,
    ) -> Result<(), SessionError> {
        let Some(index) = self
            .provider_notices
            .waiting
            .iter()
            .position(|w| w.hook == hook)
        else {
            return Ok(());
        };
        let waiting = self.provider_notices.waiting.remove(index);
        self.apply_asked_actions(&outcome.actions)?;
        for input in waiting.held {
            self.answer(input)?;
        }
        if outcome.actions.iter().any(HookAction::aborts) {
            self.abort()?;
        }
        Ok(())
    }
}
