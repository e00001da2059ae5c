//! Pi 1.5's boundaries: what `turn_end` and `agent_before_settle` handlers return (drafts of
//! entries, `continue`) is written before the loop goes on, a custom message joining the next
//! request's context; a continuation goes on within the run (`turn_end`) or as a new run
//! (`agent_before_settle`), and one the context cannot take is refused with Pi's error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::boundary::BoundaryDraft;
use pi_core::agent::hooks::{HookDecision, HookEvent, HookPayload};
use pi_core::agent_session::SessionMachine;
use pi_core::compaction::CompactionSettings;
use pi_core::message::UserContent;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{answered, decided_as, done, hooks, kinds, prompt, requests};

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::hooked(handled, vec![], &[], CompactionSettings::default())
}

fn reminder(text: &str) -> BoundaryDraft {
    BoundaryDraft::CustomMessage {
        custom_type: "reminder".into(),
        content: UserContent::Text(text.into()),
        display: true,
        details: None,
    }
}

fn boundary(entries: Vec<BoundaryDraft>, continue_run: bool) -> HookDecision {
    HookDecision::Boundary {
        entries,
        continue_run,
    }
}

#[test]
fn a_turn_end_boundary_writes_its_drafts_before_the_turn_ends_and_continues_the_run() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let turn_end = support::hook(&step);
    let note = BoundaryDraft::Custom {
        custom_type: "note".into(),
        data: Some(json!({"turn": 0})),
    };
    let decision = boundary(vec![note, reminder("Go on.")], true);
    let step = s.step(3, decided_as(turn_end, decision, vec![])).unwrap();
    // The entries come before `turn_end`, without message events; the run goes on with a
    // turn that sends the reminder, with no agent_end in between.
    assert_eq!(
        kinds(&step),
        ["entry_appended", "entry_appended", "turn_end", "turn_start"]
    );
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    let last = serde_json::to_value(sent[0].1.messages.last().unwrap()).unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["text"], "Go on.");
    let step = s.step(4, answered(sent[0].0, "Second.")).unwrap();
    let step = s.step(5, done(support::hook(&step))).unwrap();
    assert!(kinds(&step).contains(&"agent_settled".to_owned()));
    // The run's own messages leave the boundary's message out.
    let end = step
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|e| e["type"] == "agent_end")
        .unwrap();
    let roles: Vec<&str> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(!roles.contains(&"custom"), "{roles:?}");
}

#[test]
fn a_continuation_the_context_cannot_take_is_refused_with_pis_error() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let step = s
        .step(
            3,
            decided_as(support::hook(&step), boundary(vec![], true), vec![]),
        )
        .unwrap();
    let events: Vec<serde_json::Value> = step
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "extension_error");
    assert_eq!(events[0]["extensionPath"], "<boundary>");
    assert_eq!(
        events[0]["error"],
        "turn_end requested continuation without runnable model context"
    );
    assert!(requests(&step).is_empty());
    assert!(kinds(&step).contains(&"agent_settled".to_owned()));
}

#[test]
fn agent_before_settle_holds_the_settling_and_its_continuation_is_a_new_run() {
    let mut s = session(&[HookEvent::AgentBeforeSettle]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    assert!(!kinds(&step).contains(&"agent_settled".to_owned()));
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].1,
        HookPayload::AgentBeforeSettle {
            outcome: "completed".into()
        }
    );
    assert!(s.is_busy());
    let decision = boundary(vec![reminder("Say more.")], true);
    let step = s.step(3, decided_as(asked[0].0, decision, vec![])).unwrap();
    assert_eq!(
        kinds(&step),
        ["entry_appended", "agent_start", "turn_start"]
    );
    let sent = requests(&step);
    let step = s.step(4, answered(sent[0].0, "More.")).unwrap();
    // Asked again as the new run is about to settle; nothing asked this time: it settles.
    let again = hooks(&step);
    assert_eq!(again.len(), 1);
    let step = s.step(5, done(again[0].0)).unwrap();
    assert_eq!(kinds(&step), ["agent_settled"]);
    assert!(!s.is_busy());
}

#[test]
fn an_aborted_run_settles_without_asking_agent_before_settle() {
    let mut s = session(&[HookEvent::AgentBeforeSettle]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    s.step(2, pi_core::agent_session::SessionInput::Abort)
        .unwrap();
    let step = s
        .step(3, support::answered_with(call, json!([]), "aborted"))
        .unwrap();
    assert!(hooks(&step).is_empty(), "{:?}", step.effects);
    assert!(kinds(&step).contains(&"agent_settled".to_owned()));
    assert!(!s.is_busy());
}
