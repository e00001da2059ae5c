//! What the agent machine's hook tests share: the effects a step of the machine asked for.
//! Each test binary uses part of it.
#![allow(dead_code)]

use pi_core::agent::hooks::HookPayload;
use pi_core::agent::{CallId, Effect, ModelRequest, Step};

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
