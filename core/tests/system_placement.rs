//! The system messages a request carries in conversation order (`ModelRequest::system_messages`):
//! each of the transcript's system messages, placed after the model messages before it, beside
//! the folded prompt every provider sends today. A provider that keeps later system messages in
//! the conversation (Pi 1.5.2's `supportsMidConvoSystemMessages`) reads them; a `context`
//! handler's conversation carries none (Pi puts only the current prompt back at its head).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HandledHooks, HookDecision, HookEvent, HookOutcome};
use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, ModelRequest, Prompt, Step, StreamEvent,
};
use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason, UserMessage};
use pi_core::script::mock_model;
use serde_json::{json, Map, Value};

fn sections(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect()
}

fn machine(handled: HandledHooks) -> AgentMachine {
    AgentMachine::new(AgentConfig {
        system_sections: Some(sections(&[("rules", "Be brief."), ("cwd", "cwd: /a")])),
        model: mock_model(),
        handled_hooks: handled,
        ..AgentConfig::default()
    })
}

fn request(step: &Step) -> (CallId, ModelRequest) {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, request } => Some((*call, request.clone())),
            _ => None,
        })
        .expect("a model request")
}

fn answer(m: &mut AgentMachine, now: u64, call: CallId) {
    let message = AssistantMessage {
        content: vec![ContentBlock::text("Hello")],
        ..AssistantMessage::default()
    };
    m.step(
        now,
        Input::Model {
            call,
            event: StreamEvent::Done {
                reason: StopReason::Stop,
                message,
            },
        },
    )
    .unwrap();
}

fn placed(request: &ModelRequest) -> Vec<(usize, Value)> {
    request
        .system_messages
        .iter()
        .map(|p| {
            (
                p.at,
                p.message
                    .sections
                    .clone()
                    .map(Value::Object)
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_changed_prompt_is_placed_after_the_messages_before_it_and_still_folded() {
    let mut m = machine(HandledHooks::default());
    let (call, first) = request(&m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    assert_eq!(
        placed(&first),
        vec![(0, json!({"rules": "Be brief.", "cwd": "cwd: /a"}))]
    );
    answer(&mut m, 2, call);
    m.set_system(
        sections(&[("rules", "Be brief."), ("cwd", "cwd: /b")]),
        vec![],
    );
    let (_, second) = request(&m.step(3, Input::Prompt(Prompt::text("more"))).unwrap());
    // hi and the answer come before the patch; the new prompt text follows it.
    assert_eq!(
        placed(&second),
        vec![
            (0, json!({"rules": "Be brief.", "cwd": "cwd: /a"})),
            (2, json!({"cwd": "cwd: /b"})),
        ]
    );
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.system_prompt, "Be brief.\n\ncwd: /b");
    // Not part of the request's JSON, which recordings compare.
    assert!(serde_json::to_value(&second)
        .unwrap()
        .get("systemMessages")
        .is_none());
}

#[test]
fn a_context_handlers_conversation_carries_only_the_folded_prompt() {
    let mut m = machine(HandledHooks::of([HookEvent::Context]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let asked = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Hook { call, .. } => Some(*call),
            _ => None,
        })
        .unwrap();
    let decided = Input::HookDecided {
        call: asked,
        outcome: HookOutcome {
            decision: HookDecision::Context {
                messages: Some(vec![AgentMessage::User(UserMessage::from_text(
                    "rewritten".to_owned(),
                    vec![],
                    1,
                ))]),
            },
            actions: vec![],
            errors: vec![],
        },
    };
    let (_, sent) = request(&m.step(2, decided).unwrap());
    assert!(sent.system_messages.is_empty());
    assert_eq!(sent.system_prompt, "Be brief.\n\ncwd: /a");
}
