//! An extension's `ctx.compact()` (Pi 1.5.2's `AgentSession.compact` from the extension
//! context): while idle, a command's compaction starts within its step, before the command is
//! answered; mid run, the run is aborted and heard to its end, and the compaction starts after
//! its `agent_settled`. The summary request carries the custom instructions, and the end answers
//! no RPC `compact` (none asked for it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome};
use pi_core::agent::{AgentConfig, CallId, Effect, Input, StreamEvent, ToolOutcome};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::{Event, SessionEvent, ToolResult};
use pi_core::message::{AssistantMessage, ContentBlock};
use pi_core::resources::Resources;
use pi_core::script::{mock_model, tool};
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{hook, requests};

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::machine_compacting(
        AgentConfig {
            model: mock_model(),
            tools: vec![tool("echo", false)],
            handled_hooks: HandledHooks::of(handled.iter().copied()),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Resources {
            skills: vec![],
            templates: vec![],
            commands: vec!["squash".into()],
        },
        CompactionSettings {
            keep_recent_tokens: 1,
            ..CompactionSettings::default()
        },
    )
}

fn prompt(text: &str) -> SessionInput {
    SessionInput::Prompt {
        text: text.into(),
        images: vec![],
        streaming_behavior: None,
    }
}

fn answered(call: CallId, text: &str) -> SessionInput {
    answered_with(call, json!([{"type": "text", "text": text}]), "stop")
}

/// Model call `call` answered with `content`, stopping for `stop_reason`.
fn answered_with(call: CallId, content: Value, stop_reason: &str) -> SessionInput {
    let message: AssistantMessage = serde_json::from_value(json!({"role": "assistant",
        "content": content, "api": "openai-completions",
        "provider": "mock", "model": "mock-model", "usage": {"input": 0, "output": 0,
        "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0, "output": 0,
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

fn compact(call: CallId) -> SessionInput {
    decided(
        call,
        vec![HookAction::Compact {
            custom_instructions: Some("keep the names".into()),
        }],
    )
}

/// Hook point `call` done with nothing asked.
fn done(call: CallId) -> SessionInput {
    decided(call, vec![])
}

fn decided(call: CallId, actions: Vec<HookAction>) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Done,
            actions,
            errors: vec![],
        },
    })
}

/// The step's events by their `type`.
fn kinds(step: &SessionStep) -> Vec<String> {
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

/// The last user text of the summary request `step` sent.
fn summary_prompt(step: &SessionStep) -> String {
    let sent = requests(step);
    assert_eq!(sent.len(), 1, "the summary request");
    let last: Value = serde_json::to_value(sent[0].1.messages.last().unwrap()).unwrap();
    last["content"][0]["text"].as_str().unwrap().to_owned()
}

/// A session with one prompt answered and settled.
fn with_history(s: &mut SessionMachine) {
    let step = s.step(1, prompt("First prompt about alpha.")).unwrap();
    let (call, _) = requests(&step).remove(0);
    s.step(2, answered(call, "First answer about alpha."))
        .unwrap();
}

#[test]
fn a_command_compacts_at_once_while_idle_with_its_instructions_and_answers_no_compact() {
    let mut s = session(&[HookEvent::Command]);
    with_history(&mut s);
    let step = s.step(3, prompt("/squash keep the names")).unwrap();
    let step = s.step(4, compact(hook(&step))).unwrap();
    assert_eq!(kinds(&step), ["compaction_start"]);
    assert!(
        matches!(step.replies[..], [Reply::CommandRan { .. }]),
        "{:?}",
        step.replies
    );
    assert!(summary_prompt(&step).ends_with("\n\nAdditional focus: keep the names"));
    let (call, _) = requests(&step).remove(0);
    let step = s.step(5, answered(call, "## Goal\nSquashed.")).unwrap();
    assert!(
        step.replies.is_empty(),
        "no compact asked: {:?}",
        step.replies
    );
    assert!(
        step.events.iter().any(|e| matches!(e,
            Event::Session(SessionEvent::CompactionEnd { result: Some(r), .. })
                if r.summary.ends_with("## Goal\nSquashed."))),
        "{:?}",
        step.events
    );
}

/// A first prompt runs through its `turn_end`, then a second's `turn_end` compacts.
#[test]
fn a_turn_end_handler_compacts_after_the_aborted_run_settles() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("First prompt about alpha.")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s
        .step(2, answered(call, "First answer about alpha."))
        .unwrap();
    s.step(3, done(hook(&step))).unwrap();
    let step = s.step(4, prompt("Second prompt.")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(5, answered(call, "Second answer.")).unwrap();
    let step = s.step(6, compact(hook(&step))).unwrap();
    let kinds = kinds(&step);
    let settled = kinds.iter().position(|k| k == "agent_settled");
    let started = kinds.iter().position(|k| k == "compaction_start");
    assert!(
        settled.is_some() && started == settled.map(|i| i + 1),
        "the run is heard to its end, then the compaction starts: {kinds:?}"
    );
    assert!(
        step.events.iter().any(|e| matches!(
            e,
            Event::Session(SessionEvent::AgentSettled { aborted: true })
        )),
        "settled as aborted"
    );
    assert!(summary_prompt(&step).ends_with("\n\nAdditional focus: keep the names"));
    assert!(step.replies.is_empty(), "{:?}", step.replies);
}

/// A `turn_end` after tool results, whose run would go on: the compaction's abort comes before
/// the loop's next step, as Pi's `abort()` runs within the handler, so no request goes out for
/// a turn that would only be cancelled (a model that answers fast would otherwise be heard).
#[test]
fn a_turn_end_handler_compacting_mid_run_sends_no_request_for_the_next_turn() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("Call echo.")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let call_echo = json!([{"type": "toolCall", "id": "call_1", "name": "echo",
        "arguments": {"value": "v"}}]);
    let step = s
        .step(2, answered_with(call, call_echo, "toolUse"))
        .unwrap();
    let run = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        })
        .expect("the tool runs");
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::ToolFinished {
                call: run,
                outcome: ToolOutcome::Ok(ToolResult {
                    content: vec![ContentBlock::text("v")],
                    ..ToolResult::default()
                }),
            }),
        )
        .unwrap();
    let step = s.step(4, compact(hook(&step))).unwrap();
    assert!(
        !step
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Cancel { .. })),
        "nothing started to cancel: {:?}",
        step.effects
    );
    assert!(requests(&step).is_empty(), "no request for the next turn");
    assert_eq!(
        kinds(&step),
        ["turn_end", "turn_start", "message_start", "message_end"],
        "the next turn ends aborted at once"
    );
    let step = s.step(5, done(hook(&step))).unwrap();
    assert!(
        step.events.iter().any(|e| matches!(
            e,
            Event::Session(SessionEvent::AgentSettled { aborted: true })
        )),
        "settled as aborted: {:?}",
        kinds(&step)
    );
    assert!(summary_prompt(&step).ends_with("\n\nAdditional focus: keep the names"));
}
