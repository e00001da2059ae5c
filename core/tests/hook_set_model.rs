//! `pi.setModel` as a hook point's action (`HookAction::SetModel`, the model as the extension
//! passed it), applied by the session machine as Pi 1.5.2's `setModel` does once auth was
//! found: a `model_change` entry, the thinking level carried over as a model switch carries it
//! (clamped to the new model, written and announced when it changes), and, mid run, the run's
//! next request goes to the new model. The action holds the whole model, so a replay needs no
//! catalog.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent};
use pi_core::agent_session::{SessionMachine, SessionStep};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::script::mock_model;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{decided_as, hook, requests};

#[path = "support/actions.rs"]
mod actions;
use actions::{answered, prompt, reasoner, started, tool_call_answer};

fn session() -> SessionMachine {
    let handled = [HookEvent::BeforeAgentStart, HookEvent::TurnEnd];
    support::acting(reasoner(), ThinkingLevel::High, handled)
}

fn set_model(model: Model) -> HookAction {
    HookAction::SetModel {
        model: Box::new(model),
    }
}

/// The event types of a step, with the level they carry.
fn events(step: &SessionStep) -> Vec<String> {
    step.events
        .iter()
        .map(|event| {
            let value = serde_json::to_value(event).unwrap();
            let kind = value["type"].as_str().unwrap().to_owned();
            match value.get("level") {
                Some(level) => format!("{kind} {level}"),
                None => kind,
            }
        })
        .collect()
}

/// The model and thinking-level entries written after the session's start, without ids and
/// times, in order.
fn changes(s: &SessionMachine) -> Vec<Value> {
    s.tree()
        .entries()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == "model_change" || e["type"] == "thinking_level_change")
        .map(|mut e| {
            for key in ["id", "parentId", "timestamp"] {
                e.as_object_mut().unwrap().remove(key);
            }
            e
        })
        .collect()
}

#[test]
fn a_model_set_at_a_turn_end_is_written_clamps_the_level_and_answers_the_next_request() {
    let mut s = session();
    let call = prompt(&mut s);
    let step = s.step(2, started(call, vec![])).unwrap();
    let (call, request) = requests(&step).remove(0);
    assert_eq!(request.model.id, "mock-reasoner");
    let step = s.step(3, answered(call, tool_call_answer())).unwrap();
    let tool_run = support::tool_run(&step.effects);
    let step = s.step(4, support::tool_finished(tool_run, "v")).unwrap();
    let turn_end = hook(&step);
    let step = s
        .step(
            5,
            decided_as(turn_end, HookDecision::Done, vec![set_model(mock_model())]),
        )
        .unwrap();
    assert_eq!(
        events(&step)[..3],
        ["thinking_level_changed \"off\"", "turn_end", "turn_start"],
        "the level carried over, clamped to a model without reasoning, before the turn's end"
    );
    assert_eq!(
        changes(&s),
        vec![
            json!({"type": "model_change", "provider": "mock", "modelId": "mock-model"}),
            json!({"type": "thinking_level_change", "thinkingLevel": "off"}),
        ]
    );
    let (_, request) = requests(&step).remove(0);
    assert_eq!(request.model, mock_model(), "the run's next request");
    assert_eq!(request.reasoning, None);
    assert_eq!(s.agent().model(), &mock_model());
}

#[test]
fn a_model_set_before_the_run_is_the_one_its_first_request_goes_to() {
    let mut s = session();
    let call = prompt(&mut s);
    let other = Model {
        provider: "elsewhere".into(),
        id: "their-reasoner".into(),
        ..reasoner()
    };
    let step = s
        .step(2, started(call, vec![set_model(other.clone())]))
        .unwrap();
    assert_eq!(
        events(&step)[0],
        "agent_start",
        "a level in force stays unannounced"
    );
    assert_eq!(
        changes(&s),
        vec![json!({"type": "model_change", "provider": "elsewhere", "modelId": "their-reasoner"})]
    );
    let (_, request) = requests(&step).remove(0);
    assert_eq!(request.model, other);
    assert_eq!(request.reasoning, Some(ThinkingLevel::High));
}

#[test]
fn the_action_carries_the_whole_model_as_recorded() {
    let action = set_model(reasoner());
    let recorded = serde_json::to_value(&action).unwrap();
    assert_eq!(recorded["action"], "setModel");
    assert_eq!(recorded["model"]["id"], "mock-reasoner");
    assert_eq!(recorded["model"]["baseUrl"], mock_model().base_url);
    assert_eq!(
        serde_json::from_value::<HookAction>(recorded).unwrap(),
        action
    );
}
