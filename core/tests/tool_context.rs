//! A tool whose context reads the session (an extension's registered tool) gets the session's
//! state with its call (`Effect::RunTool`'s `state`), as a hook point's, without counting its
//! entries as sent (the next hook point carries them again); another tool's call gets none.
//! What such a tool asks of the session while it runs (`Input::ToolActed`) is applied at once,
//! before its result, and refused for a call that is not running.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::{HookAction, HookEvent};
use pi_core::agent::{CallId, Effect, Input};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::session::entry::SessionEntry;
use pi_core::tools::definitions::builtin_tool;
use serde_json::json;

#[path = "support/session.rs"]
mod support;

fn session(context_tools: &[&str]) -> SessionMachine {
    let tools = ["ls", "read"]
        .iter()
        .map(|n| builtin_tool(n).unwrap().spec())
        .collect();
    let mut s = support::hooked(
        &[HookEvent::TurnEnd],
        tools,
        &[],
        CompactionSettings::default(),
    );
    s.set_context_tools(context_tools.iter().map(|n| (*n).to_owned()).collect());
    s
}

/// The tool calls of `step`: call, tool, and the state it carries.
fn tool_calls(step: &SessionStep) -> Vec<(CallId, String, Option<HookState>)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool {
                call, tool, state, ..
            } => Some((*call, tool.clone(), state.as_deref().cloned())),
            _ => None,
        })
        .collect()
}

/// The session prompted, its model answering with a call of `ls` and one of `read`.
fn calling(s: &mut SessionMachine) -> SessionStep {
    let step = s.step(1, support::prompt("go")).unwrap();
    let (call, _) = support::requests(&step).remove(0);
    let content = json!([
        {"type": "toolCall", "id": "t1", "name": "ls", "arguments": {}},
        {"type": "toolCall", "id": "t2", "name": "read", "arguments": {"path": "a"}},
    ]);
    s.step(2, support::answered_with(call, content, "toolUse"))
        .unwrap()
}

#[test]
fn only_the_tools_that_read_the_session_carry_its_state_and_it_counts_nothing_as_sent() {
    let mut s = session(&["ls"]);
    let step = calling(&mut s);
    let calls = tool_calls(&step);
    assert_eq!(calls.len(), 2, "{:?}", step.effects);
    assert!(calls[1].2.is_none(), "read does not read the session");
    let state = calls[0].2.clone().expect("ls reads the session");
    assert!(!state.is_idle, "a run is active while its tools run");
    assert_eq!(
        state.session.entries.from, 0,
        "no hook point sent any entry"
    );
    let entries = s.tree().entries();
    assert_eq!(state.session.entries.entries.len(), entries.len());
    let last = state.session.entries.entries.last().unwrap();
    assert_eq!(
        last["message"]["role"], "assistant",
        "the calling answer persisted"
    );
    assert_eq!(state.session.leaf_id.as_deref(), s.tree().leaf_id());

    // The next call of a tool that reads the session again starts where no hook point moved.
    let mut other = session(&["ls", "read"]);
    let step = calling(&mut other);
    let froms: Vec<usize> = tool_calls(&step)
        .iter()
        .map(|(_, _, state)| state.as_ref().unwrap().session.entries.from)
        .collect();
    assert_eq!(froms, [0, 0]);
}

#[test]
fn a_tools_action_is_applied_at_once_and_refused_for_a_call_not_running() {
    let mut s = session(&["ls"]);
    let step = calling(&mut s);
    let (call, _, _) = tool_calls(&step).remove(0);
    let before = s.tree().entries().len();
    let acted = SessionInput::Answer(Input::ToolActed {
        call,
        action: HookAction::AppendEntry {
            custom_type: "inspected".into(),
            data: Some(json!({"seen": true})),
        },
    });
    let step = s.step(3, acted).unwrap();
    assert_eq!(s.tree().entries().len(), before + 1, "written at once");
    assert!(matches!(
        s.tree().entries().last().unwrap(),
        SessionEntry::Custom(c) if c.custom_type == "inspected"
    ));
    assert_eq!(support::kinds(&step), ["entry_appended"]);

    let stranger = SessionInput::Answer(Input::ToolActed {
        call: CallId(999),
        action: HookAction::AppendEntry {
            custom_type: "late".into(),
            data: None,
        },
    });
    let error = s.step(4, stranger).unwrap_err();
    assert!(
        error.to_string().contains("no such tool call is running"),
        "{error}"
    );
    assert_eq!(s.tree().entries().len(), before + 1, "nothing written");
}

#[test]
fn a_tools_abort_aborts_the_run_its_calls_with_it() {
    let mut s = session(&["ls"]);
    let step = calling(&mut s);
    let calls: Vec<CallId> = tool_calls(&step).iter().map(|(c, _, _)| *c).collect();
    let acted = SessionInput::Answer(Input::ToolActed {
        call: calls[0],
        action: HookAction::Abort,
    });
    let step = s.step(3, acted).unwrap();
    let cancelled: Vec<CallId> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Cancel { call } => Some(*call),
            _ => None,
        })
        .collect();
    assert_eq!(cancelled, calls, "{:?}", step.effects);
}
