//! The extension API's session actions that come back with a hook point's decision
//! (`pi.setThinkingLevel`, `pi.setSessionName`, `pi.setLabel`), applied by the session machine as
//! Pi 1.5.2's `AgentSession` applies them when a handler calls them: in the order asked, before
//! the decision lets the loop go on. A level is clamped to the model and written and announced
//! only when it changes; one set mid run is what the run's next turn asks with. The decision is
//! an input, so a replay applies the same actions at the same point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload, InputAction};
use pi_core::agent::{Effect, ModelRequest};
use pi_core::agent_session::{SessionMachine, SessionStep};
use pi_core::event::Event;
use pi_core::model::{clamp_thinking_level, Model, ThinkingLevel};
use pi_core::script::mock_model;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{decided_as, entries_of, hook, requests, tool_finished, tool_run};

#[path = "support/actions.rs"]
mod actions;
use actions::{answered, prompt, reasoner, started, tool_call_answer};

fn session(model: Model) -> SessionMachine {
    session_with(model, [HookEvent::BeforeAgentStart, HookEvent::TurnEnd])
}

fn session_with(model: Model, handled: impl IntoIterator<Item = HookEvent>) -> SessionMachine {
    // As a run is built: the level clamped to the model.
    let level = clamp_thinking_level(&model, ThinkingLevel::Medium);
    support::acting(model, level, handled)
}

fn text_answer() -> Value {
    let mut answer = tool_call_answer();
    answer["content"] = json!([{"type": "text", "text": "done"}]);
    answer["stopReason"] = json!("stop");
    answer
}

fn set_level(level: ThinkingLevel) -> HookAction {
    HookAction::SetThinkingLevel { level }
}

/// A run started at 2 whose first turn, answered at 3, called a tool that finished at 4:
/// the step at its `turn_end` and the first turn's request.
fn at_turn_end_after_a_tool(s: &mut SessionMachine) -> (SessionStep, ModelRequest) {
    let call = prompt(s);
    let step = s.step(2, started(call, vec![])).unwrap();
    let (call, request) = requests(&step).remove(0);
    let step = s.step(3, answered(call, tool_call_answer())).unwrap();
    let finished = tool_finished(tool_run(&step.effects), "v");
    (s.step(4, finished).unwrap(), request)
}

/// The event types of a step, with the level or name they carry.
fn events(step: &SessionStep) -> Vec<String> {
    step.events
        .iter()
        .map(|event| {
            let value = serde_json::to_value(event).unwrap();
            let kind = value["type"].as_str().unwrap().to_owned();
            match &value {
                v if v.get("level").is_some() => format!("{kind} {}", v["level"]),
                v if v.get("name").is_some() && !matches!(event, Event::Agent(_)) => {
                    format!("{kind} {}", v["name"])
                }
                _ => kind,
            }
        })
        .collect()
}

#[test]
fn a_level_and_a_name_asked_before_the_run_are_written_before_it_starts_and_sent() {
    let mut s = session(reasoner());
    let call = prompt(&mut s);
    let step = s
        .step(
            2,
            started(
                call,
                vec![
                    set_level(ThinkingLevel::High),
                    HookAction::SetSessionName {
                        name: "  Reading\r\nit  ".into(),
                    },
                ],
            ),
        )
        .unwrap();
    assert_eq!(
        events(&step)[..3],
        [
            "thinking_level_changed \"high\"",
            "session_info_changed \"Reading it\"",
            "agent_start"
        ]
    );
    assert_eq!(
        entries_of(&s, "thinking_level_change"),
        vec![json!({"type": "thinking_level_change", "thinkingLevel": "high"})]
    );
    assert_eq!(
        entries_of(&s, "session_info"),
        vec![json!({"type": "session_info", "name": "Reading it"})],
        "Pi's name: line breaks one space, trimmed"
    );
    assert_eq!(s.tree().name().as_deref(), Some("Reading it"));
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.reasoning, Some(ThinkingLevel::High));
    assert!(step.persist);
}

#[test]
fn a_level_asked_at_a_turn_end_is_clamped_written_before_it_and_sent_by_the_next_turn() {
    let mut s = session(reasoner());
    let (step, request) = at_turn_end_after_a_tool(&mut s);
    assert_eq!(request.reasoning, Some(ThinkingLevel::Medium));
    // `xhigh` is beyond this model: clamped to `high`, a change; `low` another.
    let step = s
        .step(
            5,
            decided_as(
                hook(&step),
                HookDecision::Done,
                vec![
                    set_level(ThinkingLevel::Xhigh),
                    set_level(ThinkingLevel::High),
                    set_level(ThinkingLevel::Low),
                ],
            ),
        )
        .unwrap();
    assert_eq!(
        events(&step)[..3],
        [
            "thinking_level_changed \"high\"",
            "thinking_level_changed \"low\"",
            "turn_end"
        ],
        "a level already in force is neither written nor announced"
    );
    assert_eq!(
        entries_of(&s, "thinking_level_change"),
        vec![
            json!({"type": "thinking_level_change", "thinkingLevel": "high"}),
            json!({"type": "thinking_level_change", "thinkingLevel": "low"}),
        ]
    );
    let (call, request) = requests(&step).remove(0);
    assert_eq!(request.reasoning, Some(ThinkingLevel::Low), "the next turn");
    let step = s.step(6, answered(call, text_answer())).unwrap();
    let step = s
        .step(7, decided_as(hook(&step), HookDecision::Done, vec![]))
        .unwrap();
    assert!(events(&step).contains(&"agent_settled".to_owned()));
    assert_eq!(s.agent().thinking_level(), ThinkingLevel::Low);
}

#[test]
fn a_level_a_model_without_reasoning_cannot_use_changes_nothing() {
    let mut s = session(mock_model());
    let call = prompt(&mut s);
    let step = s
        .step(2, started(call, vec![set_level(ThinkingLevel::High)]))
        .unwrap();
    assert_eq!(events(&step)[0], "agent_start");
    assert!(entries_of(&s, "thinking_level_change").is_empty());
    assert_eq!(requests(&step)[0].1.reasoning, None);
}

#[test]
fn a_label_is_written_on_an_entry_the_session_holds_and_cleared_without_one() {
    let mut s = session(reasoner());
    let call = prompt(&mut s);
    let step = s.step(2, started(call, vec![])).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(3, answered(call, text_answer())).unwrap();
    s.step(4, decided_as(hook(&step), HookDecision::Done, vec![]))
        .unwrap();
    let target = s.tree().entries()[0].id().to_owned();
    let call = prompt(&mut s);
    let step = s
        .step(
            5,
            started(
                call,
                vec![
                    HookAction::SetLabel {
                        entry_id: target.clone(),
                        label: Some("start".into()),
                    },
                    HookAction::SetLabel {
                        entry_id: "not-an-entry".into(),
                        label: Some("lost".into()),
                    },
                    HookAction::SetLabel {
                        entry_id: target.clone(),
                        label: None,
                    },
                ],
            ),
        )
        .unwrap();
    assert_eq!(
        entries_of(&s, "label"),
        vec![
            json!({"type": "label", "targetId": target, "label": "start"}),
            json!({"type": "label", "targetId": target}),
        ],
        "an entry the session does not hold gets none"
    );
    assert_eq!(
        events(&step)[0],
        "agent_start",
        "a label is announced by no event"
    );
}

fn user_message(content: Value, deliver_as: Option<&str>) -> HookAction {
    HookAction::SendUserMessage {
        content: serde_json::from_value(content).unwrap(),
        deliver_as: deliver_as.map(str::to_owned),
        expand_prompt_templates: None,
    }
}

/// The text of the last message a request sends.
fn last_text(request: &ModelRequest) -> Value {
    let last = serde_json::to_value(request.messages.last().unwrap()).unwrap();
    json!([last["role"], last["content"][0]["text"]])
}

#[test]
fn user_messages_sent_while_streaming_are_queued_and_answered_in_the_same_run() {
    let mut s = session(reasoner());
    let (step, _) = at_turn_end_after_a_tool(&mut s);
    let step = s
        .step(
            5,
            decided_as(
                hook(&step),
                HookDecision::Done,
                vec![
                    user_message(json!("Then say goodbye."), Some("followUp")),
                    user_message(json!("Refused: no deliverAs while streaming."), None),
                    user_message(
                        json!([{"type": "text", "text": "Count its lines."},
                               {"type": "text", "text": "Briefly."}]),
                        Some("steer"),
                    ),
                ],
            ),
        )
        .unwrap();
    let updates: Vec<Value> = step
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == "queue_update")
        .collect();
    assert_eq!(
        updates[..2],
        [
            json!({"type": "queue_update", "steering": [], "followUp": ["Then say goodbye."]}),
            json!({"type": "queue_update", "steering": ["Count its lines.\nBriefly."],
                   "followUp": ["Then say goodbye."]}),
        ],
        "queued as asked, the text parts joined"
    );
    let (call, request) = requests(&step).remove(0);
    assert_eq!(
        last_text(&request),
        json!(["user", "Count its lines.\nBriefly."]),
        "the steering message is the next turn's"
    );
    let step = s.step(6, answered(call, text_answer())).unwrap();
    let step = s
        .step(7, decided_as(hook(&step), HookDecision::Done, vec![]))
        .unwrap();
    let (_, request) = requests(&step).remove(0);
    assert_eq!(
        last_text(&request),
        json!(["user", "Then say goodbye."]),
        "then the follow-up, in the same run"
    );
    assert!(!events(&step).contains(&"agent_start".to_owned()));
    let texts: Vec<Value> = s
        .agent()
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert!(
        !texts.contains(&json!("Refused: no deliverAs while streaming.")),
        "{texts:?}"
    );
}

#[test]
fn a_user_message_goes_through_the_input_handlers_before_the_hook_point_goes_on() {
    let mut s = session_with(
        reasoner(),
        [
            HookEvent::BeforeAgentStart,
            HookEvent::TurnEnd,
            HookEvent::Input,
        ],
    );
    let step = s.step(1, support::prompt("What does it say?")).unwrap();
    let decision = HookDecision::Input(InputAction::Continue);
    let step = s
        .step(1, decided_as(hook(&step), decision, vec![]))
        .unwrap();
    let step = s.step(2, started(hook(&step), vec![])).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(3, answered(call, text_answer())).unwrap();
    let asked = vec![user_message(json!("Then say goodbye."), Some("followUp"))];
    let step = s
        .step(4, decided_as(hook(&step), HookDecision::Done, asked))
        .unwrap();
    assert!(events(&step).is_empty(), "{:?}", events(&step));
    let input = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Hook { call, payload, .. } => Some((*call, payload.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        serde_json::to_value(&input.1).unwrap(),
        json!({"type": "input", "text": "Then say goodbye.", "source": "extension",
               "streamingBehavior": "followUp"})
    );
    assert!(matches!(input.1, HookPayload::Input { .. }));
    let transform = HookDecision::Input(InputAction::Transform {
        text: "[marked] Then say goodbye.".into(),
        images: None,
    });
    let step = s.step(5, decided_as(input.0, transform, vec![])).unwrap();
    assert_eq!(
        events(&step)[..3],
        ["queue_update", "turn_end", "turn_start"],
        "queued, then the turn ends and the follow-up's turn starts"
    );
    let (_, request) = requests(&step).remove(0);
    assert_eq!(
        last_text(&request),
        json!(["user", "[marked] Then say goodbye."])
    );
}
