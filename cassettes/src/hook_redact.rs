//! What a hook point carries of a model call, redacted as the request and response lines
//! redact theirs: the headers an extension hands the provider (`before_provider_headers`'s
//! decision), the body it sends (`before_provider_request`'s decision, under the user's JSON-path
//! rules) and the response's headers an extension is told of (`after_provider_response`'s
//! question). The same value gets the same placeholder in both places, so a replay sends, and is
//! asked, what the recording holds, and no credential a handler set or a provider answered
//! reaches the file.

use serde_json::{Map, Value};

use pi_core::agent::hooks::{HookDecision, HookPayload};
use pi_core::agent::{Effect, Input};
use pi_core::agent_session::SessionInput;

use crate::write::Recorder;

/// `effect` as the cassette holds it, when it carries headers to redact.
pub fn redacted_effect(recorder: &Recorder, effect: &Effect) -> Option<Effect> {
    let Effect::Hook {
        call,
        payload: HookPayload::AfterProviderResponse { status, headers },
        ..
    } = effect
    else {
        return None;
    };
    let headers = redacted(headers, |h| recorder.redact_response_headers(h));
    Some(Effect::Hook {
        call: *call,
        payload: HookPayload::AfterProviderResponse {
            status: *status,
            headers,
        },
        state: None,
    })
}

/// `input` as the cassette holds it, when it carries headers to redact.
pub fn redacted_answer(recorder: &Recorder, input: &SessionInput) -> Option<SessionInput> {
    let SessionInput::Answer(Input::HookDecided { call, outcome }) = input else {
        return None;
    };
    let decision = match &outcome.decision {
        HookDecision::BeforeProviderHeaders { headers } => HookDecision::BeforeProviderHeaders {
            headers: redacted(headers, |h| recorder.redact_headers(h)),
        },
        HookDecision::BeforeProviderRequest { payload } => HookDecision::BeforeProviderRequest {
            payload: recorder.redact_body(payload),
        },
        _ => return None,
    };
    let mut outcome = outcome.clone();
    outcome.decision = decision;
    Some(SessionInput::Answer(Input::HookDecided {
        call: *call,
        outcome,
    }))
}

/// `headers` with their string values passed through `redact`, in their order.
fn redacted(
    headers: &Map<String, Value>,
    redact: impl Fn(&[(String, String)]) -> Vec<(String, String)>,
) -> Map<String, Value> {
    let strings: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
        .collect();
    let mut replaced = redact(&strings).into_iter();
    headers
        .iter()
        .map(|(name, value)| match value {
            Value::String(_) => {
                let (_, value) = replaced.next().unwrap_or_default();
                (name.clone(), Value::String(value))
            }
            other => (name.clone(), other.clone()),
        })
        .collect()
}
