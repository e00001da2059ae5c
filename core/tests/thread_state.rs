//! The machine hands each model request the session's message-thread state as the last call
//! that sent a thread handed it back (`Patch::Thread`, before its final event), which Pi 1.5.2's
//! Anthropic provider keeps per session and only threaded calls change: none for the first
//! request, the same through calls that hand back nothing, none after a change of session, and
//! the same on every run of the same inputs; and the diagnostics of the session's earlier
//! answers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Change, Effect, Input, ModelRequest, Patch, Prompt, Step,
    StreamEvent, ThreadState,
};
use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
use pi_core::script::mock_model;

fn machine() -> AgentMachine {
    AgentMachine::new(AgentConfig {
        model: mock_model(),
        session_id: Some("s1".into()),
        ..AgentConfig::default()
    })
}

fn call(step: &Step) -> (CallId, ModelRequest) {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, request } => Some((*call, request.clone())),
            _ => None,
        })
        .expect("a model call")
}

fn answer(id: &str, reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::text(id)],
        stop_reason: reason,
        response_id: Some(id.into()),
        timestamp: 1,
        ..AssistantMessage::default()
    }
}

fn reply_state(id: &str, count: usize) -> Option<ThreadState> {
    Some(ThreadState::Reply {
        prefix_count: count,
        prefix_hash: format!("h{count}"),
        reply_id: id.into(),
    })
}

/// Prompts `text` and answers with `reply` (an error event when it is an error), the call
/// handing back `thread` first when it sent a thread (`Some`).
fn threaded_turn(
    m: &mut AgentMachine,
    now: u64,
    text: &str,
    thread: Option<Option<ThreadState>>,
    reply: AssistantMessage,
) -> ModelRequest {
    let (id, request) = call(&m.step(now, Input::Prompt(Prompt::text(text))).unwrap());
    if let Some(state) = thread {
        let event = StreamEvent::Patch(Patch::Thread(state));
        m.step(now, Input::Model { call: id, event }).unwrap();
    }
    let event = match reply.stop_reason {
        StopReason::Error => StreamEvent::Error {
            reason: StopReason::Error,
            error: reply,
        },
        reason => StreamEvent::Done {
            reason,
            message: reply,
        },
    };
    m.step(now + 1, Input::Model { call: id, event }).unwrap();
    request
}

/// A turn whose call sent no thread.
fn turn(m: &mut AgentMachine, now: u64, text: &str, reply: AssistantMessage) -> ModelRequest {
    threaded_turn(m, now, text, None, reply)
}

#[test]
fn each_request_carries_the_state_the_last_threaded_call_handed_back() {
    let mut m = machine();
    let first = threaded_turn(
        &mut m,
        10,
        "hi",
        Some(reply_state("msg_1", 2)),
        answer("msg_1", StopReason::Stop),
    );
    assert_eq!(first.thread, None);
    // A call that sends no thread (another model, threads off) leaves the state as it was,
    // failed or not.
    let second = turn(&mut m, 20, "more", answer("msg_2", StopReason::Stop));
    assert_eq!(second.thread, reply_state("msg_1", 2));
    let third = turn(&mut m, 30, "again", answer("msg_3", StopReason::Error));
    assert_eq!(third.thread, reply_state("msg_1", 2));
    // A failed threaded call hands back what it left: none after a continue.
    let fourth = threaded_turn(
        &mut m,
        40,
        "go on",
        Some(None),
        answer("msg_4", StopReason::Error),
    );
    assert_eq!(fourth.thread, reply_state("msg_1", 2));
    let fifth = threaded_turn(
        &mut m,
        50,
        "once more",
        Some(Some(ThreadState::Off)),
        answer("msg_5", StopReason::Stop),
    );
    assert_eq!(fifth.thread, None);
    let sixth = turn(&mut m, 60, "last", answer("msg_6", StopReason::Stop));
    assert_eq!(sixth.thread, Some(ThreadState::Off));
}

#[test]
fn another_session_starts_without_the_thread_state() {
    let mut m = machine();
    let state = reply_state("msg_1", 2);
    threaded_turn(
        &mut m,
        10,
        "hi",
        Some(state.clone()),
        answer("msg_1", StopReason::Stop),
    );
    m.step(20, Input::Change(Change::SessionId(Some("s1".into()))))
        .unwrap();
    let same = turn(&mut m, 30, "more", answer("msg_2", StopReason::Stop));
    assert_eq!(same.thread, state, "the same session keeps it");
    m.step(40, Input::Change(Change::SessionId(Some("s2".into()))))
        .unwrap();
    let other = turn(&mut m, 50, "new", answer("msg_3", StopReason::Stop));
    assert_eq!(other.thread, None);
}

#[test]
fn the_same_inputs_hand_the_same_states() {
    let run = || {
        let mut m = machine();
        (0..3)
            .map(|k| {
                let id = format!("msg_{k}");
                let state = reply_state(&id, 2 * k + 2);
                let reply = answer(&id, StopReason::Stop);
                threaded_turn(&mut m, 10 * (k as u64 + 1), "x", Some(state), reply).thread
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
    assert_eq!(run()[2], reply_state("msg_1", 4));
}

fn noted(id: &str, reason: StopReason, diagnostic: &str) -> AssistantMessage {
    AssistantMessage {
        diagnostics: Some(vec![serde_json::json!({"type": diagnostic})]),
        ..answer(id, reason)
    }
}

/// The diagnostics of every earlier answer of the session reach each later request, a failed
/// answer's included (Pi's providers keep such state per session, whatever the answer), and
/// another session starts without them.
#[test]
fn each_request_carries_the_sessions_diagnostics() {
    let types = |request: &ModelRequest| -> Vec<String> {
        request
            .session_diagnostics
            .iter()
            .map(|d| d["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut m = machine();
    let first = turn(&mut m, 10, "hi", noted("msg_1", StopReason::Stop, "a"));
    assert!(types(&first).is_empty());
    let second = turn(&mut m, 20, "more", noted("msg_2", StopReason::Error, "b"));
    assert_eq!(types(&second), ["a"]);
    let third = turn(&mut m, 30, "again", answer("msg_3", StopReason::Stop));
    assert_eq!(types(&third), ["a", "b"], "a failed answer's kept too");
    let fourth = turn(&mut m, 40, "once more", answer("msg_4", StopReason::Stop));
    assert_eq!(types(&fourth), ["a", "b"]);
    m.step(50, Input::Change(Change::SessionId(Some("s2".into()))))
        .unwrap();
    let other = turn(&mut m, 60, "new", answer("msg_5", StopReason::Stop));
    assert!(types(&other).is_empty());
}
