//! A handler's `pi.sendMessage` (Pi 1.5.2's `AgentSession.sendCustomMessage`, bound by
//! `bindCore`), applied by the session machine with the decision it came with: while the agent
//! streams, a message without `triggerTurn: false` is queued as steering (or as a follow-up with
//! `deliverAs: "followUp"`) and the run delivers it as a custom message in its next turn; with
//! `triggerTurn: false` it waits for the turn's end and is written to the session then, without a
//! new turn. The decision is an input, so a replay applies the same message at the same point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome, InjectedMessage,
};
use pi_core::agent::{AgentConfig, CallId, Effect, Input, StreamEvent};
use pi_core::agent_session::{SessionInput, SessionMachine};
use pi_core::event::{AgentEvent, Event};
use pi_core::message::{AssistantMessage, StopReason};
use pi_core::script::mock_model;
use serde_json::json;
use std::sync::Arc;

#[path = "support/session.rs"]
mod support;
use support::{entries_of, hook, requests, stopped, transcript};

fn session() -> SessionMachine {
    support::machine(
        AgentConfig {
            model: mock_model(),
            handled_hooks: HandledHooks::of([HookEvent::Context]),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Default::default(),
    )
}

fn send(deliver_as: Option<&str>, trigger_turn: Option<bool>) -> HookAction {
    HookAction::SendMessage {
        message: InjectedMessage {
            custom_type: "note".into(),
            content: json!("remember the milk"),
            display: true,
            details: None,
        },
        deliver_as: deliver_as.map(str::to_owned),
        trigger_turn,
    }
}

fn context_decided(call: CallId, actions: Vec<HookAction>) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Context { messages: None },
            actions,
            errors: vec![],
        },
    })
}

const NOTE: &str = "remember the milk";

/// Prompts, and answers the first `context` hook with `actions`; the request it sent.
fn prompted(s: &mut SessionMachine, actions: Vec<HookAction>) -> CallId {
    let step = s
        .step(
            1,
            SessionInput::Prompt {
                text: "hi".into(),
                images: vec![],
                streaming_behavior: None,
            },
        )
        .unwrap();
    let step = s.step(2, context_decided(hook(&step), actions)).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].1.messages.len(),
        1,
        "the message waits for the turn's end"
    );
    sent[0].0
}

#[test]
fn a_message_sent_while_streaming_steers_the_run_into_another_turn() {
    for deliver_as in [None, Some("steer"), Some("followUp")] {
        let mut s = session();
        let call = prompted(&mut s, vec![send(deliver_as, None)]);
        let step = stopped(&mut s, 3, call);
        let step = s.step(4, context_decided(hook(&step), vec![])).unwrap();
        let sent = requests(&step);
        assert_eq!(sent.len(), 1, "{deliver_as:?}: the message starts a turn");
        assert_eq!(
            serde_json::to_value(&*sent[0].1.messages)
                .unwrap()
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .clone(),
            json!({"role": "user", "content": [{"type": "text", "text": NOTE}], "timestamp": 2}),
            "{deliver_as:?}"
        );
        assert_eq!(
            transcript(&s)[2],
            json!({"role": "custom", "customType": "note", "content": NOTE, "display": true,
                   "timestamp": 2}),
            "{deliver_as:?}"
        );
        assert_eq!(
            entries_of(&s, "custom_message"),
            vec![
                json!({"type": "custom_message", "customType": "note", "content": NOTE,
                        "display": true})
            ],
            "{deliver_as:?}"
        );
    }
}

#[test]
fn a_message_without_a_turn_waits_for_the_turn_end_and_starts_none() {
    let mut s = session();
    let call = prompted(&mut s, vec![send(None, Some(false))]);
    let step = stopped(&mut s, 3, call);
    assert!(requests(&step).is_empty(), "no new turn");
    assert!(
        step.effects
            .iter()
            .all(|e| !matches!(e, Effect::Hook { .. })),
        "{:?}",
        step.effects
    );
    // Written after the turn's end, announced as Pi's _appendCustomMessage does.
    let kinds: Vec<_> = step
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Agent(AgentEvent::TurnEnd { .. }) => Some("turn_end".to_owned()),
            Event::Agent(AgentEvent::MessageStart { message })
            | Event::Agent(AgentEvent::MessageEnd { message }) => {
                Some(serde_json::to_value(message).unwrap()["role"].to_string())
            }
            Event::Agent(AgentEvent::AgentEnd { .. }) => Some("agent_end".to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "\"assistant\"",
            "\"assistant\"",
            "turn_end",
            "\"custom\"",
            "\"custom\"",
            "agent_end"
        ]
    );
    assert_eq!(
        transcript(&s)[2],
        json!({"role": "custom", "customType": "note", "content": NOTE, "display": true,
               "timestamp": 2})
    );
    assert_eq!(entries_of(&s, "custom_message").len(), 1);
}

#[test]
fn a_next_turn_message_follows_the_next_prompt() {
    let mut s = session();
    let call = prompted(&mut s, vec![send(Some("nextTurn"), None)]);
    let step = stopped(&mut s, 3, call);
    assert!(requests(&step).is_empty(), "no new turn");
    assert!(
        entries_of(&s, "custom_message").is_empty(),
        "held for the next prompt"
    );
    let step = s
        .step(
            4,
            SessionInput::Prompt {
                text: "more".into(),
                images: vec![],
                streaming_behavior: None,
            },
        )
        .unwrap();
    let step = s.step(5, context_decided(hook(&step), vec![])).unwrap();
    let sent = serde_json::to_value(&*requests(&step)[0].1.messages).unwrap();
    assert_eq!(
        sent.as_array().unwrap()[2..],
        [
            json!({"role": "user", "content": [{"type": "text", "text": "more"}], "timestamp": 4}),
            json!({"role": "user", "content": [{"type": "text", "text": NOTE}], "timestamp": 2}),
        ]
    );
    assert_eq!(entries_of(&s, "custom_message").len(), 1);
}

/// Pi's flush at `turn_end` writes a held message into the session, from which the next turn
/// reads its context: the run's next request carries it after the turn's tool results, while
/// the run's own messages (`agent_end`'s) do not hold it.
#[test]
fn a_message_held_for_the_turn_end_is_in_the_next_request_and_not_the_runs_messages() {
    let mut s = session();
    let call = prompted(&mut s, vec![send(None, Some(false))]);
    let calling: AssistantMessage = serde_json::from_value(json!({"role": "assistant",
        "content": [{"type": "toolCall", "id": "call_1", "name": "missing", "arguments": {}}],
        "api": "openai-completions", "provider": "mock", "model": "mock-model",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 3}))
    .unwrap();
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::Model {
                call,
                event: StreamEvent::Done {
                    reason: StopReason::ToolUse,
                    message: calling,
                },
            }),
        )
        .unwrap();
    // The unknown tool's error result ends the turn; the next turn asks its `context` hook.
    let step = s.step(4, context_decided(hook(&step), vec![])).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1, "{:?}", step.effects);
    let roles: Vec<String> = sent[0]
        .1
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap()["role"].to_string())
        .collect();
    assert_eq!(
        roles,
        ["\"user\"", "\"assistant\"", "\"toolResult\"", "\"user\""]
    );
    assert_eq!(
        serde_json::to_value(sent[0].1.messages.last().unwrap()).unwrap()["content"],
        json!([{"type": "text", "text": NOTE}])
    );
    assert_eq!(entries_of(&s, "custom_message").len(), 1);
    let step = stopped(&mut s, 5, sent[0].0);
    let ended = support::ended_messages(&step);
    assert!(
        ended
            .iter()
            .all(|m| !matches!(m, pi_core::message::AgentMessage::Custom(_))),
        "{ended:?}"
    );
    assert_eq!(
        ended.len(),
        4,
        "the prompt, two answers and the tool result"
    );
}
