//! The machine hands each model request the session's last answered call (its request and
//! reply), which Pi 1.5.2's Anthropic provider needs to continue a message thread: none for the
//! first request, none after a failed answer or a change of session, and the same one on
//! every run of the same inputs; and the diagnostics of the session's earlier answers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Change, Effect, Input, ModelRequest, Prompt, Step,
    StreamEvent,
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

/// Prompts `text` and answers with `reply` (an error event when it is an error).
fn turn(m: &mut AgentMachine, now: u64, text: &str, reply: AssistantMessage) -> ModelRequest {
    let (id, request) = call(&m.step(now, Input::Prompt(Prompt::text(text))).unwrap());
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

#[test]
fn each_request_carries_the_last_answered_call() {
    let mut m = machine();
    let first = turn(&mut m, 10, "hi", answer("msg_1", StopReason::Stop));
    assert_eq!(first.previous, None);
    let second = turn(&mut m, 20, "more", answer("msg_2", StopReason::Length));
    let previous = second.previous.as_deref().expect("the first call");
    assert_eq!(previous.request, first);
    assert_eq!(previous.reply.response_id.as_deref(), Some("msg_1"));
    assert_eq!(previous.reply.content, vec![ContentBlock::text("msg_1")]);
    // A cut answer counts as answered.
    let third = turn(&mut m, 30, "go on", answer("msg_3", StopReason::Error));
    let previous = third.previous.as_deref().expect("the second call");
    assert_eq!(previous.reply.response_id.as_deref(), Some("msg_2"));
    assert_eq!(previous.request.previous, None, "no chain of earlier calls");
    // A failed answer leaves none: the next request starts a new thread.
    let fourth = turn(&mut m, 40, "again", answer("msg_4", StopReason::Stop));
    assert_eq!(fourth.previous, None);
    let fifth = turn(&mut m, 50, "once more", answer("msg_5", StopReason::Stop));
    assert!(fifth.previous.is_some());
}

#[test]
fn another_session_starts_without_the_last_call() {
    let mut m = machine();
    turn(&mut m, 10, "hi", answer("msg_1", StopReason::Stop));
    m.step(20, Input::Change(Change::SessionId(Some("s1".into()))))
        .unwrap();
    let same = turn(&mut m, 30, "more", answer("msg_2", StopReason::Stop));
    assert!(same.previous.is_some(), "the same session keeps it");
    m.step(40, Input::Change(Change::SessionId(Some("s2".into()))))
        .unwrap();
    let other = turn(&mut m, 50, "new", answer("msg_3", StopReason::Stop));
    assert_eq!(other.previous, None);
}

#[test]
fn the_same_inputs_hand_the_same_calls() {
    let run = || {
        let mut m = machine();
        (0..3)
            .map(|k| {
                let reply = answer(&format!("msg_{k}"), StopReason::Stop);
                turn(&mut m, 10 * (k + 1), "x", reply).previous
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
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
