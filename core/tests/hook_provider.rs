//! The provider hooks before a turn's request goes out (Pi 1.5.2's `transformHeaders` and
//! `onPayload`): where an extension handles `before_provider_headers` or
//! `before_provider_request`, the agent's model call is held while the session asks, headers
//! first, and goes out carrying the decided headers and body; the handlers' actions are applied
//! before it. A session without such handlers sends its call at once, carrying nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload};
use pi_core::agent::{CallId, Effect, ProviderHooked};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::session::entry::SessionEntry;
use serde_json::{json, Map, Value};

#[path = "support/session.rs"]
mod support;
use support::{answered, decided_as, hooked, hooks, kinds, prompt, requests};

fn headers(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

/// A session whose extensions handle `handled`, with Pi's default compaction settings.
fn session(handled: &[HookEvent]) -> SessionMachine {
    hooked(handled, vec![], &[], CompactionSettings::default())
}

/// Hook point `call` decided the `headers`, the handlers having asked for `actions`.
fn headers_decided(
    call: CallId,
    headers: Map<String, Value>,
    actions: Vec<HookAction>,
) -> SessionInput {
    decided_as(
        call,
        HookDecision::BeforeProviderHeaders { headers },
        actions,
    )
}

/// Hook point `call` decided the body `payload`.
fn body_decided(call: CallId, payload: Value) -> SessionInput {
    decided_as(
        call,
        HookDecision::BeforeProviderRequest { payload },
        vec![],
    )
}

/// That `step` made one model call, carrying the decided `headers` and `payload`: its id.
fn assert_one_call_carrying(
    step: &SessionStep,
    headers: Option<Map<String, Value>>,
    payload: Option<Value>,
) -> CallId {
    let sent = requests(step);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].1.provider_hooked.as_deref(),
        Some(&ProviderHooked {
            headers,
            payload,
            ..ProviderHooked::default()
        })
    );
    sent[0].0
}

#[test]
fn without_handlers_the_call_goes_out_at_once_carrying_nothing() {
    let mut m = session(&[]);
    let step = m.step(1, prompt("hi")).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert!(hooks(&step).is_empty());
    assert_eq!(sent[0].1.provider_hooked, None);
}

#[test]
fn headers_then_body_are_asked_and_the_call_carries_both_decisions() {
    let handled = [
        HookEvent::BeforeProviderHeaders,
        HookEvent::BeforeProviderRequest,
    ];
    let mut m = session(&handled);
    let step = m.step(1, prompt("hi")).unwrap();
    assert!(requests(&step).is_empty(), "the call waits for its hooks");
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    // The machine asks with empty headers: the interpreter fills them in from the request.
    assert_eq!(
        serde_json::to_value(&asked[0].1).unwrap(),
        json!({"type": "before_provider_headers", "headers": {}})
    );
    let HookPayload::BeforeProviderHeaders {
        request: Some(request),
        ..
    } = &asked[0].1
    else {
        panic!("the question carries its request: {:?}", asked[0].1);
    };
    assert_eq!(request.model.id, "mock-model");

    let decided = headers(json!({"x-api-key": "gateway-key"}));
    let entry = HookAction::AppendEntry {
        custom_type: "headers".into(),
        data: Some(json!({"seen": true})),
    };
    let step = m
        .step(2, headers_decided(asked[0].0, decided.clone(), vec![entry]))
        .unwrap();
    assert!(requests(&step).is_empty(), "the call waits for its body");
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        serde_json::to_value(&asked[0].1).unwrap(),
        json!({"type": "before_provider_request", "payload": null})
    );
    // The body is built with the headers decided so far.
    let HookPayload::BeforeProviderRequest {
        request: Some(request),
        ..
    } = &asked[0].1
    else {
        panic!("the question carries its request: {:?}", asked[0].1);
    };
    assert_eq!(
        request
            .provider_hooked
            .as_deref()
            .and_then(|h| h.headers.clone()),
        Some(decided.clone())
    );

    let body = json!({"model": "mock-model", "metadata": {"tag": "first+second"}});
    let step = m.step(3, body_decided(asked[0].0, body.clone())).unwrap();
    let call = assert_one_call_carrying(&step, Some(decided), Some(body));
    let step = m.step(4, answered(call, "done")).unwrap();
    assert!(kinds(&step).contains(&"agent_end".to_owned()));
    // The handlers' entry stands before the answer, as Pi appends it before the request.
    let types: Vec<&str> = m
        .tree()
        .entries()
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Custom(c) => Some(c.custom_type.as_str()),
            SessionEntry::Message(msg) => Some(msg.message.role()),
            _ => None,
        })
        .collect();
    assert_eq!(types, ["user", "headers", "assistant"]);
}

#[test]
fn only_the_body_is_asked_where_only_before_provider_request_is_handled() {
    let mut m = session(&[HookEvent::BeforeProviderRequest]);
    let step = m.step(1, prompt("hi")).unwrap();
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1.event(), HookEvent::BeforeProviderRequest);
    let body = json!({"model": "other"});
    let step = m.step(2, body_decided(asked[0].0, body.clone())).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    let hooked = sent[0].1.provider_hooked.as_deref().unwrap();
    assert_eq!(hooked.headers, None);
    assert_eq!(hooked.payload, Some(body));
}

#[test]
fn an_abort_while_the_call_is_held_cancels_it_once_it_starts() {
    let mut m = session(&[HookEvent::BeforeProviderRequest]);
    let step = m.step(1, prompt("hi")).unwrap();
    let asked = hooks(&step);
    let step = m.step(2, SessionInput::Abort).unwrap();
    assert!(requests(&step).is_empty());
    let step = m.step(3, body_decided(asked[0].0, json!({}))).unwrap();
    let calls: Vec<String> = step
        .effects
        .iter()
        .map(|e| match e {
            Effect::CallModel { call, .. } => format!("call {call:?}"),
            Effect::Cancel { call } => format!("cancel {call:?}"),
            other => format!("{other:?}"),
        })
        .collect();
    let started = requests(&step)[0].0;
    assert_eq!(
        calls,
        [format!("call {started:?}"), format!("cancel {started:?}")]
    );
}

/// A session that went through one turn with both provider hooks handled, answered.
fn after_a_turn() -> SessionMachine {
    let handled = [
        HookEvent::BeforeProviderHeaders,
        HookEvent::BeforeProviderRequest,
    ];
    let compaction = CompactionSettings {
        keep_recent_tokens: 1,
        ..CompactionSettings::default()
    };
    let mut m = hooked(&handled, vec![], &[], compaction);
    for (at, text) in [(1, "First prompt."), (4, "Second prompt.")] {
        let step = m.step(at, prompt(text)).unwrap();
        let step = m.step(at, support::done(hooks(&step)[0].0)).unwrap();
        let step = m.step(at, support::done(hooks(&step)[0].0)).unwrap();
        let (call, _) = requests(&step)[0].clone();
        m.step(at + 1, answered(call, "An answer.")).unwrap();
    }
    m
}

#[test]
fn a_compaction_summary_asks_for_the_headers_only() {
    let mut m = after_a_turn();
    let step = m.step(6, support::manual("short")).unwrap();
    assert!(
        requests(&step).is_empty(),
        "the summary waits for its headers"
    );
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1.event(), HookEvent::BeforeProviderHeaders);
    let decided = headers(json!({"x-summary": "1"}));
    let step = m
        .step(7, headers_decided(asked[0].0, decided.clone(), vec![]))
        .unwrap();
    assert!(hooks(&step).is_empty(), "no body is asked for a summary");
    assert_one_call_carrying(&step, Some(decided), None);
}

#[test]
fn an_abort_while_a_summary_is_held_cancels_it_once_it_starts() {
    let mut m = after_a_turn();
    let step = m.step(6, support::manual("short")).unwrap();
    let asked = hooks(&step);
    let step = m.step(7, SessionInput::Abort).unwrap();
    assert!(
        !step
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Cancel { .. })),
        "the cancel waits for the held call: {:?}",
        step.effects
    );
    let step = m.step(8, support::done(asked[0].0)).unwrap();
    let started = requests(&step)[0].0;
    assert!(step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Cancel { call } if *call == started)));
}
