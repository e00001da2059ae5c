//! The provider's answer told to the extensions (Pi 1.5.2's `onResponse` and
//! `onProviderStreamEvent`): where `after_provider_response` or `provider_stream_event` is
//! handled, a turn's request asks the providers to report its head and data; each report is a
//! hook point, and the call's later stream events wait until its handlers are done, their
//! actions applied first. Nobody listening, the request asks for nothing; summaries never do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload};
use pi_core::agent::{CallId, Input, ModelRequest, Patch, ProviderHooked, StreamEvent};
use pi_core::agent_session::{SessionInput, SessionMachine};
use pi_core::compaction::CompactionSettings;
use pi_core::session::entry::SessionEntry;
use serde_json::{json, Map};

#[path = "support/session.rs"]
mod support;
use support::{answered, decided_as, hooked, hooks, kinds, prompt, requests};

fn patch(call: CallId, patch: Patch) -> SessionInput {
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Patch(patch),
    })
}

fn head(call: CallId) -> SessionInput {
    let mut headers = Map::new();
    headers.insert("content-type".into(), json!("text/event-stream"));
    patch(
        call,
        Patch::ProviderResponse {
            status: 200,
            headers,
        },
    )
}

fn entry(custom_type: &str) -> HookAction {
    HookAction::AppendEntry {
        custom_type: custom_type.into(),
        data: None,
    }
}

/// The session's entries: custom ones by type, messages by role.
fn entries(m: &SessionMachine) -> Vec<String> {
    m.tree()
        .entries()
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Custom(c) => Some(c.custom_type.clone()),
            SessionEntry::Message(msg) => Some(msg.message.role().to_owned()),
            _ => None,
        })
        .collect()
}

/// A session whose extensions handle `handled`, with Pi's default compaction settings.
fn session(handled: &[HookEvent]) -> SessionMachine {
    hooked(handled, vec![], &[], CompactionSettings::default())
}

/// At `now`, the prompt `text`: the step's first model call and its request.
fn first_call(m: &mut SessionMachine, now: u64, text: &str) -> (CallId, ModelRequest) {
    let step = m.step(now, prompt(text)).unwrap();
    requests(&step)[0].clone()
}

/// That `request` asks for the provider reports `expected` says.
fn assert_reports(request: &ModelRequest, expected: ProviderHooked) {
    assert_eq!(request.provider_hooked.as_deref(), Some(&expected));
}

#[test]
fn nobody_listening_the_request_asks_for_no_report() {
    let mut m = session(&[HookEvent::TurnEnd]);
    let (_, request) = first_call(&mut m, 1, "hi");
    assert_eq!(request.provider_hooked, None);
}

#[test]
fn the_head_then_each_event_is_asked_and_the_stream_waits_for_each() {
    let handled = [
        HookEvent::AfterProviderResponse,
        HookEvent::ProviderStreamEvent,
    ];
    let mut m = session(&handled);
    let step = m.step(1, prompt("hi")).unwrap();
    assert!(hooks(&step).is_empty(), "nothing is asked before the call");
    let (call, request) = requests(&step)[0].clone();
    assert_reports(
        &request,
        ProviderHooked {
            response: true,
            stream: true,
            ..ProviderHooked::default()
        },
    );

    let step = m.step(2, head(call)).unwrap();
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        serde_json::to_value(&asked[0].1).unwrap(),
        json!({"type": "after_provider_response", "status": 200,
               "headers": {"content-type": "text/event-stream"}})
    );
    // The stream waits: the answer's start and data are held.
    let data = json!({"choices": [{"finish_reason": "stop"}]});
    let step = m
        .step(3, patch(call, Patch::ProviderData(data.clone())))
        .unwrap();
    assert!(step.events.is_empty() && step.effects.is_empty());
    let step = m.step(4, answered(call, "An answer.")).unwrap();
    assert!(step.events.is_empty() && step.effects.is_empty());

    // Heard: its entry is written, then the data held is asked about, holding the answer.
    let step = m
        .step(
            5,
            decided_as(asked[0].0, HookDecision::Done, vec![entry("response")]),
        )
        .unwrap();
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    let HookPayload::ProviderStreamEvent {
        data: told,
        provider,
        api,
        model,
    } = &asked[0].1
    else {
        panic!("the data is asked about: {:?}", asked[0].1);
    };
    assert_eq!(
        (told, provider.as_str(), api.as_str(), model.as_str()),
        (&data, "mock", "openai-completions", "mock-model")
    );
    assert!(!kinds(&step).contains(&"message_end".to_owned()));
    assert_eq!(entries(&m), ["user", "response"]);

    let step = m
        .step(
            6,
            decided_as(asked[0].0, HookDecision::Done, vec![entry("finish")]),
        )
        .unwrap();
    assert!(kinds(&step).contains(&"agent_end".to_owned()));
    assert_eq!(entries(&m), ["user", "response", "finish", "assistant"]);
}

#[test]
fn a_report_nobody_asked_for_says_nothing() {
    let mut m = session(&[HookEvent::TurnEnd]);
    let (call, _) = first_call(&mut m, 1, "hi");
    let step = m.step(2, head(call)).unwrap();
    assert!(step.events.is_empty() && step.effects.is_empty());
}

#[test]
fn a_handler_abort_stops_the_stream_after_the_events_it_held() {
    let mut m = session(&[HookEvent::ProviderStreamEvent]);
    let (call, request) = first_call(&mut m, 1, "hi");
    assert_reports(
        &request,
        ProviderHooked {
            stream: true,
            ..ProviderHooked::default()
        },
    );
    let step = m
        .step(2, patch(call, Patch::ProviderData(json!({}))))
        .unwrap();
    let asked = hooks(&step)[0].0;
    let step = m
        .step(
            3,
            decided_as(asked, HookDecision::Done, vec![HookAction::Abort]),
        )
        .unwrap();
    assert!(step
        .effects
        .iter()
        .any(|e| matches!(e, pi_core::agent::Effect::Cancel { call: c } if *c == call)));
}

#[test]
fn a_compaction_summary_reports_nothing() {
    let compaction = CompactionSettings {
        keep_recent_tokens: 1,
        ..CompactionSettings::default()
    };
    let mut m = hooked(&[HookEvent::ProviderStreamEvent], vec![], &[], compaction);
    for (at, text) in [(1, "First prompt."), (10, "Second prompt.")] {
        let (call, _) = first_call(&mut m, at, text);
        m.step(at + 1, answered(call, "An answer.")).unwrap();
    }
    let step = m.step(20, support::manual("short")).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.provider_hooked, None);
}

/// A session that warms its model's 12 s prompt cache 2 s after each answer, with
/// `after_provider_response` handled.
fn warming() -> SessionMachine {
    let mut model = pi_core::script::mock_model();
    model
        .extra
        .insert("promptCache".into(), json!({"short": 12}));
    model.cost.input = 1000.0;
    let mut machine = support::machine(
        pi_core::agent::AgentConfig {
            model,
            session_id: Some("s1".into()),
            handled_hooks: pi_core::agent::hooks::HandledHooks::of([
                HookEvent::AfterProviderResponse,
            ]),
            ..pi_core::agent::AgentConfig::default()
        },
        Default::default(),
    );
    machine.set_cache_warming(Some(pi_core::agent_session::CacheWarming {
        mode: pi_core::agent_session::CacheWarmingMode::Idle,
        retention: pi_core::agent_session::CacheRetentionKind::Short,
    }));
    machine
}

/// Model call `call` answered over a 100,000-token prompt (worth warming).
fn answered_long(call: CallId) -> SessionInput {
    let message = pi_core::message::AssistantMessage {
        stop_reason: pi_core::message::StopReason::Stop,
        usage: pi_core::message::Usage {
            input: 100_000,
            output: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Done {
            reason: message.stop_reason,
            message,
        },
    })
}

#[test]
fn a_cache_warm_reports_its_answer_as_the_turn_it_repeats() {
    let mut m = warming();
    let (call, _) = first_call(&mut m, 0, "Hello");
    m.step(10, answered_long(call)).unwrap();
    let due = m.step(2_000, SessionInput::Wake).unwrap();
    let (warm, request) = requests(&due)[0].clone();
    assert_eq!(request.max_tokens, Some(1));
    assert_reports(
        &request,
        ProviderHooked {
            response: true,
            ..ProviderHooked::default()
        },
    );
    let step = m.step(2_010, head(warm)).unwrap();
    let asked = hooks(&step);
    assert_eq!(asked[0].1.event(), HookEvent::AfterProviderResponse);
    let usage = |m: &SessionMachine| {
        m.tree()
            .entries()
            .iter()
            .filter(|e| matches!(e, SessionEntry::Usage(_)))
            .count()
    };
    m.step(2_020, answered_long(warm)).unwrap();
    assert_eq!(usage(&m), 0, "the warm's answer waits for the notice");
    m.step(2_030, decided_as(asked[0].0, HookDecision::Done, vec![]))
        .unwrap();
    assert_eq!(usage(&m), 1);
}
