//! What the session machine's hook tests share: a new session over an agent configuration, the
//! effects a step asked for, and the answers a test gives them. Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::HookPayload;
use pi_core::agent::hooks::{HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome};
use pi_core::agent::{
    AgentConfig, CallId, Effect, Input, ModelRequest, StreamEvent, ToolOutcome, ToolSpec,
};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{SessionConfig, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::{AgentEvent, Event, ToolResult};
use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::script::{mock_model, tool};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use serde_json::{json, Value};

/// A new session in `/work` (seeded ids, Pi's default retry and compaction settings) running
/// `agent`, whose prompts expand with `resources`.
pub fn machine(agent: AgentConfig, resources: Resources) -> SessionMachine {
    machine_compacting(agent, resources, CompactionSettings::default())
}

/// A new session as [`machine`] makes it, compacting with `compaction`.
pub fn machine_compacting(
    agent: AgentConfig,
    resources: Resources,
    compaction: CompactionSettings,
) -> SessionMachine {
    let mut ids = IdGenerator::new(7);
    let tree = SessionTree::new("/work", 0, &mut ids, None);
    SessionMachine::new(SessionConfig {
        agent,
        tree,
        ids,
        retry: RetrySettings::default(),
        compaction,
        default_thinking_level: None,
        model_thinking_levels: Default::default(),
        resources,
    })
}

/// A session on the mock model whose extensions handle `handled` and register `commands`,
/// with `tools`, compacting with `compaction`: what the hook tests run.
pub fn hooked(
    handled: &[HookEvent],
    tools: Vec<ToolSpec>,
    commands: &[&str],
    compaction: CompactionSettings,
) -> SessionMachine {
    machine_compacting(
        AgentConfig {
            model: mock_model(),
            tools,
            handled_hooks: HandledHooks::of(handled.iter().copied()),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Resources {
            skills: vec![],
            templates: vec![],
            commands: commands.iter().map(|c| (*c).to_owned()).collect(),
            ..Resources::default()
        },
        compaction,
    )
}

/// A session on `model` at `thinking_level`, with the `echo` tool, whose extensions handle
/// `handled`: what the tests of a handler's session actions run.
pub fn acting(
    model: Model,
    thinking_level: ThinkingLevel,
    handled: impl IntoIterator<Item = HookEvent>,
) -> SessionMachine {
    machine(
        AgentConfig {
            thinking_level,
            model,
            tools: vec![tool("echo", false)],
            handled_hooks: HandledHooks::of(handled),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Resources::default(),
    )
}

/// A user's prompt of `text`, with no images, while idle.
pub fn prompt(text: &str) -> SessionInput {
    SessionInput::Prompt {
        text: text.into(),
        images: vec![],
        streaming_behavior: None,
    }
}

/// The model calls `step` asked for.
pub fn requests(step: &SessionStep) -> Vec<(CallId, ModelRequest)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallModel { call, request } => Some((*call, (*request).clone())),
            _ => None,
        })
        .collect()
}

/// The one hook point `step` asked for.
pub fn hook(step: &SessionStep) -> CallId {
    let hooks: Vec<_> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Hook { call, .. } => Some(*call),
            _ => None,
        })
        .collect();
    assert_eq!(hooks.len(), 1, "one hook effect in {:?}", step.effects);
    hooks[0]
}

/// The payloads of the hook points `step` asked for.
pub fn hooks(step: &SessionStep) -> Vec<(CallId, HookPayload)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Hook { call, payload, .. } => Some((*call, payload.clone())),
            _ => None,
        })
        .collect()
}

/// The hook points `step` asked for, their payloads as JSON.
pub fn hooks_json(step: &SessionStep) -> Vec<(CallId, Value)> {
    hooks(step)
        .into_iter()
        .map(|(call, payload)| (call, serde_json::to_value(payload).unwrap()))
        .collect()
}

/// The step's events by their `type`.
pub fn kinds(step: &SessionStep) -> Vec<String> {
    step.events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// At `now`, the prompt `text` while idle: the model call it asks for.
pub fn prompted(s: &mut SessionMachine, now: u64, text: &str) -> CallId {
    let step = s.step(now, prompt(text)).unwrap();
    requests(&step).remove(0).0
}

/// At `now`, the prompt `text` while idle, answered with `answer` a moment later: the step the
/// answer made.
pub fn prompted_and_answered(
    s: &mut SessionMachine,
    now: u64,
    text: &str,
    answer: &str,
) -> SessionStep {
    let call = prompted(s, now, text);
    s.step(now + 1, answered(call, answer)).unwrap()
}

/// Model call `call` answered with `text`.
pub fn answered(call: CallId, text: &str) -> SessionInput {
    answered_with(call, json!([{"type": "text", "text": text}]), "stop")
}

/// Model call `call` answered with `content`, stopping for `stop_reason`.
pub fn answered_with(call: CallId, content: Value, stop_reason: &str) -> SessionInput {
    answered_using(
        call,
        content,
        stop_reason,
        json!({"input": 0, "output": 0, "totalTokens": 0}),
    )
}

/// Model call `call` answered with usage that fills the mock model's context window (a
/// threshold compaction follows).
pub fn answered_full(call: CallId) -> SessionInput {
    let usage = json!({"input": 127_000, "output": 10, "totalTokens": 127_010});
    let content = json!([{"type": "text", "text": "A long answer."}]);
    answered_using(call, content, "stop", usage)
}

fn answered_using(call: CallId, content: Value, stop_reason: &str, tokens: Value) -> SessionInput {
    let message: AssistantMessage = serde_json::from_value(json!({"role": "assistant",
        "content": content, "api": "openai-completions",
        "provider": "mock", "model": "mock-model", "usage": {"input": tokens["input"],
        "output": tokens["output"], "cacheRead": 0, "cacheWrite": 0,
        "totalTokens": tokens["totalTokens"], "cost": {"input": 0, "output": 0,
        "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": stop_reason, "timestamp": 3}))
    .unwrap();
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Done {
            reason: message.stop_reason,
            message,
        },
    })
}

/// The tool call `effects` start running (the first, where several do).
pub fn tool_run(effects: &[Effect]) -> CallId {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a tool run")
}

/// Tool call `call` finished with `text` as its result.
pub fn tool_finished(call: CallId, text: &str) -> SessionInput {
    SessionInput::Answer(Input::ToolFinished {
        call,
        outcome: ToolOutcome::Ok(ToolResult {
            content: vec![ContentBlock::text(text)],
            ..ToolResult::default()
        }),
    })
}

/// At `now`, model call `call` ends with an empty answer that stops: the step it made.
pub fn stopped(s: &mut SessionMachine, now: u64, call: CallId) -> SessionStep {
    let event = StreamEvent::Done {
        reason: StopReason::Stop,
        message: AssistantMessage::default(),
    };
    s.step(now, SessionInput::Answer(Input::Model { call, event }))
        .unwrap()
}

/// The messages `agent_end` in `step` reports as the run's own.
pub fn ended_messages(step: &SessionStep) -> Vec<AgentMessage> {
    step.events
        .iter()
        .find_map(|e| match e {
            Event::Agent(AgentEvent::AgentEnd { messages, .. }) => Some(messages.clone()),
            _ => None,
        })
        .expect("agent_end")
}

/// The agent's transcript, as JSON.
pub fn transcript(s: &SessionMachine) -> Vec<Value> {
    s.agent()
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

/// The session's entries of `kind`, as JSON without their ids and times.
pub fn entries_of(s: &SessionMachine, kind: &str) -> Vec<Value> {
    s.tree()
        .entries()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == kind)
        .map(|mut e| {
            for key in ["id", "parentId", "timestamp"] {
                e.as_object_mut().unwrap().remove(key);
            }
            e
        })
        .collect()
}

/// Hook point `call` decided `decision`, the handlers having asked for `actions`.
pub fn decided_as(call: CallId, decision: HookDecision, actions: Vec<HookAction>) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision,
            actions,
            errors: vec![],
        },
    })
}

/// Hook point `call` done with nothing asked.
pub fn done(call: CallId) -> SessionInput {
    decided_as(call, HookDecision::Done, vec![])
}

/// A manual compaction with `text` as its instructions.
pub fn manual(text: &str) -> SessionInput {
    SessionInput::Compact {
        custom_instructions: Some(text.into()),
    }
}
