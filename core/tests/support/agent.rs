//! What the agent machine's hook tests share: the effects a step of the machine asked for.
//! Each test binary uses part of it.
#![allow(dead_code)]

use pi_core::agent::hooks::HookPayload;
use pi_core::agent::{AgentMachine, CallId, Effect, Input, ModelRequest, Step, StreamEvent};
use pi_core::message::{AssistantMessage, ContentBlock, StopReason, ToolCall};
use serde_json::json;

/// The model calls `step` asked for.
pub fn requests(step: &Step) -> Vec<(CallId, ModelRequest)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallModel { call, request } => Some((*call, request.clone())),
            _ => None,
        })
        .collect()
}

/// The ids of the model calls `step` asked for.
pub fn model_calls(step: &Step) -> Vec<CallId> {
    requests(step).into_iter().map(|(call, _)| call).collect()
}

/// The hook points `step` asked for, with their payloads.
pub fn hooks(step: &Step) -> Vec<(CallId, HookPayload)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Hook { call, payload, .. } => Some((*call, payload.clone())),
            _ => None,
        })
        .collect()
}

/// The one hook point `step` asked for.
pub fn hook(step: &Step) -> (CallId, HookPayload) {
    let hooks = hooks(step);
    assert_eq!(hooks.len(), 1, "one hook effect in {:?}", step.effects);
    hooks[0].clone()
}

/// The tool call `step` starts running (the first, where several do).
pub fn tool_run(step: &Step) -> CallId {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a tool run")
}

/// At `now`, model call `call` answers with a call of `echo` for each `(id, value)`, stopping
/// for them: the step it made.
pub fn echo_calls(m: &mut AgentMachine, now: u64, call: CallId, calls: &[(&str, &str)]) -> Step {
    let content = calls
        .iter()
        .map(|(id, value)| {
            ContentBlock::ToolCall(ToolCall {
                id: (*id).into(),
                name: "echo".into(),
                arguments: json!({ "value": value }),
                ..Default::default()
            })
        })
        .collect();
    let message = AssistantMessage {
        content,
        ..AssistantMessage::default()
    };
    let event = StreamEvent::Done {
        reason: StopReason::ToolUse,
        message,
    };
    m.step(now, Input::Model { call, event }).unwrap()
}
