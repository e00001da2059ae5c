//! Loop invariants over arbitrary input sequences: prompts, steering, follow-ups, continues and
//! aborts at random points, model responses split into arbitrary deltas (possibly failing or left
//! open), tools answering in any order. 256 cases per property by default; set PROPTEST_CASES for
//! more.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;

use pi_core::agent::Effect;
use pi_core::event::AgentEvent;
use pi_core::message::{AgentMessage, AssistantMessage, StopReason};
use pi_core::script::{BlockSpec, Command, Driver, Ending, ToolReply};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Action {
    Prompt(String),
    Steer(String),
    FollowUp(String),
    Continue,
    Abort,
    Tick(u16),
    Stream {
        blocks: Vec<BlockSpec>,
        end: u8,
        usage: Option<(u64, u64)>,
    },
    Tool {
        pick: usize,
        kind: u8,
        text: String,
    },
    Config(u8),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z ]{0,12}", "[\\PC]{0,6}", Just(String::new()),]
}

/// A JSON text cut into arbitrary pieces.
fn chunked(json: String) -> impl Strategy<Value = (String, Vec<String>)> {
    let len = json.len();
    proptest::collection::vec(0..=len, 0..4).prop_map(move |mut cuts| {
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut last = 0;
        for cut in cuts {
            if json.is_char_boundary(cut) && cut > last {
                pieces.push(json[last..cut].to_owned());
                last = cut;
            }
        }
        pieces.push(json[last..].to_owned());
        (json.clone(), pieces)
    })
}

fn block() -> impl Strategy<Value = BlockSpec> {
    prop_oneof![
        3 => proptest::collection::vec(text(), 1..5).prop_map(BlockSpec::Text),
        1 => proptest::collection::vec(text(), 1..3).prop_map(BlockSpec::Thinking),
        2 => (prop_oneof![Just("echo"), Just("read"), Just("slow"), Just("missing")], "[a-z]{0,6}", any::<bool>())
            .prop_flat_map(|(name, value, valid)| {
                let args = if valid {
                    serde_json::json!({"value": value, "path": value}).to_string()
                } else {
                    "{\"other\": 1}".to_owned()
                };
                chunked(args).prop_map(move |(args, chunks)| BlockSpec::Tool {
                    name: name.to_owned(),
                    id: None,
                    args,
                    chunks,
                })
            }),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => text().prop_map(Action::Prompt),
        1 => text().prop_map(Action::Steer),
        1 => text().prop_map(Action::FollowUp),
        1 => Just(Action::Continue),
        1 => Just(Action::Abort),
        1 => any::<u16>().prop_map(Action::Tick),
        6 => (proptest::collection::vec(block(), 0..4), 0u8..6, proptest::option::of((0u64..100, 0u64..100)))
            .prop_map(|(blocks, end, usage)| Action::Stream { blocks, end, usage }),
        5 => (0usize..4, 0u8..5, text()).prop_map(|(pick, kind, text)| Action::Tool { pick, kind, text }),
        1 => (0u8..4).prop_map(Action::Config),
    ]
}

fn plan() -> impl Strategy<Value = Vec<Action>> {
    proptest::collection::vec(action(), 1..80)
}

fn command(driver: &Driver, action: &Action) -> Option<Command> {
    Some(match action {
        Action::Prompt(t) => Command::User(t.clone()),
        Action::Steer(t) => Command::Steer(t.clone()),
        Action::FollowUp(t) => Command::FollowUp(t.clone()),
        Action::Continue => Command::Continue,
        Action::Abort => Command::Abort,
        Action::Tick(ms) => Command::Tick(u64::from(*ms)),
        Action::Stream { blocks, end, usage } => {
            if !driver.model_waiting() {
                return None;
            }
            let ending = match end {
                0 | 1 => Ending::Open,
                2 => Ending::Error("500 boom".into()),
                _ => Ending::Done { stop: None },
            };
            Command::Model {
                blocks: blocks.clone(),
                usage: *usage,
                ending,
            }
        }
        Action::Tool { pick, kind, text } => {
            let running = driver.running_tools();
            let id = running.get(pick % running.len().max(1))?.clone();
            let content = serde_json::json!([{"type": "text", "text": text}]);
            let reply = match kind {
                0 => ToolReply::Error(text.clone()),
                1 => ToolReply::Update(serde_json::json!({"content": content})),
                2 => ToolReply::Ok(serde_json::json!({"content": content, "terminate": true})),
                _ => ToolReply::Ok(serde_json::json!({"content": content, "details": {"n": 1}})),
            };
            Command::Tool {
                id: Some(id),
                reply,
            }
        }
        Action::Config(n) => Command::Config(vec![match n {
            0 => ("toolExecution".into(), "sequential".into()),
            1 => ("toolExecution".into(), "parallel".into()),
            2 => ("steeringMode".into(), "all".into()),
            _ => ("followUpMode".into(), "all".into()),
        }]),
    })
}

/// Runs a plan; returns the driver (with every step) and the whole output as JSON lines.
fn run(plan: &[Action]) -> (Driver, Vec<String>) {
    let mut driver = Driver::default();
    driver
        .command(&Command::Tools(vec![
            ("echo".into(), false),
            ("read".into(), false),
            ("slow".into(), true),
        ]))
        .unwrap();
    for action in plan {
        if let Some(command) = command(&driver, action) {
            driver.command(&command).unwrap();
        }
    }
    let mut lines = Vec::new();
    for step in &driver.steps {
        for event in &step.events {
            lines.push(pi_core::json::to_string(event).unwrap());
        }
        for effect in &step.effects {
            lines.push(pi_core::json::to_string(effect).unwrap());
        }
    }
    (driver, lines)
}

enum Item<'a> {
    Event(&'a AgentEvent),
    Effect(&'a Effect),
}

fn items(driver: &Driver) -> Vec<Item<'_>> {
    driver
        .steps
        .iter()
        .flat_map(|s| {
            s.events
                .iter()
                .map(Item::Event)
                .chain(s.effects.iter().map(Item::Effect))
        })
        .collect()
}

#[path = "support/properties.rs"]
mod cases;
use cases::config;

proptest! {
    #![proptest_config(config())]

    /// Invariant 6: every tool call of a completed response gets exactly one result before the
    /// next model call, and none is left unanswered when a run ends.
    #[test]
    fn every_tool_call_is_answered_once_before_the_next_model_call(plan in plan()) {
        let (driver, _) = run(&plan);
        let mut unanswered = BTreeSet::new();
        for item in items(&driver) {
            match item {
                Item::Event(AgentEvent::MessageEnd { message: AgentMessage::Assistant(m) }) if !m.stop_reason.ends_run() => {
                    for call in m.tool_calls() {
                        prop_assert!(unanswered.insert(call.id.clone()), "duplicate tool call id {}", call.id);
                    }
                }
                Item::Event(AgentEvent::MessageEnd { message: AgentMessage::ToolResult(r) }) => {
                    prop_assert!(unanswered.remove(&r.tool_call_id), "result for {} without a pending call", r.tool_call_id);
                }
                Item::Effect(Effect::CallModel { .. }) | Item::Event(AgentEvent::AgentEnd { .. }) => {
                    prop_assert!(unanswered.is_empty(), "unanswered {:?}", unanswered);
                }
                _ => {}
            }
        }
    }

    /// agent_start opens and agent_end closes every run, once; turns and messages are balanced.
    #[test]
    fn runs_turns_and_messages_are_balanced(plan in plan()) {
        let (driver, _) = run(&plan);
        let (mut in_run, mut in_turn, mut in_message) = (false, false, false);
        for item in items(&driver) {
            let Item::Event(event) = item else { continue };
            match event {
                AgentEvent::AgentStart => { prop_assert!(!in_run); in_run = true; }
                AgentEvent::AgentEnd { .. } => {
                    prop_assert!(in_run && !in_message);
                    in_run = false;
                    in_turn = false;
                }
                other => {
                    prop_assert!(in_run, "{:?} outside a run", other);
                    match other {
                        AgentEvent::TurnStart => { prop_assert!(!in_turn); in_turn = true; }
                        AgentEvent::TurnEnd { .. } => { prop_assert!(in_turn && !in_message); in_turn = false; }
                        AgentEvent::MessageStart { .. } => { prop_assert!(in_turn && !in_message); in_message = true; }
                        AgentEvent::MessageUpdate { .. } => prop_assert!(in_message),
                        AgentEvent::MessageEnd { .. } => { prop_assert!(in_message); in_message = false; }
                        _ => prop_assert!(in_turn && !in_message),
                    }
                }
            }
        }
        prop_assert_eq!(in_run, driver.machine_is_running());
    }

    /// The message assembled from the deltas equals the one the stream finished with, but for
    /// what the loop adds after the stream (Pi 1.5's `durationMs` and `thinkingLevel`).
    #[test]
    fn the_assembled_message_equals_the_final_one(plan in plan()) {
        let (driver, _) = run(&plan);
        let mut last_snapshot = None;
        for item in items(&driver) {
            match item {
                Item::Event(AgentEvent::MessageUpdate { message, .. }) => last_snapshot = Some(message.to_message()),
                Item::Event(AgentEvent::MessageEnd { message: AgentMessage::Assistant(m) }) => {
                    if let (Some(snapshot), false) = (last_snapshot.take(), m.stop_reason.ends_run()) {
                        prop_assert!(m.duration_ms.is_some() && m.thinking_level.is_some(), "{:?}", m);
                        let streamed = AssistantMessage { duration_ms: None, thinking_level: None, ..m.clone() };
                        prop_assert_eq!(&snapshot, &streamed);
                    }
                    prop_assert!(m.stop_reason != StopReason::ToolUse || m.tool_calls().next().is_some());
                }
                _ => {}
            }
        }
    }

    /// Each model request holds the transcript so far as the model sees it: the messages ended
    /// before it, in order (the machine converts each message once and grows one shared list).
    #[test]
    fn a_request_holds_every_message_ended_before_it(plan in plan()) {
        let (driver, _) = run(&plan);
        let mut transcript = Vec::new();
        for item in items(&driver) {
            match item {
                Item::Event(AgentEvent::MessageEnd { message }) => transcript.push(message.clone()),
                Item::Effect(Effect::CallModel { request, .. }) => {
                    let expected: Vec<_> = transcript.iter().filter_map(AgentMessage::as_llm).collect();
                    prop_assert_eq!(&*request.messages, &expected);
                }
                _ => {}
            }
        }
    }

    /// The same inputs give byte-identical events and effects.
    #[test]
    fn the_same_inputs_give_the_same_bytes(plan in plan()) {
        let (_, first) = run(&plan);
        let (_, second) = run(&plan);
        prop_assert_eq!(first, second);
    }
}
