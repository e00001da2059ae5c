//! The `context` hook point: where a handler is registered, every model request waits for the
//! extensions, which see the conversation without its system messages and may replace it for
//! that request only (Pi 1.5.2's `emitContext` in `transformContext`); the transcript keeps
//! what happened.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HandledHooks, HookDecision, HookEvent, HookOutcome, HookPayload};
use pi_core::agent::{AgentConfig, AgentMachine, CallId, Input, Prompt, StreamEvent};
use pi_core::message::{AgentMessage, AssistantMessage, StopReason, UserMessage};
use pi_core::script::mock_model;
use serde_json::{json, Value};

#[path = "support/agent.rs"]
mod support;
use support::{hooks, requests};

fn machine(handled: HandledHooks) -> AgentMachine {
    let mut sections = serde_json::Map::new();
    sections.insert("rules".into(), json!("Be brief."));
    AgentMachine::new(AgentConfig {
        system_sections: Some(sections),
        model: mock_model(),
        handled_hooks: handled,
        ..AgentConfig::default()
    })
}

fn decided(call: CallId, messages: Option<Vec<AgentMessage>>) -> Input {
    Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Context { messages },
            actions: vec![],
            errors: vec![],
        },
    }
}

fn user(text: &str, at: u64) -> AgentMessage {
    AgentMessage::User(UserMessage::from_text(text.to_owned(), vec![], at))
}

#[test]
fn each_request_waits_for_context_and_sends_what_the_handlers_returned() {
    let mut m = machine(HandledHooks::of([HookEvent::Context]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    assert!(requests(&step).is_empty());
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    // The handlers see no system message.
    assert_eq!(
        serde_json::to_value(&asked[0].1).unwrap(),
        json!({"type": "context", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}]})
    );
    let step = m
        .step(2, decided(asked[0].0, Some(vec![user("rewritten", 1)])))
        .unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.system_prompt, "Be brief.");
    assert_eq!(
        serde_json::to_value(&*sent[0].1.messages).unwrap(),
        json!([{"role": "user", "content": [{"type": "text", "text": "rewritten"}],
                "timestamp": 1}])
    );
    // The transcript keeps the prompt as it was.
    assert!(m
        .messages()
        .iter()
        .any(|m| serde_json::to_value(m).unwrap()["content"][0]["text"] == "hi"));
    m.step(
        3,
        Input::Model {
            call: sent[0].0,
            event: StreamEvent::Done {
                reason: StopReason::Stop,
                message: AssistantMessage::default(),
            },
        },
    )
    .unwrap();
    // The next prompt's request asks again, with the transcript as it is.
    let step = m.step(4, Input::Prompt(Prompt::text("more"))).unwrap();
    let asked = hooks(&step);
    let HookPayload::Context { messages } = &asked[0].1 else {
        panic!("{:?}", asked[0].1)
    };
    assert_eq!(messages.len(), 3, "hi, the answer, more");
    let step = m.step(5, decided(asked[0].0, None)).unwrap();
    assert_eq!(requests(&step)[0].1.messages.len(), 3);
}

#[test]
fn an_unchanged_context_sends_what_a_run_without_the_handler_sends() {
    let mut plain = machine(HandledHooks::default());
    let without = requests(&plain.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    let mut m = machine(HandledHooks::of([HookEvent::Context]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let step = m.step(1, decided(hooks(&step)[0].0, None)).unwrap();
    let with: Vec<_> = requests(&step).into_iter().map(|(_, r)| r).collect();
    let without: Vec<_> = without.into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        serde_json::to_string(&with).unwrap(),
        serde_json::to_string(&without).unwrap()
    );
}

/// `context_with_system` is asked after `context`, with the prompt in force merged at the
/// head of what the `context` handler chose; the system messages it returns make the
/// request's prompt, and one it drops leaves the request with no prompt.
#[test]
fn context_with_system_follows_context_and_its_system_messages_make_the_prompt() {
    let mut m = machine(HandledHooks::of([
        HookEvent::Context,
        HookEvent::ContextWithSystem,
    ]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let (context, _) = hooks(&step)[0].clone();
    let step = m
        .step(2, decided(context, Some(vec![user("rewritten", 1)])))
        .unwrap();
    assert!(
        requests(&step).is_empty(),
        "the request waits for context_with_system"
    );
    let (with_system, payload) = hooks(&step)[0].clone();
    let HookPayload::ContextWithSystem { messages } = payload else {
        panic!("{payload:?}")
    };
    let roles: Vec<Value> = messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap()["role"].clone())
        .collect();
    assert_eq!(roles, [json!("system"), json!("user")]);
    let head = serde_json::to_value(&messages[0]).unwrap();
    assert_eq!(head["sections"], json!({"rules": "Be brief."}));

    let mut changed = messages.clone();
    let mut system = serde_json::to_value(&changed[0]).unwrap();
    system["sections"]["reminder"] = json!("Stay calm.");
    changed[0] = serde_json::from_value(system).unwrap();
    let step = m.step(3, decided(with_system, Some(changed))).unwrap();
    let sent = requests(&step);
    assert_eq!(sent[0].1.system_prompt, "Be brief.\n\nStay calm.");
    assert_eq!(
        serde_json::to_value(&sent[0].1.messages).unwrap()[0]["content"],
        json!([{"type": "text", "text": "rewritten"}])
    );
}

/// A `context_with_system` handler alone sees the transcript's conversation with its system
/// messages; one that drops them all sends no prompt and no tools.
#[test]
fn a_conversation_without_its_system_messages_sends_no_prompt() {
    let mut m = machine(HandledHooks::of([HookEvent::ContextWithSystem]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let (call, payload) = hooks(&step)[0].clone();
    let HookPayload::ContextWithSystem { messages } = payload else {
        panic!("{payload:?}")
    };
    assert!(matches!(messages[0], AgentMessage::System(_)));
    let step = m
        .step(2, decided(call, Some(messages[1..].to_vec())))
        .unwrap();
    let sent = requests(&step);
    assert_eq!(sent[0].1.system_prompt, "");
    assert!(sent[0].1.tools.is_empty());
}
