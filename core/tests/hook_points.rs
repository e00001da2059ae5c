//! Extension hook points in the agent machine: the machine waits for a decision only where a
//! handler is registered, resumes on it as Pi 1.5.2's loop does, and the same inputs give the
//! same bytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome, HookPayload, ToolCallVerdict,
    TOOL_BLOCKED,
};
use pi_core::agent::{
    AgentConfig, AgentHooks, AgentMachine, BeforeToolCall, Block, CallId, Effect, Input, Prompt,
    Step, StreamEvent, ToolOutcome,
};
use pi_core::event::{AgentEvent, ToolResult};
use pi_core::message::{AssistantMessage, ContentBlock, StopReason, ToolCall};
use pi_core::script::{mock_model, tool};
use serde_json::json;

#[path = "support/agent.rs"]
mod support;
use support::{echo_calls, hooks};

fn machine(handled: HandledHooks) -> AgentMachine {
    AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        handled_hooks: handled,
        ..AgentConfig::default()
    })
}

fn model_call(step: &Step) -> CallId {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a model call")
}

/// Prompts, and answers the model with two calls of `echo`; the step after the answer.
fn two_calls(m: &mut AgentMachine) -> Step {
    let call = model_call(&m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    echo_calls(m, 2, call, &[("c1", "one"), ("c2", "two")])
}

fn runs(step: &Step) -> Vec<(CallId, String, serde_json::Value)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool {
                call,
                tool_call_id,
                args,
                ..
            } => Some((*call, tool_call_id.clone(), args.clone())),
            _ => None,
        })
        .collect()
}

fn decided(call: CallId, verdict: ToolCallVerdict) -> Input {
    decided_asking(call, verdict, vec![])
}

/// The gate `call` decided `verdict`, its handlers having asked for `actions`.
fn decided_asking(call: CallId, verdict: ToolCallVerdict, actions: Vec<HookAction>) -> Input {
    Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::ToolCall(verdict),
            actions,
            errors: vec![],
        },
    }
}

#[test]
fn without_a_tool_call_handler_the_machine_never_waits_for_one() {
    let handled = [
        HandledHooks::default(),
        HandledHooks::of([HookEvent::ToolResult, HookEvent::TurnEnd]),
    ];
    for handled in handled {
        let mut m = machine(handled);
        let step = two_calls(&mut m);
        assert!(hooks(&step).is_empty());
        assert_eq!(runs(&step).len(), 2);
    }
}

/// The whole run with a gate that changes the first call's arguments and blocks the second
/// without a reason; every step's effects and events, as text.
fn gated_run() -> Vec<String> {
    let mut m = machine(HandledHooks::of([HookEvent::ToolCall]));
    let mut trace = Vec::new();
    let mut record = |step: &Step| trace.push(format!("{:?} {:?}", step.effects, step.events));
    let step = two_calls(&mut m);
    record(&step);
    // Pi prepares the calls one at a time: the first call's gate, and nothing of the second yet.
    let gates = hooks(&step);
    assert_eq!(gates.len(), 1);
    assert!(runs(&step).is_empty());
    assert_eq!(
        gates[0].1,
        HookPayload::ToolCall {
            tool_name: "echo".into(),
            tool_call_id: "c1".into(),
            parent_tool_call_id: None,
            input: json!({"value": "one"}),
        }
    );
    let step = m
        .step(
            3,
            decided(
                gates[0].0,
                ToolCallVerdict::Run {
                    input: json!({"value": "changed"}),
                },
            ),
        )
        .unwrap();
    record(&step);
    let gates = hooks(&step);
    assert_eq!(gates.len(), 1);
    assert!(runs(&step).is_empty());
    let step = m
        .step(
            4,
            decided(
                gates[0].0,
                ToolCallVerdict::Block {
                    reason: "Tool execution was blocked".into(),
                    terminate: None,
                },
            ),
        )
        .unwrap();
    record(&step);
    let blocked = step
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } if tool_call_id == "c2" => Some((result.clone(), *is_error)),
            _ => None,
        })
        .expect("the blocked call's end");
    assert_eq!(
        blocked,
        (ToolResult::error("Tool execution was blocked"), true)
    );
    // The parallel batch runs the prepared call, with the arguments the gate gave it.
    let run = runs(&step);
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].1, "c1");
    assert_eq!(run[0].2, json!({"value": "changed"}));
    let step = m
        .step(
            5,
            Input::ToolFinished {
                call: run[0].0,
                outcome: ToolOutcome::Ok(ToolResult {
                    content: vec![ContentBlock::text("changed")],
                    ..ToolResult::default()
                }),
            },
        )
        .unwrap();
    record(&step);
    model_call(&step);
    trace
}

#[test]
fn a_gate_suspends_each_call_in_turn_and_its_block_is_pis_error_result() {
    let first = gated_run();
    assert_eq!(first, gated_run(), "same inputs, same bytes");
}

#[test]
fn a_decision_nobody_asked_for_is_refused() {
    let mut m = machine(HandledHooks::of([HookEvent::ToolCall]));
    let step = two_calls(&mut m);
    let gate = hooks(&step)[0].0;
    let refused = m.step(
        3,
        decided(
            CallId(gate.0 + 50),
            ToolCallVerdict::Run {
                input: json!({"value": "x"}),
            },
        ),
    );
    assert!(refused.is_err(), "{refused:?}");
    // The machine is unchanged: the real decision still goes through.
    let step = m
        .step(
            4,
            decided(
                gate,
                ToolCallVerdict::Thrown {
                    error: "Extension failed".into(),
                },
            ),
        )
        .unwrap();
    assert!(step.events.iter().any(|e| matches!(e,
        AgentEvent::ToolExecutionEnd { tool_call_id, result, is_error: true, .. }
            if tool_call_id == "c1" && *result == ToolResult::error("Extension failed"))));
}

fn transformed(call: CallId, content: Option<&str>, is_error: Option<bool>) -> Input {
    Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::ToolResult {
                content: content.map(|t| vec![ContentBlock::text(t)]),
                details: None,
                is_error,
            },
            actions: vec![],
            errors: vec![],
        },
    }
}

fn end_of(step: &Step, id: &str) -> Option<(ToolResult, bool)> {
    step.events.iter().find_map(|e| match e {
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            result,
            is_error,
            ..
        } if tool_call_id == id => Some((result.clone(), *is_error)),
        _ => None,
    })
}

#[test]
fn a_tool_result_handler_replaces_fields_before_the_call_ends() {
    let mut m = machine(HandledHooks::of([HookEvent::ToolResult]));
    let step = two_calls(&mut m);
    assert!(hooks(&step).is_empty(), "no tool_call handler, no gate");
    let run = runs(&step);
    assert_eq!(run.len(), 2);
    let finished = |text: &str| {
        ToolOutcome::Ok(ToolResult {
            content: vec![ContentBlock::text(text)],
            details: Some(json!({"kept": true})),
            ..ToolResult::default()
        })
    };
    let step = m
        .step(
            3,
            Input::ToolFinished {
                call: run[0].0,
                outcome: finished("secret"),
            },
        )
        .unwrap();
    assert!(
        end_of(&step, "c1").is_none(),
        "the call ends after the decision"
    );
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert!(
        matches!(&asked[0].1, HookPayload::ToolResult { tool_call_id, content, is_error: false, .. }
        if tool_call_id == "c1" && *content == vec![ContentBlock::text("secret")])
    );
    let step = m
        .step(4, transformed(asked[0].0, Some("redacted"), Some(true)))
        .unwrap();
    let (result, is_error) = end_of(&step, "c1").expect("c1 ends");
    assert_eq!(result.content, vec![ContentBlock::text("redacted")]);
    assert_eq!(result.details, Some(json!({"kept": true})));
    assert!(is_error);
    let step = m
        .step(
            5,
            Input::ToolFinished {
                call: run[1].0,
                outcome: finished("two"),
            },
        )
        .unwrap();
    let asked = hooks(&step);
    // A tool_call decision does not answer a tool_result hook point.
    assert!(m
        .step(
            6,
            decided(asked[0].0, ToolCallVerdict::Run { input: json!({}) })
        )
        .is_err());
    let step = m.step(7, transformed(asked[0].0, None, None)).unwrap();
    let (result, is_error) = end_of(&step, "c2").expect("c2 ends");
    assert_eq!(result.content, vec![ContentBlock::text("two")]);
    assert!(!is_error);
    model_call(&step);
}

/// Runs a prompt whose answer calls `echo` `calls` times, answering every effect in order: hook
/// points with decisions that change nothing, tools with their value. The events, and how many
/// hook points of each kind were asked.
fn run_with(
    handled: HandledHooks,
    sequential: bool,
    calls: usize,
) -> (Vec<String>, Vec<HookEvent>) {
    let mut m = AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        handled_hooks: handled,
        tool_execution: if sequential {
            pi_core::agent::ToolExecution::Sequential
        } else {
            pi_core::agent::ToolExecution::Parallel
        },
        ..AgentConfig::default()
    });
    let mut events = Vec::new();
    let mut asked = Vec::new();
    let mut pending: std::collections::VecDeque<Effect> = std::collections::VecDeque::new();
    let mut model_calls = 0;
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    events.extend(step.events.iter().map(|e| format!("{e:?}")));
    pending.extend(step.effects);
    while let Some(effect) = pending.pop_front() {
        let input = match effect {
            Effect::CallModel { call, .. } => {
                model_calls += 1;
                let mut message = AssistantMessage::default();
                let reason = if model_calls == 1 {
                    for i in 0..calls {
                        message.content.push(ContentBlock::ToolCall(ToolCall {
                            id: format!("c{i}"),
                            name: "echo".into(),
                            arguments: json!({ "value": format!("v{i}") }),
                            ..Default::default()
                        }));
                    }
                    StopReason::ToolUse
                } else {
                    message.content.push(ContentBlock::text("done"));
                    StopReason::Stop
                };
                Input::Model {
                    call,
                    event: StreamEvent::Done { reason, message },
                }
            }
            Effect::RunTool { call, args, .. } => Input::ToolFinished {
                call,
                outcome: ToolOutcome::Ok(ToolResult {
                    content: vec![ContentBlock::text(args["value"].as_str().unwrap())],
                    ..ToolResult::default()
                }),
            },
            Effect::Hook { call, payload, .. } => {
                asked.push(payload.event());
                let decision = match payload {
                    HookPayload::ToolCall { input, .. } => {
                        HookDecision::ToolCall(ToolCallVerdict::Run { input })
                    }
                    HookPayload::TurnEnd { .. } => HookDecision::Done,
                    HookPayload::Context { .. } => HookDecision::Context { messages: None },
                    _ => HookDecision::ToolResult {
                        content: None,
                        details: None,
                        is_error: None,
                    },
                };
                Input::HookDecided {
                    call,
                    outcome: HookOutcome {
                        decision,
                        actions: vec![],
                        errors: vec![],
                    },
                }
            }
            Effect::Cancel { .. } | Effect::AnswerNested { .. } => continue,
        };
        let step = m.step(1, input).unwrap();
        events.extend(step.events.iter().map(|e| format!("{e:?}")));
        pending.extend(step.effects);
    }
    (events, asked)
}

#[test]
fn decisions_that_change_nothing_give_the_run_without_extensions_and_only_handled_points_wait() {
    let sets = [
        vec![],
        vec![HookEvent::ToolCall],
        vec![HookEvent::ToolResult],
        vec![HookEvent::ToolCall, HookEvent::ToolResult],
        vec![HookEvent::TurnEnd, HookEvent::Input],
        vec![HookEvent::Context, HookEvent::ToolCall],
    ];
    for sequential in [false, true] {
        for calls in 1..=3 {
            let (plain, none) = run_with(HandledHooks::default(), sequential, calls);
            assert!(none.is_empty());
            for set in &sets {
                let (events, asked) =
                    run_with(HandledHooks::of(set.iter().copied()), sequential, calls);
                assert_eq!(
                    events, plain,
                    "{set:?}, sequential {sequential}, {calls} calls"
                );
                for event in [HookEvent::ToolCall, HookEvent::ToolResult] {
                    let n = asked.iter().filter(|e| **e == event).count();
                    let expected = if set.contains(&event) { calls } else { 0 };
                    assert_eq!(n, expected, "{event:?} asked, {set:?}");
                }
                assert_eq!(
                    asked.len(),
                    asked.iter().filter(|e| set.contains(e)).count()
                );
            }
        }
    }
}

/// A program's `before_tool_call` that blocks every call with an empty reason, asking the run
/// to end after the batch.
struct BlockAll;

impl AgentHooks for BlockAll {
    fn before_tool_call(&self, _: &BeforeToolCall<'_>) -> Result<Option<Block>, String> {
        Ok(Some(Block {
            reason: Some(String::new()),
            terminate: Some(true),
        }))
    }
}

#[test]
fn a_synchronous_block_is_the_gates_block_default_text_and_terminate_included() {
    let mut m = AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        hooks: Arc::new(BlockAll),
        ..AgentConfig::default()
    });
    let step = two_calls(&mut m);
    // Pi's `reason || TOOL_BLOCKED`: an empty reason gives the default text.
    let ends: Vec<_> = step
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => Some((result.content.clone(), *is_error)),
            _ => None,
        })
        .collect();
    let blocked = (vec![ContentBlock::text(TOOL_BLOCKED)], true);
    assert_eq!(ends, [blocked.clone(), blocked]);
    // Every call of the batch asked to terminate: no further model call, the run ends.
    assert!(runs(&step).is_empty());
    assert!(
        !step
            .effects
            .iter()
            .any(|e| matches!(e, Effect::CallModel { .. })),
        "{:?}",
        step.effects
    );
    assert!(step
        .events
        .iter()
        .any(|e| matches!(e, AgentEvent::AgentEnd { .. })));
}

/// Pi 1.5.2's `prepareToolCall` checks the signal after `beforeToolCall` returns: an abort while
/// the gate waits wins over its verdict, so the gated call ends `Operation aborted` and never
/// runs; nothing is cancelled meanwhile (Pi awaits the handlers). No call of the batch runs after
/// the abort. (Pi then breaks out of the batch and leaves the later calls unstarted and without
/// a result; this machine keeps every call answered, invariant 6, so the second call is asked
/// at its gate and ends `Operation aborted` too.)
#[test]
fn an_abort_while_the_gate_waits_wins_and_no_call_runs() {
    let mut m = machine(HandledHooks::of([HookEvent::ToolCall]));
    let step = two_calls(&mut m);
    let (gate, payload) = hooks(&step)[0].clone();
    assert!(matches!(payload, HookPayload::ToolCall { tool_call_id, .. } if tool_call_id == "c1"));
    let step = m.step(3, Input::Abort).unwrap();
    assert!(step.effects.is_empty(), "{:?}", step.effects);
    let run = |input: serde_json::Value| ToolCallVerdict::Run { input };
    let mut steps = vec![m
        .step(4, decided(gate, run(json!({"value": "one"}))))
        .unwrap()];
    if let Some((gate, _)) = hooks(&steps[0]).first().cloned() {
        steps.push(
            m.step(5, decided(gate, run(json!({"value": "two"}))))
                .unwrap(),
        );
    }
    let ends: Vec<_> = steps
        .iter()
        .flat_map(|step| {
            assert!(runs(step).is_empty(), "{:?}", step.effects);
            step.events.iter().filter_map(|e| match e {
                AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    result,
                    is_error,
                    ..
                } => Some((
                    tool_call_id.clone(),
                    serde_json::to_value(result).unwrap(),
                    *is_error,
                )),
                _ => None,
            })
        })
        .collect();
    let aborted =
        json!({"content": [{"type": "text", "text": "Operation aborted"}], "details": {}});
    assert_eq!(
        ends,
        vec![
            ("c1".to_owned(), aborted.clone(), true),
            ("c2".to_owned(), aborted, true)
        ]
    );
}

/// A gate's own handler aborting (`ctx.abort()`, or `ctx.compact()`, which aborts first) is an
/// abort while the gate waits: Pi's handler aborts the signal before `prepareToolCall` looks at
/// it, so the call it lets through ends `Operation aborted` and never starts (a command that
/// would only be cancelled is never begun).
#[test]
fn a_gates_own_abort_wins_over_its_verdict_and_the_call_never_starts() {
    let compact = HookAction::Compact {
        custom_instructions: None,
        callback: None,
    };
    for action in [HookAction::Abort, compact] {
        let mut m = machine(HandledHooks::of([HookEvent::ToolCall]));
        let step = two_calls(&mut m);
        let (gate, _) = hooks(&step)[0].clone();
        let verdict = ToolCallVerdict::Run {
            input: json!({"value": "one"}),
        };
        let step = m
            .step(3, decided_asking(gate, verdict, vec![action.clone()]))
            .unwrap();
        assert!(runs(&step).is_empty(), "{action:?}: {:?}", step.effects);
        assert!(
            !step
                .effects
                .iter()
                .any(|e| matches!(e, Effect::Cancel { .. })),
            "{action:?}: nothing started to cancel: {:?}",
            step.effects
        );
        let end = step.events.iter().find_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } if tool_call_id == "c1" => Some((serde_json::to_value(result).unwrap(), *is_error)),
            _ => None,
        });
        assert_eq!(
            end,
            Some((
                json!({"content": [{"type": "text", "text": "Operation aborted"}], "details": {}}),
                true
            )),
            "{action:?}"
        );
    }
}
