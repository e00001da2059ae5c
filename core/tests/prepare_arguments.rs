//! A tool whose `prepareArguments` shim runs outside the machine (an extension's tool): each
//! call waits, before it is validated, at a `prepare_arguments` hook point holding the model's
//! arguments; the answer is validated and run with (the `tool_call` gate seeing it), a throw is
//! the call's error result, and `undefined` fails validation as Pi words it. A parallel batch
//! asks its calls' shims one at a time, in call order, and runs the prepared calls together. A
//! run aborted while a shim was asked answers the call as Pi's `prepareToolCall` does, and
//! arguments a shim changed in place are the call's in the next request.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::custom_tool::CustomToolDefinition;
use pi_core::agent::hooks::{
    HookDecision, HookEvent, HookPayload, PreparedArguments, ToolCallVerdict,
};
use pi_core::agent::{CallId, Effect};
use pi_core::agent_session::{SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;

fn session(handled: &[HookEvent]) -> SessionMachine {
    let greet = CustomToolDefinition {
        prepare_arguments: true,
        ..CustomToolDefinition::new(
            "greet",
            "Greets someone.",
            json!({"type": "object", "required": ["name"],
                   "properties": {"name": {"type": "string"}}}),
        )
    };
    support::hooked(
        handled,
        vec![greet.spec()],
        &[],
        CompactionSettings::default(),
    )
}

/// The session prompted, its model calling `greet` with each of `calls` (id, arguments).
fn calling(s: &mut SessionMachine, calls: &[(&str, Value)]) -> SessionStep {
    let step = s.step(1, support::prompt("go")).unwrap();
    let (call, _) = support::requests(&step).remove(0);
    let content: Vec<Value> = calls
        .iter()
        .map(|(id, args)| json!({"type": "toolCall", "id": id, "name": "greet", "arguments": args}))
        .collect();
    s.step(2, support::answered_with(call, json!(content), "toolUse"))
        .unwrap()
}

fn runs(step: &SessionStep) -> Vec<(String, Value)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool {
                tool_call_id, args, ..
            } => Some((tool_call_id.clone(), args.clone())),
            _ => None,
        })
        .collect()
}

fn ended(step: &SessionStep) -> Vec<(String, String)> {
    step.events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| {
            let id = e["toolCallId"].as_str().unwrap().to_owned();
            (
                id,
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect()
}

fn shim(step: &SessionStep) -> (CallId, HookPayload) {
    let mut hooks = support::hooks(step);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    hooks.remove(0)
}

fn prepared(arguments: Option<Value>) -> HookDecision {
    HookDecision::PrepareArguments(PreparedArguments::Prepared {
        arguments,
        model_arguments: None,
    })
}

#[test]
fn each_call_asks_its_shim_in_turn_and_runs_with_what_it_gave() {
    let mut s = session(&[]);
    let step = calling(
        &mut s,
        &[("t1", json!({"who": "x"})), ("t2", json!({"name": "BOOM"}))],
    );
    let (first, payload) = shim(&step);
    assert_eq!(
        serde_json::to_value(&payload).unwrap(),
        json!({"type": "prepare_arguments", "toolName": "greet", "toolCallId": "t1",
               "arguments": {"who": "x"}})
    );
    assert!(runs(&step).is_empty(), "nothing runs before it is prepared");

    let step = s
        .step(
            3,
            support::decided_as(first, prepared(Some(json!({"name": "x"}))), vec![]),
        )
        .unwrap();
    let (second, payload) = shim(&step);
    assert!(
        matches!(payload, HookPayload::PrepareArguments { ref tool_call_id, .. } if tool_call_id == "t2")
    );
    assert!(
        runs(&step).is_empty(),
        "a parallel batch runs once every call is prepared"
    );

    let thrown = HookDecision::PrepareArguments(PreparedArguments::Thrown {
        error: "cannot prepare BOOM".into(),
        model_arguments: None,
    });
    let step = s
        .step(4, support::decided_as(second, thrown, vec![]))
        .unwrap();
    assert_eq!(
        ended(&step),
        [("t2".to_owned(), "cannot prepare BOOM".to_owned())]
    );
    assert_eq!(runs(&step), [("t1".to_owned(), json!({"name": "x"}))]);
}

#[test]
fn the_gate_sees_the_prepared_arguments_and_undefined_fails_validation() {
    let mut s = session(&[HookEvent::ToolCall]);
    let step = calling(
        &mut s,
        &[("t1", json!({"who": 7})), ("t2", json!({"name": "NONE"}))],
    );
    let (first, _) = shim(&step);
    let step = s
        .step(
            3,
            support::decided_as(first, prepared(Some(json!({"name": 7}))), vec![]),
        )
        .unwrap();
    let (gate, payload) = shim(&step);
    // Validation coerced the number the shim gave.
    assert!(
        matches!(payload, HookPayload::ToolCall { ref input, .. } if *input == json!({"name": "7"}))
    );
    let run = HookDecision::ToolCall(ToolCallVerdict::Run {
        input: json!({"name": "7"}),
    });
    let step = s.step(4, support::decided_as(gate, run, vec![])).unwrap();
    let (second, _) = shim(&step);
    let step = s
        .step(5, support::decided_as(second, prepared(None), vec![]))
        .unwrap();
    assert_eq!(
        ended(&step),
        [(
            "t2".to_owned(),
            "Validation failed for tool \"greet\":\n  - root: expected object, got undefined\n\n\
             Received arguments:\nundefined"
                .to_owned()
        )]
    );
    assert_eq!(runs(&step), [("t1".to_owned(), json!({"name": "7"}))]);
}

#[test]
fn a_run_aborted_while_the_shim_was_asked_answers_the_prepared_call_as_aborted() {
    let mut s = session(&[]);
    let step = calling(&mut s, &[("t1", json!({"who": "x"}))]);
    let (first, _) = shim(&step);
    s.step(3, pi_core::agent_session::SessionInput::Abort)
        .unwrap();
    let step = s
        .step(
            4,
            support::decided_as(first, prepared(Some(json!({"name": "x"}))), vec![]),
        )
        .unwrap();
    assert!(runs(&step).is_empty(), "{:?}", step.effects);
    assert_eq!(
        ended(&step),
        [("t1".to_owned(), "Operation aborted".to_owned())]
    );
}

#[test]
fn arguments_a_shim_changed_in_place_are_the_calls_in_the_next_request() {
    let mut s = session(&[]);
    let step = calling(&mut s, &[("t1", json!({"who": "x"}))]);
    let (first, _) = shim(&step);
    let decision = HookDecision::PrepareArguments(PreparedArguments::Prepared {
        arguments: Some(json!({"name": "x"})),
        model_arguments: Some(json!({"name": "x"})),
    });
    let step = s
        .step(3, support::decided_as(first, decision, vec![]))
        .unwrap();
    let run = support::tool_run(&step.effects);
    let step = s
        .step(
            4,
            pi_core::agent_session::SessionInput::Answer(pi_core::agent::Input::ToolFinished {
                call: run,
                outcome: pi_core::agent::ToolOutcome::Ok(pi_core::event::ToolResult::default()),
            }),
        )
        .unwrap();
    let (_, request) = support::requests(&step).remove(0);
    let sent = serde_json::to_value(&request.messages).unwrap();
    let calls: Vec<Value> = sent
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| b["arguments"].clone())
        .collect();
    assert_eq!(calls, [json!({"name": "x"})]);
}
