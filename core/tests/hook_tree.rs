//! The tree hook points of Pi 1.5.2's `navigateTree`: `session_before_tree`, asked with Pi's
//! preparation before the leaf moves (a cancel leaves everything as it was; a handler's
//! summary is written instead of the model's, with `fromHook: true`; its instructions and label
//! replace those asked for), and `session_tree`, told once the leaf moved, with the summary
//! entry written.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HookAction, HookDecision, HookEvent, HookPayload, SuppliedSummary, TreeAnswer,
};
use pi_core::agent::{CallId, Input, StreamEvent};
use pi_core::agent_session::{NavigateRequest, Navigated, Reply, SessionInput, SessionMachine};
use pi_core::compaction::CompactionSettings;
use pi_core::message::AssistantMessage;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{decided_as, hooks, prompt, requests};

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::hooked(handled, vec![], &[], CompactionSettings::default())
}

fn answered(call: CallId, text: &str) -> SessionInput {
    let message: AssistantMessage = serde_json::from_value(json!({"role": "assistant",
        "content": [{"type": "text", "text": text}], "api": "openai-completions",
        "provider": "mock", "model": "mock-model", "usage": {"input": 0, "output": 0,
        "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0, "output": 0,
        "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": 3}))
    .unwrap();
    SessionInput::Answer(Input::Model {
        call,
        event: StreamEvent::Done {
            reason: message.stop_reason,
            message,
        },
    })
}

/// Two prompts answered: the ids of the first answer and of the second prompt's message.
fn with_history(s: &mut SessionMachine) -> (String, String) {
    for (t, text) in [(1, "First prompt."), (3, "Second prompt.")] {
        let step = s.step(t, prompt(text)).unwrap();
        let (call, _) = requests(&step).remove(0);
        s.step(t + 1, answered(call, "An answer.")).unwrap();
    }
    let branch = s.tree().branch_path(None);
    let ids: Vec<String> = branch.iter().map(|e| e.id().to_owned()).collect();
    let n = ids.len();
    (ids[n - 3].clone(), ids[n - 2].clone())
}

fn navigate(target: &str, summarize: bool) -> SessionInput {
    SessionInput::Navigate(NavigateRequest {
        target_id: target.to_owned(),
        summarize,
        custom_instructions: Some("focus".into()),
        replace_instructions: false,
        label: None,
    })
}

fn navigated(step: &pi_core::agent_session::SessionStep) -> Navigated {
    match &step.replies[..] {
        [Reply::Navigated(Ok(n))] => n.clone(),
        other => panic!("one navigation reply: {other:?}"),
    }
}

#[test]
fn session_before_tree_is_asked_with_pis_preparation_and_its_cancel_moves_nothing() {
    let mut s = session(&[HookEvent::SessionBeforeTree, HookEvent::SessionTree]);
    let (answer, second) = with_history(&mut s);
    let leaf = s.tree().leaf_id().unwrap().to_owned();
    let step = s.step(10, navigate(&answer, true)).unwrap();
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1, "{:?}", step.effects);
    let HookPayload::SessionBeforeTree { preparation } = &asked[0].1 else {
        panic!("{:?}", asked[0].1)
    };
    assert_eq!(preparation["targetId"], json!(answer));
    assert_eq!(preparation["oldLeafId"], json!(leaf));
    assert_eq!(preparation["commonAncestorId"], json!(answer));
    assert_eq!(preparation["userWantsSummary"], json!(true));
    assert_eq!(preparation["customInstructions"], json!("focus"));
    assert!(preparation.get("label").is_none());
    let summarized: Vec<&Value> = preparation["entriesToSummarize"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(summarized.len(), 2);
    assert_eq!(summarized[0]["id"], json!(second));
    assert!(requests(&step).is_empty(), "no summary before the handlers");
    assert!(step.replies.is_empty());

    let cancel = HookDecision::SessionBeforeTree(TreeAnswer {
        cancel: true,
        ..TreeAnswer::default()
    });
    let append = HookAction::AppendEntry {
        custom_type: "asked".into(),
        data: None,
    };
    let step = s
        .step(11, decided_as(asked[0].0, cancel, vec![append]))
        .unwrap();
    let n = navigated(&step);
    assert!(n.cancelled && !n.aborted, "{n:?}");
    assert!(hooks(&step).is_empty(), "no session_tree after a cancel");
    assert!(requests(&step).is_empty());
    // The handler's entry was written; the leaf stayed on the branch.
    let branch = s.tree().branch_path(None);
    assert_eq!(branch[branch.len() - 2].id(), leaf);
}

#[test]
fn a_handlers_summary_is_written_from_the_hook_and_session_tree_is_told() {
    let mut s = session(&[HookEvent::SessionBeforeTree, HookEvent::SessionTree]);
    let (answer, _) = with_history(&mut s);
    let old_leaf = s.tree().leaf_id().unwrap().to_owned();
    let step = s.step(10, navigate(&answer, true)).unwrap();
    let call = hooks(&step)[0].0;
    let supplied = HookDecision::SessionBeforeTree(TreeAnswer {
        summary: Some(SuppliedSummary {
            summary: "The handler's summary.".into(),
            details: Some(json!({"by": "hook"})),
            usage: None,
        }),
        label: Some("kept".into()),
        ..TreeAnswer::default()
    });
    let step = s.step(11, decided_as(call, supplied, vec![])).unwrap();
    assert!(requests(&step).is_empty(), "no model summary");
    let n = navigated(&step);
    let summary_id = n.summary_entry_id.clone().unwrap();
    let told = hooks(&step);
    assert_eq!(told.len(), 1);
    let HookPayload::SessionTree {
        new_leaf_id,
        old_leaf_id,
        summary_entry,
        from_extension,
    } = &told[0].1
    else {
        panic!("{:?}", told[0].1)
    };
    let entry = summary_entry.as_ref().unwrap();
    assert_eq!(entry["type"], "branch_summary");
    assert_eq!(entry["summary"], "The handler's summary.");
    assert_eq!(entry["details"], json!({"by": "hook"}));
    assert_eq!(entry["fromHook"], json!(true));
    assert_eq!(entry["id"], json!(summary_id));
    assert_eq!(*from_extension, Some(true));
    assert_eq!(old_leaf_id.as_deref(), Some(old_leaf.as_str()));
    // The label is written after the summary entry, and is the leaf now.
    assert_eq!(new_leaf_id.as_deref(), s.tree().leaf_id());
    let label: Value =
        serde_json::to_value(s.tree().entry(s.tree().leaf_id().unwrap()).unwrap()).unwrap();
    assert_eq!(label["type"], "label");
    assert_eq!(label["label"], "kept");
    assert_eq!(label["targetId"], json!(summary_id));
    let step = s
        .step(12, decided_as(told[0].0, HookDecision::Done, vec![]))
        .unwrap();
    assert!(step.effects.is_empty(), "{:?}", step.effects);
}

#[test]
fn a_handlers_instructions_reach_the_models_summary_and_no_summary_asked_ignores_its_summary() {
    let mut s = session(&[HookEvent::SessionBeforeTree]);
    let (answer, _) = with_history(&mut s);
    let step = s.step(10, navigate(&answer, true)).unwrap();
    let call = hooks(&step)[0].0;
    let instead = HookDecision::SessionBeforeTree(TreeAnswer {
        custom_instructions: Some("only the names".into()),
        replace_instructions: Some(true),
        ..TreeAnswer::default()
    });
    let step = s.step(11, decided_as(call, instead, vec![])).unwrap();
    let sent = requests(&step);
    assert_eq!(sent.len(), 1, "the model summarises");
    let last: Value = serde_json::to_value(sent[0].1.messages.last().unwrap()).unwrap();
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("only the names"), "{text}");
    assert!(!text.contains("focus"), "{text}");

    // Without a summary asked for, a handler's summary is not written (Pi reads it only when
    // the user wants one).
    let mut s = session(&[HookEvent::SessionBeforeTree]);
    let (answer, _) = with_history(&mut s);
    let step = s.step(10, navigate(&answer, false)).unwrap();
    let call = hooks(&step)[0].0;
    let supplied = HookDecision::SessionBeforeTree(TreeAnswer {
        summary: Some(SuppliedSummary {
            summary: "Unasked.".into(),
            details: None,
            usage: None,
        }),
        ..TreeAnswer::default()
    });
    let step = s.step(11, decided_as(call, supplied, vec![])).unwrap();
    let n = navigated(&step);
    assert!(!n.cancelled && n.summary_entry_id.is_none(), "{n:?}");
    assert_eq!(s.tree().leaf_id(), Some(answer.as_str()));
}
