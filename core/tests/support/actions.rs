//! What the tests of extension actions share: a reasoning model, a `before_agent_start`
//! decision with the actions its handlers asked for, a model's answer, and the prompt whose run
//! waits for `before_agent_start`. Uses `support` (`support/session.rs`), which each test
//! binary mounts.
#![allow(dead_code)]

use pi_core::agent::hooks::{HookAction, HookDecision};
use pi_core::agent::{CallId, Input, StreamEvent};
use pi_core::agent_session::{SessionInput, SessionMachine};
use pi_core::message::AssistantMessage;
use pi_core::model::Model;
use pi_core::script::mock_model;
use serde_json::{json, Value};

/// The scripted mock model, reasoning.
pub fn reasoner() -> Model {
    Model {
        id: "mock-reasoner".into(),
        reasoning: true,
        ..mock_model()
    }
}

/// `before_agent_start` decided with no message and the prompt unchanged.
pub fn started(call: CallId, actions: Vec<HookAction>) -> SessionInput {
    let decision = HookDecision::BeforeAgentStart {
        messages: vec![],
        system_prompt: None,
    };
    crate::support::decided_as(call, decision, actions)
}

/// Model call `call` answered with `message` (an assistant message's JSON).
pub fn answered(call: CallId, message: Value) -> SessionInput {
    let message: AssistantMessage = serde_json::from_value(message).unwrap();
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Done {
            reason: message.stop_reason,
            message,
        },
    })
}

/// An answer that calls `echo` once.
pub fn tool_call_answer() -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": "call_1", "name": "echo",
        "arguments": {"value": "v"}}], "api": "openai-completions", "provider": "mock",
        "model": "mock-reasoner", "usage": {"input": 0, "output": 0, "cacheRead": 0,
        "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0, "output": 0, "cacheRead": 0,
        "cacheWrite": 0, "total": 0}}, "stopReason": "toolUse", "timestamp": 3})
}

/// Prompts at time 1; the `before_agent_start` hook point the run waits for.
pub fn prompt(s: &mut SessionMachine) -> CallId {
    let step = s
        .step(1, crate::support::prompt("What does it say?"))
        .unwrap();
    crate::support::hook(&step)
}
