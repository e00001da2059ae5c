//! What the session machine's hook tests share: a new session over an agent configuration, and
//! the effects a step asked for. Each test binary uses part of it.
#![allow(dead_code)]

use pi_core::agent::{AgentConfig, CallId, Effect, ModelRequest};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{SessionConfig, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::resources::Resources;
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
