//! What the session machine's hook tests share: a new session over an agent configuration, and
//! the effects a step asked for. Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{HandledHooks, HookEvent};
use pi_core::agent::{AgentConfig, CallId, Effect, ModelRequest, ToolSpec};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{SessionConfig, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;

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
        },
        compaction,
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
