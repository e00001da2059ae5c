//! `pi.setActiveTools` applied by the session machine as Pi 1.5.2's `setActiveToolsByName`:
//! the active tools still asked for keep their order, the others asked for follow in the order
//! asked, names not registered are ignored; the prompt's sections are rebuilt for the new tools,
//! and the next turn (the run's first, asked in `before_agent_start`; the run's next, asked at a
//! `turn_end`) records the change as a system message and declares the new tools. A session that
//! does not know its registered tools keeps its tools, as before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome};
use pi_core::agent::{AgentConfig, CallId, Effect, Input, ModelRequest, StreamEvent};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep, ToolLoadout};
use pi_core::message::{AgentMessage, AssistantMessage};
use pi_core::script::mock_model;
use pi_core::system_prompt::{build_system_prompt_sections, SystemPromptInputs};
use pi_core::tools::definitions::builtin_tool;
use serde_json::{json, Value};
use std::sync::Arc;

#[path = "support/session.rs"]
mod support;

/// A session whose active tools are `read` and `bash`, with `grep` and `ls` registered too
/// when `loadout`.
fn session(loadout: bool) -> SessionMachine {
    let prompt = |names: &[&str]| {
        SystemPromptInputs {
            cwd: "/work".into(),
            ..SystemPromptInputs::default()
        }
        .with_builtin_tools(names)
    };
    let active = prompt(&["read", "bash"]);
    let mut machine = support::machine(
        AgentConfig {
            model: mock_model(),
            tools: ["read", "bash"]
                .iter()
                .map(|n| builtin_tool(n).unwrap().spec())
                .collect(),
            system_sections: Some(build_system_prompt_sections(&active).unwrap()),
            handled_hooks: HandledHooks::of([HookEvent::BeforeAgentStart, HookEvent::TurnEnd]),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Default::default(),
    );
    if loadout {
        let mut registered = prompt(&["read", "bash", "grep", "ls"]);
        registered.selected_tools = active.selected_tools;
        machine.set_tool_loadout(Some(ToolLoadout {
            inactive_builtins: vec!["grep".into(), "ls".into()],
            prompt: registered,
            ..ToolLoadout::default()
        }));
    }
    machine
}

fn effects<T>(step: &SessionStep, pick: impl Fn(&Effect) -> Option<T>) -> Vec<T> {
    step.effects.iter().filter_map(pick).collect()
}

fn request(step: &SessionStep) -> (CallId, ModelRequest) {
    let mut sent = effects(step, |e| match e {
        Effect::CallModel { call, request } => Some((*call, (*request).clone())),
        _ => None,
    });
    assert_eq!(sent.len(), 1, "one request in {:?}", step.effects);
    sent.remove(0)
}

fn hook(step: &SessionStep) -> CallId {
    let hooks = effects(step, |e| match e {
        Effect::Hook { call, .. } => Some(*call),
        _ => None,
    });
    assert_eq!(hooks.len(), 1, "one hook effect in {:?}", step.effects);
    hooks[0]
}

fn decided(call: CallId, decision: HookDecision, tools: &[&str]) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision,
            actions: vec![HookAction::SetActiveTools {
                tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            }],
            errors: vec![],
        },
    })
}

fn started(call: CallId, tools: &[&str]) -> SessionInput {
    let decision = HookDecision::BeforeAgentStart {
        messages: vec![],
        system_prompt: None,
    };
    decided(call, decision, tools)
}

fn answer(content: Value, stop: &str) -> AssistantMessage {
    serde_json::from_value(json!({"role": "assistant", "content": content,
        "api": "openai-completions", "provider": "mock", "model": "mock",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": stop, "timestamp": 3}))
    .unwrap()
}

fn answered(call: CallId, message: AssistantMessage) -> SessionInput {
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Done {
            reason: message.stop_reason,
            message,
        },
    })
}

fn names(request: &ModelRequest) -> Vec<&str> {
    request.tools.iter().map(|t| t.name.as_str()).collect()
}

/// The transcript's system messages, as JSON without their times.
fn system_messages(s: &SessionMachine) -> Vec<Value> {
    s.agent()
        .messages()
        .iter()
        .filter(|m| matches!(m, AgentMessage::System(_)))
        .map(|m| {
            let mut value = serde_json::to_value(m).unwrap();
            value.as_object_mut().unwrap().remove("timestamp");
            value
        })
        .collect()
}

fn added_names(message: &Value) -> Vec<&str> {
    message["toolsAdded"]
        .as_array()
        .map(|tools| tools.iter().map(|t| t["name"].as_str().unwrap()).collect())
        .unwrap_or_default()
}

fn prompt(s: &mut SessionMachine) -> CallId {
    let step = s
        .step(
            1,
            SessionInput::Prompt {
                text: "Look".into(),
                images: vec![],
                streaming_behavior: None,
            },
        )
        .unwrap();
    hook(&step)
}

#[test]
fn tools_set_before_the_run_are_the_first_requests_kept_in_order_unknown_ones_ignored() {
    let mut s = session(true);
    let call = prompt(&mut s);
    let step = s.step(2, started(call, &["ls", "read", "nope"])).unwrap();
    let (_, sent) = request(&step);
    assert_eq!(
        names(&sent),
        ["read", "ls"],
        "the active one first, then the asked"
    );
    let system = system_messages(&s);
    assert_eq!(system.len(), 1);
    assert_eq!(added_names(&system[0]), ["read", "ls"]);
    let tools = system[0]["sections"]["tools"].as_str().unwrap();
    assert!(
        tools.contains("- ls: ") && tools.contains("- read: "),
        "{tools}"
    );
    assert!(!tools.contains("- bash: "), "{tools}");
    assert_eq!(s.agent().active_tool_names(), ["read", "ls"]);
}

#[test]
fn tools_set_at_a_turn_end_are_declared_by_the_runs_next_turn_with_a_system_patch() {
    let mut s = session(true);
    let call = prompt(&mut s);
    let step = s
        .step(
            2,
            SessionInput::Answer(Input::HookDecided {
                call,
                outcome: HookOutcome {
                    decision: HookDecision::BeforeAgentStart {
                        messages: vec![],
                        system_prompt: None,
                    },
                    actions: vec![],
                    errors: vec![],
                },
            }),
        )
        .unwrap();
    let (call, sent) = request(&step);
    assert_eq!(names(&sent), ["read", "bash"]);
    let read = json!([{"type": "toolCall", "id": "c1", "name": "read",
        "arguments": {"path": "a"}}]);
    let step = s.step(3, answered(call, answer(read, "toolUse"))).unwrap();
    let run = effects(&step, |e| match e {
        Effect::RunTool { call, .. } => Some(*call),
        _ => None,
    });
    let step = s.step(4, support::tool_finished(run[0], "a")).unwrap();
    let turn_end = hook(&step);
    let step = s
        .step(5, decided(turn_end, HookDecision::Done, &["grep", "read"]))
        .unwrap();
    let (_, sent) = request(&step);
    assert_eq!(names(&sent), ["read", "grep"]);
    let system = system_messages(&s);
    assert_eq!(system.len(), 2, "the first turn's and the change's");
    let patch = &system[1];
    assert_eq!(added_names(patch), ["grep"]);
    assert_eq!(patch["toolsRemoved"], json!([{"name": "bash"}]));
    let sections = patch["sections"].as_object().unwrap();
    let changed: Vec<&str> = sections.keys().map(String::as_str).collect();
    assert_eq!(changed, ["tools", "rules"], "only what the tools change");
    assert!(sent.system_prompt.contains("- grep: "));
    assert!(!sent.system_prompt.contains("- bash: "));
}

#[test]
fn a_session_that_does_not_know_its_registered_tools_keeps_them() {
    let mut s = session(false);
    let call = prompt(&mut s);
    let step = s.step(2, started(call, &["ls", "read"])).unwrap();
    let (_, sent) = request(&step);
    assert_eq!(names(&sent), ["read", "bash"]);
    assert_eq!(s.registered_tool_names(), None);
}
