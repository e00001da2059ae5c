//! The warm request as Pi 1.5.2 sends it (`getCacheWarmingRequestOptions`: the request's
//! options plus `maxTokens: 1, disableContinuation: true, maxRetries: 0`): without an Anthropic
//! message thread, which leaves the session's thread state as the agent's own calls left it,
//! and never sent again by the SDK; a failed warm writes and emits nothing, is not retried, and
//! schedules the next warm. Extensions may override the decision (`cache_warming_decision`,
//! where a handler is registered): the last handler that returns an action wins, a warm they
//! asked for is noted on its entry, and a stop ends the run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    Composer, HandledHooks, HandlerResult, HookDecision, HookEvent, HookOutcome, HookPayload,
    WarmAction,
};
use pi_core::agent::ThreadState;
use pi_core::agent::{AgentConfig, CallId, Effect, Input, ModelRequest, Patch, StreamEvent};
use pi_core::agent_session::{
    CacheRetentionKind, CacheWarming, CacheWarmingMode, SessionInput, SessionMachine, SessionStep,
};
use pi_core::event::{Event, SessionEvent};
use pi_core::message::{AssistantMessage, StopReason, Usage};
use pi_core::script::mock_model;
use pi_core::session::entry::SessionEntry;

#[path = "support/session.rs"]
mod support;

/// A session whose model's 12 s prompt cache gives a 2 s warming delay, priced so that a warm
/// pays even idle.
fn session() -> SessionMachine {
    session_with(1000.0, HandledHooks::default())
}

/// The same with the model's input price (dollars per million tokens) and the hook points
/// extensions handle.
fn session_with(input_price: f64, handled: HandledHooks) -> SessionMachine {
    let mut model = mock_model();
    model
        .extra
        .insert("promptCache".into(), serde_json::json!({"short": 12}));
    model.cost.input = input_price;
    let mut machine = support::machine(
        AgentConfig {
            model,
            session_id: Some("s1".into()),
            handled_hooks: handled,
            ..AgentConfig::default()
        },
        Default::default(),
    );
    machine.set_cache_warming(Some(CacheWarming {
        mode: CacheWarmingMode::Idle,
        retention: CacheRetentionKind::Short,
    }));
    machine
}

fn prompt(text: &str) -> SessionInput {
    SessionInput::Prompt {
        text: text.into(),
        images: vec![],
        streaming_behavior: None,
    }
}

fn model_call(step: &SessionStep) -> Option<(CallId, ModelRequest)> {
    step.effects.iter().find_map(|e| match e {
        Effect::CallModel { call, request } => Some((*call, request.clone())),
        _ => None,
    })
}

fn reply(id: &str) -> Option<ThreadState> {
    Some(ThreadState::Reply {
        prefix_count: 2,
        prefix_hash: format!("hash-{id}"),
        reply_id: id.into(),
    })
}

/// Answers `call`: first the thread state the call hands back, then its final event.
fn answer(
    s: &mut SessionMachine,
    now: u64,
    call: CallId,
    thread: Option<ThreadState>,
    reason: StopReason,
) -> SessionStep {
    s.step(
        now,
        SessionInput::Answer(Input::Model {
            call,
            event: StreamEvent::Patch(Patch::Thread(thread)),
        }),
    )
    .unwrap();
    let message = AssistantMessage {
        stop_reason: reason,
        usage: Usage {
            input: 100_000,
            output: 1,
            ..Usage::default()
        },
        ..AssistantMessage::default()
    };
    let event = if reason == StopReason::Error {
        StreamEvent::Error {
            reason,
            error: message,
        }
    } else {
        StreamEvent::Done { reason, message }
    };
    s.step(now, SessionInput::Answer(Input::Model { call, event }))
        .unwrap()
}

fn usage_entries(s: &SessionMachine) -> usize {
    s.tree()
        .entries()
        .iter()
        .filter(|e| matches!(e, SessionEntry::Usage(_)))
        .count()
}

fn appended(step: &SessionStep) -> bool {
    step.events
        .iter()
        .any(|e| matches!(e, Event::Session(SessionEvent::EntryAppended { .. })))
}

#[test]
fn the_warm_request_has_no_thread_and_no_retries_and_leaves_the_sessions_thread() {
    let mut s = session();
    let (call, first) = model_call(&s.step(0, prompt("Hello")).unwrap()).unwrap();
    assert_eq!(
        first.max_retries, None,
        "the agent's own turns keep the setting"
    );
    let settled = answer(&mut s, 10, call, reply("msg_1"), StopReason::Stop);
    assert_eq!(settled.wake_at, Some(2_000), "the delay from the request");

    let (warm_call, warm) = model_call(&s.step(2_000, SessionInput::Wake).unwrap())
        .expect("the warm request at the delay");
    assert_eq!(warm.max_tokens, Some(1));
    assert_eq!(
        warm.thread,
        Some(ThreadState::Off),
        "1.5.2's disableContinuation: the warm sends no message thread"
    );
    assert_eq!(warm.max_retries, Some(0), "1.5.2's maxRetries: 0");
    assert_eq!(warm.messages, first.messages);

    // Whatever the warm call hands back is not the session's thread state.
    answer(
        &mut s,
        2_020,
        warm_call,
        reply("msg_warm"),
        StopReason::Stop,
    );
    assert_eq!(usage_entries(&s), 1);
    let (_, next) = model_call(&s.step(3_000, prompt("Again")).unwrap()).unwrap();
    assert_eq!(next.thread, reply("msg_1"));
    assert_eq!(next.max_retries, None);
}

#[test]
fn a_failed_warm_writes_nothing_is_not_retried_and_the_next_is_scheduled() {
    let mut s = session();
    let (call, _) = model_call(&s.step(0, prompt("Hello")).unwrap()).unwrap();
    answer(&mut s, 10, call, None, StopReason::Stop);
    let (warm_call, _) = model_call(&s.step(2_000, SessionInput::Wake).unwrap()).unwrap();
    let failed = answer(&mut s, 2_050, warm_call, None, StopReason::Error);
    assert!(model_call(&failed).is_none(), "no retry of a warm");
    assert!(!appended(&failed), "a failed warm emits nothing");
    assert!(failed.events.is_empty(), "{:?}", failed.events);
    assert_eq!(usage_entries(&s), 0);
    assert!(!s.is_retrying());
    assert_eq!(
        failed.wake_at,
        Some(4_050),
        "the next warm, the delay from now"
    );
    let (_, again) = model_call(&s.step(4_050, SessionInput::Wake).unwrap()).unwrap();
    assert_eq!(again.max_retries, Some(0));
}

fn hook(step: &SessionStep) -> Option<(CallId, serde_json::Value)> {
    step.effects.iter().find_map(|e| match e {
        Effect::Hook { call, payload, .. } => Some((*call, serde_json::to_value(payload).unwrap())),
        _ => None,
    })
}

fn decided(call: CallId, action: WarmAction) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::CacheWarmingDecision { action },
            actions: vec![],
            errors: vec![],
        },
    })
}

fn warming_decisions() -> HandledHooks {
    HandledHooks::of([HookEvent::CacheWarmingDecision])
}

#[test]
fn an_extension_may_warm_where_pi_would_stop_and_the_entry_says_so() {
    // $0.001 per million input tokens: a miss saves far less than $0.05, so Pi says stop.
    let mut s = session_with(0.001, warming_decisions());
    let (call, _) = model_call(&s.step(0, prompt("Hello")).unwrap()).unwrap();
    answer(&mut s, 10, call, None, StopReason::Stop);
    let due = s.step(2_000, SessionInput::Wake).unwrap();
    assert!(model_call(&due).is_none(), "the extensions decide first");
    let (hook_call, payload) = hook(&due).expect("the cache_warming_decision event");
    assert_eq!(payload["type"], "cache_warming_decision");
    assert_eq!(payload["action"], "stop");
    assert_eq!(payload["continuationProbability"], 0.15);
    assert!(payload["warmCost"].as_f64().unwrap() >= 0.0);
    assert!(payload["missCost"].as_f64().unwrap() > 0.0);
    assert_eq!(due.wake_at, None, "no timer while the extensions decide");
    assert!(s.is_warming());

    let warm = s.step(2_005, decided(hook_call, WarmAction::Warm)).unwrap();
    let (warm_call, request) = model_call(&warm).expect("the warm the extension asked for");
    assert_eq!(request.max_tokens, Some(1));
    answer(&mut s, 2_020, warm_call, None, StopReason::Stop);
    let notes: Vec<Option<String>> = s
        .tree()
        .entries()
        .iter()
        .filter_map(|e| match e {
            SessionEntry::Usage(u) => Some(u.note.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notes, [Some("extension override".to_owned())]);
}

#[test]
fn an_extensions_stop_ends_the_run_and_its_own_decision_is_no_override() {
    let mut s = session_with(1000.0, warming_decisions());
    let (call, _) = model_call(&s.step(0, prompt("Hello")).unwrap()).unwrap();
    answer(&mut s, 10, call, None, StopReason::Stop);
    let due = s.step(2_000, SessionInput::Wake).unwrap();
    let (hook_call, payload) = hook(&due).unwrap();
    assert_eq!(payload["action"], "warm");
    let stopped = s.step(2_001, decided(hook_call, WarmAction::Stop)).unwrap();
    assert!(model_call(&stopped).is_none());
    assert_eq!(stopped.wake_at, None);
    assert!(!s.is_warming());

    // Pi's own decision handed back: a warm without a note.
    let (call, _) = model_call(&s.step(3_000, prompt("Again")).unwrap()).unwrap();
    answer(&mut s, 3_010, call, None, StopReason::Stop);
    let (hook_call, _) = hook(&s.step(5_000, SessionInput::Wake).unwrap()).unwrap();
    let warm = s.step(5_000, decided(hook_call, WarmAction::Warm)).unwrap();
    let (warm_call, _) = model_call(&warm).unwrap();
    answer(&mut s, 5_010, warm_call, None, StopReason::Stop);
    let usage = s
        .tree()
        .entries()
        .iter()
        .find_map(|e| match e {
            SessionEntry::Usage(u) => Some(u.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(usage.note, None);
}

#[test]
fn a_decision_that_comes_after_a_new_request_is_dropped() {
    let mut s = session_with(1000.0, warming_decisions());
    let (call, _) = model_call(&s.step(0, prompt("Hello")).unwrap()).unwrap();
    answer(&mut s, 10, call, None, StopReason::Stop);
    let (hook_call, _) = hook(&s.step(2_000, SessionInput::Wake).unwrap()).unwrap();
    let (next, _) = model_call(&s.step(2_001, prompt("Again")).unwrap()).unwrap();
    let late = s.step(2_002, decided(hook_call, WarmAction::Warm)).unwrap();
    assert!(
        model_call(&late).is_none(),
        "the old run's decision sends nothing"
    );
    answer(&mut s, 2_010, next, None, StopReason::Stop);
    assert_eq!(usage_entries(&s), 0);
}

#[test]
fn the_last_handler_that_returns_an_action_wins_and_each_sees_pis_decision() {
    let mut composer = Composer::new(HookPayload::CacheWarmingDecision {
        warm_cost: 0.01,
        miss_cost: 1.0,
        continuation_probability: 0.15,
        action: WarmAction::Warm,
    });
    composer.apply(Some(HandlerResult::CacheWarmingDecision {
        action: Some(WarmAction::Stop),
    }));
    let HookPayload::CacheWarmingDecision { action, .. } = composer.payload() else {
        unreachable!()
    };
    assert_eq!(
        *action,
        WarmAction::Warm,
        "Pi passes every handler the same event"
    );
    composer.apply(None);
    composer.apply(Some(HandlerResult::CacheWarmingDecision { action: None }));
    composer.thrown("boom".into());
    assert_eq!(
        composer.finish(),
        HookDecision::CacheWarmingDecision {
            action: WarmAction::Stop
        }
    );
}
