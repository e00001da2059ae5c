//! Pi 1.5's boundaries: what `turn_end` and `agent_before_settle` handlers return (drafts of
//! entries, `continue`) is written before the loop goes on, a custom message joining the next
//! request's context; a continuation goes on within the run (`turn_end`) or as a new run
//! (`agent_before_settle`), and one the context cannot take is refused with Pi's error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::boundary::BoundaryDraft;
use pi_core::agent::hooks::{HookDecision, HookEvent, HookPayload};
use pi_core::agent_session::{SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::message::UserContent;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{answered, decided_as, done, hooks, kinds, prompt, prompted_and_answered, requests};

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

/// A compaction draft with no usage.
fn compaction(
    summary: &str,
    first_kept_entry_id: Option<String>,
    details: Option<Value>,
) -> BoundaryDraft {
    BoundaryDraft::Compaction {
        summary: summary.into(),
        first_kept_entry_id,
        details,
        usage: None,
    }
}

/// A session whose extensions handle `handled`, its prompt "hi" answered "First.": the
/// session and the step the answer made.
fn answered_first(handled: &[HookEvent]) -> (SessionMachine, SessionStep) {
    let mut s = session(handled);
    let step = prompted_and_answered(&mut s, 1, "hi", "First.");
    (s, step)
}

/// At `now`, the one hook point `step` asked for decides a boundary of `entries`.
fn decide(
    s: &mut SessionMachine,
    now: u64,
    step: &SessionStep,
    entries: Vec<BoundaryDraft>,
    continue_run: bool,
) -> SessionStep {
    let decision = boundary(entries, continue_run);
    s.step(now, decided_as(support::hook(step), decision, vec![]))
        .unwrap()
}

/// Whether `step` settled the agent.
fn settled(step: &SessionStep) -> bool {
    kinds(step).contains(&"agent_settled".to_owned())
}

/// The step's events as JSON.
fn events(step: &SessionStep) -> Vec<Value> {
    step.events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

/// The `agent_end` event of `step`.
fn agent_end(step: &SessionStep) -> Value {
    events(step)
        .into_iter()
        .find(|e| e["type"] == "agent_end")
        .unwrap()
}

/// The roles of a JSON array of messages.
fn roles(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

/// The id of the first entry on the session's branch holding a message of `role`.
fn first_of_role(s: &SessionMachine, role: &str) -> String {
    s.tree()
        .branch_path(None)
        .iter()
        .find(|e| e.message().is_some_and(|m| m.role() == role))
        .map(|e| e.id().to_owned())
        .unwrap()
}

/// The one boundary error `step` reports, which must come first.
fn assert_boundary_error(step: &SessionStep, error: &str) {
    let events = events(step);
    assert_eq!(events[0]["type"], "extension_error");
    assert_eq!(events[0]["extensionPath"], "<boundary>");
    assert_eq!(events[0]["error"], error);
}

#[test]
fn a_turn_end_boundary_writes_its_drafts_before_the_turn_ends_and_continues_the_run() {
    let (mut s, step) = answered_first(&[HookEvent::TurnEnd]);
    let note = BoundaryDraft::Custom {
        custom_type: "note".into(),
        data: Some(json!({"turn": 0})),
    };
    let step = decide(&mut s, 3, &step, vec![note, reminder("Go on.")], true);
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
    assert!(settled(&step));
    // The run's own messages leave the boundary's message out.
    let roles = roles(&agent_end(&step)["messages"]);
    assert!(!roles.contains(&"custom".to_owned()), "{roles:?}");
}

#[test]
fn a_continuation_the_context_cannot_take_is_refused_with_pis_error() {
    let (mut s, step) = answered_first(&[HookEvent::TurnEnd]);
    let step = decide(&mut s, 3, &step, vec![], true);
    assert_boundary_error(
        &step,
        "turn_end requested continuation without runnable model context",
    );
    assert!(requests(&step).is_empty());
    assert!(settled(&step));
}

#[test]
fn agent_before_settle_holds_the_settling_and_its_continuation_is_a_new_run() {
    let (mut s, step) = answered_first(&[HookEvent::AgentBeforeSettle]);
    assert!(!settled(&step));
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].1,
        HookPayload::AgentBeforeSettle {
            outcome: "completed".into()
        }
    );
    assert!(s.is_busy());
    let step = decide(&mut s, 3, &step, vec![reminder("Say more.")], true);
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
    assert!(settled(&step));
    assert!(!s.is_busy());
}

/// The id of the last entry on the session's branch of `kind`.
fn last_entry(s: &SessionMachine, kind: &str) -> serde_json::Value {
    let path = s.tree().branch_path(None);
    let entry = path.iter().rev().find(|e| e.kind() == kind).unwrap();
    serde_json::to_value(entry).unwrap()
}

#[test]
fn a_context_edit_draft_is_written_as_pi_writes_it_and_the_next_request_sends_the_edit() {
    let (mut s, step) = answered_first(&[HookEvent::TurnEnd]);
    let target = last_entry(&s, "message")["id"].as_str().unwrap().to_owned();
    let edit = BoundaryDraft::ContextEdit {
        target_id: target.clone(),
        replacement: Some(json!({"content": "Edited."})),
    };
    let step = decide(&mut s, 3, &step, vec![edit], false);
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
    let end = agent_end(&step);
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
    let (mut s, step) = answered_first(&[HookEvent::TurnEnd]);
    let kept = last_entry(&s, "message")["id"].as_str().unwrap().to_owned();
    let draft = compaction(
        "They said hi.",
        Some(kept.clone()),
        Some(json!({"by": "test"})),
    );
    let step = decide(&mut s, 3, &step, vec![draft], false);
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
    let (mut s, step) = answered_first(&[HookEvent::AgentBeforeSettle]);
    let step = decide(
        &mut s,
        3,
        &step,
        vec![compaction("All of it.", None, None)],
        false,
    );
    let entry = &events(&step)[0]["entry"];
    assert_eq!(entry["firstKeptEntryId"], entry["id"]);
    assert!(settled(&step));
}

#[test]
fn an_invalid_draft_drops_them_all_with_pis_error() {
    let (mut s, step) = answered_first(&[HookEvent::TurnEnd]);
    let user = first_of_role(&s, "user");
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
    let step = decide(&mut s, 3, &step, vec![note, bad_shape, missing], false);
    assert_boundary_error(&step, &format!("Invalid boundary entries: {}", cases[0].1));
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
    let call = support::prompted(&mut s, 1, "hi");
    let calling =
        json!([{"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"value": "one"}}]);
    let step = s
        .step(2, support::answered_with(call, calling, "toolUse"))
        .unwrap();
    let run = support::tool_run(&step.effects);
    let step = s.step(3, support::tool_finished(run, "one")).unwrap();
    let kept = first_of_role(&s, "assistant");
    let draft = compaction("They said hi.", Some(kept), None);
    let step = decide(&mut s, 4, &step, vec![draft], false);
    assert_eq!(kinds(&step), ["entry_appended", "turn_end", "turn_start"]);
    let sent = requests(&step);
    let sent_messages = serde_json::to_value(&sent[0].1.messages).unwrap();
    assert_eq!(roles(&sent_messages), ["user", "assistant", "toolResult"]);
    let summary = serde_json::to_value(&sent[0].1.messages[0]).unwrap();
    assert!(summary.to_string().contains("They said hi."), "{summary}");
    let step = s.step(5, answered(sent[0].0, "Done.")).unwrap();
    let step = s.step(6, done(support::hook(&step))).unwrap();
    let end = agent_end(&step);
    assert_eq!(
        roles(&end["messages"]),
        ["user", "assistant", "toolResult", "assistant"]
    );
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
