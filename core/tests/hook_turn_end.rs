//! The `turn_end` hook point: where a handler is registered, a finished turn waits for the
//! extensions before `turn_end` is emitted (Pi 1.5.2 awaits its `finishTurn` first), and a
//! handler's `ctx.abort()` — Harbor's turn cap — aborts the run: the next request is answered
//! `This operation was aborted` at once, and that turn ends through the hook point too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome, HookPayload,
};
use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, Prompt, Step, StepError, ToolOutcome,
    ABORTED_REQUEST,
};
use pi_core::event::{AgentEvent, ToolResult};
use pi_core::message::{AgentMessage, ContentBlock, StopReason};
use pi_core::script::{mock_model, tool};
use serde_json::json;

#[path = "support/agent.rs"]
mod support;
use support::{echo_calls, hooks, model_calls, tool_run};

fn machine() -> AgentMachine {
    AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        handled_hooks: HandledHooks::of([HookEvent::TurnEnd]),
        ..AgentConfig::default()
    })
}

fn turn_ends(step: &Step) -> usize {
    step.events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TurnEnd { .. }))
        .count()
}

fn done(call: CallId, actions: Vec<HookAction>) -> Input {
    Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Done,
            actions,
            errors: vec![],
        },
    }
}

/// Prompts and runs one turn with a call of `echo`; the step that finished the call.
fn one_tool_turn(m: &mut AgentMachine) -> Step {
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let call = model_calls(&step)[0];
    let step = echo_calls(m, 2, call, &[("c1", "one")]);
    let run = tool_run(&step);
    m.step(
        3,
        Input::ToolFinished {
            call: run,
            outcome: ToolOutcome::Ok(ToolResult {
                content: vec![ContentBlock::text("one")],
                ..ToolResult::default()
            }),
        },
    )
    .unwrap()
}

#[test]
fn a_finished_turn_waits_for_turn_end_before_it_is_announced_and_goes_on_after() {
    let mut m = machine();
    let step = one_tool_turn(&mut m);
    assert_eq!(
        turn_ends(&step),
        0,
        "Pi awaits the handlers before turn_end"
    );
    assert!(model_calls(&step).is_empty());
    let hooks = hooks(&step);
    assert_eq!(hooks.len(), 1);
    let transcript: Vec<_> = m
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(
        serde_json::to_value(&hooks[0].1).unwrap(),
        json!({"type": "turn_end", "turnIndex": 0, "message": transcript[1],
               "toolResults": [transcript[2]]})
    );
    assert!(matches!(
        m.step(4, Input::Continue),
        Err(StepError::Rejected(_))
    ));
    let step = m.step(5, done(hooks[0].0, vec![])).unwrap();
    assert_eq!(turn_ends(&step), 1);
    assert_eq!(model_calls(&step).len(), 1, "the run goes on");
}

#[test]
fn an_abort_at_turn_end_ends_the_run_without_another_request() {
    let compact = HookAction::Compact {
        custom_instructions: None,
        callback: None,
    };
    for action in [HookAction::Abort, compact] {
        a_turn_end_asking(action);
    }
}

/// A `turn_end` whose handlers asked for `action`, which aborts (`ctx.abort()`, or
/// `ctx.compact()`, which aborts first): the run ends without another request.
fn a_turn_end_asking(action: HookAction) {
    let mut m = machine();
    let step = one_tool_turn(&mut m);
    let (call, _) = hooks(&step)[0].clone();
    let step = m.step(4, done(call, vec![action])).unwrap();
    assert!(model_calls(&step).is_empty(), "{:?}", step.effects);
    assert!(
        step.effects
            .iter()
            .all(|e| matches!(e, Effect::Hook { .. })),
        "nothing to cancel: {:?}",
        step.effects
    );
    let last = m.messages().last().unwrap();
    assert!(
        matches!(last, AgentMessage::Assistant(a) if a.stop_reason == StopReason::Aborted
            && a.error_message.as_deref() == Some(ABORTED_REQUEST)),
        "{last:?}"
    );
    // The aborted turn ends through the hook point too, as the second turn.
    let hooks = hooks(&step);
    assert_eq!(hooks.len(), 1);
    assert!(matches!(
        hooks[0].1,
        HookPayload::TurnEnd { turn_index: 1, .. }
    ));
    let step = m.step(5, done(hooks[0].0, vec![])).unwrap();
    assert_eq!(turn_ends(&step), 1);
    assert!(matches!(
        step.events.last(),
        Some(AgentEvent::AgentEnd { .. })
    ));
    assert!(!m.is_streaming());
}

#[test]
fn an_abort_while_turn_end_waits_cancels_nothing_already_answered() {
    let mut m = machine();
    let step = one_tool_turn(&mut m);
    let (call, _) = hooks(&step)[0].clone();
    let step = m.step(4, Input::Abort).unwrap();
    assert!(step.effects.is_empty(), "{:?}", step.effects);
    let step = m.step(5, done(call, vec![])).unwrap();
    assert!(model_calls(&step).is_empty());
}
