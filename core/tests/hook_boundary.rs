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

/// The id of the last entry on the session's branch of `kind`.
fn last_entry(s: &SessionMachine, kind: &str) -> serde_json::Value {
    let path = s.tree().branch_path(None);
    let entry = path.iter().rev().find(|e| e.kind() == kind).unwrap();
    serde_json::to_value(entry).unwrap()
}

fn events(step: &pi_core::agent_session::SessionStep) -> Vec<serde_json::Value> {
    step.events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[test]
fn a_context_edit_draft_is_written_as_pi_writes_it_and_the_next_request_sends_the_edit() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let target = last_entry(&s, "message")["id"].as_str().unwrap().to_owned();
    let edit = BoundaryDraft::ContextEdit {
        target_id: target.clone(),
        replacement: Some(json!({"content": "Edited."})),
    };
    let step = s
        .step(
            3,
            decided_as(support::hook(&step), boundary(vec![edit], false), vec![]),
        )
        .unwrap();
    assert_eq!(
        kinds(&step),
        ["entry_appended", "turn_end", "agent_end", "agent_settled"]
    );
    // An assistant's string content is written as one text block (Pi's appendContextEdit).
    let entry = &events(&step)[0]["entry"];
    assert_eq!(entry["type"], "context_edit");
    assert_eq!(entry["targetId"], target.as_str());
    assert_eq!(
        entry["replacement"],
        json!({"content": [{"type": "text", "text": "Edited."}]})
    );
    // The run's own messages are what the loop made, the edit aside.
    let end = events(&step)
        .into_iter()
        .find(|e| e["type"] == "agent_end")
        .unwrap();
    assert_eq!(end["messages"][1]["content"][0]["text"], "First.");
    // The next request sends the edit.
    let step = s.step(4, prompt("again")).unwrap();
    let sent = requests(&step);
    let messages = &sent[0].1.messages;
    let answer = serde_json::to_value(&messages[messages.len() - 2]).unwrap();
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["content"][0]["text"], "Edited.");
}

#[test]
fn a_compaction_draft_is_written_from_the_hook_and_the_next_request_sends_its_summary() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let kept = last_entry(&s, "message")["id"].as_str().unwrap().to_owned();
    let compaction = BoundaryDraft::Compaction {
        summary: "They said hi.".into(),
        first_kept_entry_id: Some(kept.clone()),
        details: Some(json!({"by": "test"})),
        usage: None,
    };
    let step = s
        .step(
            3,
            decided_as(
                support::hook(&step),
                boundary(vec![compaction], false),
                vec![],
            ),
        )
        .unwrap();
    assert_eq!(
        kinds(&step),
        ["entry_appended", "turn_end", "agent_end", "agent_settled"]
    );
    let entry = &events(&step)[0]["entry"];
    assert_eq!(entry["type"], "compaction");
    assert_eq!(entry["summary"], "They said hi.");
    assert_eq!(entry["firstKeptEntryId"], kept.as_str());
    assert_eq!(entry["fromHook"], true);
    assert_eq!(entry["details"], json!({"by": "test"}));
    assert!(entry["tokensBefore"].as_u64().unwrap() > 0, "{entry}");
    assert!(entry.get("usage").is_none(), "{entry}");
    // The next request: the summary, what was kept (the answer), the new prompt.
    let step = s.step(4, prompt("again")).unwrap();
    let sent = requests(&step);
    let messages: Vec<serde_json::Value> = sent[0]
        .1
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let text = messages[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("They said hi."), "{text}");
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
}

#[test]
fn a_compaction_draft_without_a_kept_entry_keeps_from_itself() {
    let mut s = session(&[HookEvent::AgentBeforeSettle]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let compaction = BoundaryDraft::Compaction {
        summary: "All of it.".into(),
        first_kept_entry_id: None,
        details: None,
        usage: None,
    };
    let step = s
        .step(
            3,
            decided_as(
                support::hook(&step),
                boundary(vec![compaction], false),
                vec![],
            ),
        )
        .unwrap();
    let entry = &events(&step)[0]["entry"];
    assert_eq!(entry["firstKeptEntryId"], entry["id"]);
    assert!(kinds(&step).contains(&"agent_settled".to_owned()));
}

#[test]
fn an_invalid_draft_drops_them_all_with_pis_error() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(2, answered(call, "First.")).unwrap();
    let user = s
        .tree()
        .branch_path(None)
        .iter()
        .find(|e| e.message().is_some_and(|m| m.role() == "user"))
        .map(|e| e.id().to_owned())
        .unwrap();
    let cases = [
        (
            json!({"content": 3}),
            "Context edit replacement must be null or contain string/array content".to_owned(),
        ),
        (json!(null), String::new()),
    ];
    let note = BoundaryDraft::Custom {
        custom_type: "note".into(),
        data: None,
    };
    let missing = BoundaryDraft::ContextEdit {
        target_id: "missing".into(),
        replacement: None,
    };
    let bad_shape = BoundaryDraft::ContextEdit {
        target_id: user,
        replacement: Some(cases[0].0.clone()),
    };
    let step = s
        .step(
            3,
            decided_as(
                support::hook(&step),
                boundary(vec![note, bad_shape, missing], false),
                vec![],
            ),
        )
        .unwrap();
    let events = events(&step);
    assert_eq!(events[0]["type"], "extension_error");
    assert_eq!(events[0]["extensionPath"], "<boundary>");
    assert_eq!(
        events[0]["error"],
        format!("Invalid boundary entries: {}", cases[0].1)
    );
    assert!(!kinds(&step).contains(&"entry_appended".to_owned()));
    assert!(s
        .tree()
        .branch_path(None)
        .iter()
        .all(|e| e.kind() != "custom"));
}

#[test]
fn a_compaction_mid_run_is_what_the_next_turn_sends_and_the_runs_own_messages_stay() {
    let tools = vec![pi_core::script::tool("echo", false)];
    let mut s = support::hooked(
        &[HookEvent::TurnEnd],
        tools,
        &[],
        CompactionSettings::default(),
    );
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    let calling =
        json!([{"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"value": "one"}}]);
    let step = s
        .step(2, support::answered_with(call, calling, "toolUse"))
        .unwrap();
    let run = step
        .effects
        .iter()
        .find_map(|e| match e {
            pi_core::agent::Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        })
        .unwrap();
    let finished =
        pi_core::agent_session::SessionInput::Answer(pi_core::agent::Input::ToolFinished {
            call: run,
            outcome: pi_core::agent::ToolOutcome::Ok(pi_core::event::ToolResult {
                content: vec![pi_core::message::ContentBlock::text("one")],
                ..Default::default()
            }),
        });
    let step = s.step(3, finished).unwrap();
    let kept = s
        .tree()
        .branch_path(None)
        .iter()
        .find(|e| e.message().is_some_and(|m| m.role() == "assistant"))
        .map(|e| e.id().to_owned())
        .unwrap();
    let compaction = BoundaryDraft::Compaction {
        summary: "They said hi.".into(),
        first_kept_entry_id: Some(kept),
        details: None,
        usage: None,
    };
    let step = s
        .step(
            4,
            decided_as(
                support::hook(&step),
                boundary(vec![compaction], false),
                vec![],
            ),
        )
        .unwrap();
    assert_eq!(kinds(&step), ["entry_appended", "turn_end", "turn_start"]);
    let sent = requests(&step);
    let roles: Vec<String> = sent[0]
        .1
        .messages
        .iter()
        .map(|m| {
            serde_json::to_value(m).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    let summary = serde_json::to_value(&sent[0].1.messages[0]).unwrap();
    assert!(summary.to_string().contains("They said hi."), "{summary}");
    let step = s.step(5, answered(sent[0].0, "Done.")).unwrap();
    let step = s.step(6, done(support::hook(&step))).unwrap();
    let end = events(&step)
        .into_iter()
        .find(|e| e["type"] == "agent_end")
        .unwrap();
    let roles: Vec<&str> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(end["messages"][0]["content"][0]["text"], "hi");
}

#[test]
fn a_boundarys_state_carries_the_messages_the_loop_would_take_next() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = s.step(1, prompt("hi")).unwrap();
    let (call, _) = requests(&step).remove(0);
    s.step(
        2,
        pi_core::agent_session::SessionInput::Prompt {
            text: "Steer.".into(),
            images: vec![],
            streaming_behavior: Some(pi_core::agent_session::StreamingBehavior::Steer),
        },
    )
    .unwrap();
    let step = s.step(3, answered(call, "First.")).unwrap();
    let state = step
        .effects
        .iter()
        .find_map(|e| match e {
            pi_core::agent::Effect::Hook { state, .. } => state.clone(),
            _ => None,
        })
        .unwrap();
    let state = serde_json::to_value(&state).unwrap();
    let pending = state["pendingMessages"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{state}");
    assert_eq!(pending[0]["role"], "user");
    assert_eq!(pending[0]["content"][0]["text"], "Steer.");
}
