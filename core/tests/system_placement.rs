//! The system messages a request carries in conversation order (`ModelRequest::system_messages`):
//! each of the transcript's system messages, placed after the model messages before it, beside
//! the folded prompt every provider sends today. A provider that keeps later system messages in
//! the conversation (Pi 1.5.2's `supportsMidConvoSystemMessages`) reads them; a `context`
//! handler's conversation carries none (Pi puts only the current prompt back at its head).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HandledHooks, HookDecision, HookEvent, HookOutcome};
use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::{
    AgentConfig, AgentHooks, AgentMachine, CallId, Effect, Input, ModelRequest,
    PlacedSystemMessage, Prompt, Step, StreamEvent,
};
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, UserMessage,
};
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

/// The coding agent's converter, declared as converting the transcript as a whole: the machine
/// then places each system message after the conversion of the whole prefix before it.
struct WholePrefix;

impl AgentHooks for WholePrefix {
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        CodingAgentHooks::default().convert_to_llm(messages)
    }
}

/// The coding agent's converter behind a `transform_context` that hands the transcript back.
struct HandedBack;

impl AgentHooks for HandedBack {
    fn transform_context(
        &self,
        messages: &[AgentMessage],
    ) -> Result<Option<Vec<AgentMessage>>, String> {
        Ok(Some(messages.to_vec()))
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        CodingAgentHooks::default().convert_to_llm(messages)
    }

    fn converts_each_message_alone(&self) -> bool {
        true
    }
}

/// A transcript from `kinds`: 0 a user message, 1 an answer, 2 a system message, 3 a
/// compaction summary (which the coding agent's converter makes a user message).
fn transcript(kinds: &[u8]) -> Vec<AgentMessage> {
    kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| {
            let message = match kind % 4 {
                0 => json!({"role": "user", "content": format!("u{i}"), "timestamp": i}),
                1 => json!({"role": "assistant", "content": [{"type": "text", "text": format!("a{i}")}],
                    "api": "x", "provider": "x", "model": "x", "stopReason": "stop", "timestamp": i,
                    "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}),
                2 => json!({"role": "system", "content": format!("patch {i}"), "timestamp": i}),
                _ => json!({"role": "compactionSummary", "summary": format!("s{i}"),
                    "tokensBefore": 1, "timestamp": i}),
            };
            serde_json::from_value(message).unwrap()
        })
        .collect()
}

/// The requests of two prompts over `messages` with `hooks`: the places and the messages sent.
fn requests(
    messages: Vec<AgentMessage>,
    hooks: Arc<dyn AgentHooks>,
) -> Vec<(Vec<PlacedSystemMessage>, Vec<Value>)> {
    let mut m = AgentMachine::new(AgentConfig {
        system_sections: Some(sections(&[("rules", "Be brief.")])),
        model: mock_model(),
        messages,
        hooks,
        ..AgentConfig::default()
    });
    let mut sent = Vec::new();
    for (now, text) in [(10, "one"), (20, "two")] {
        let (call, request) = request(&m.step(now, Input::Prompt(Prompt::text(text))).unwrap());
        let messages = request
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect();
        sent.push((request.system_messages.as_ref().clone(), messages));
        answer(&mut m, now + 1, call);
        m.set_system(sections(&[("rules", text)]), vec![]);
    }
    sent
}

proptest::proptest! {
    /// Placing the system messages from the growing view, or one stretch at a time, places them
    /// where converting each whole prefix does.
    #[test]
    fn every_way_of_placing_agrees_with_converting_each_prefix(
        kinds in proptest::collection::vec(0u8..4, 0..40)
    ) {
        let oracle = requests(transcript(&kinds), Arc::new(WholePrefix));
        proptest::prop_assert_eq!(
            &requests(transcript(&kinds), Arc::new(CodingAgentHooks::default())),
            &oracle
        );
        proptest::prop_assert_eq!(&requests(transcript(&kinds), Arc::new(HandedBack)), &oracle);
    }
}
