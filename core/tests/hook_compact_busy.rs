//! Compactions that meet other compactions, as Pi 1.5.2's `AgentSession` lets them meet: a
//! `compact` while a failed compaction's `session_compact_failed` handlers run starts at once
//! (Pi's manual compaction has ended by then), each `compact` answered as its own; an
//! extension's `ctx.compact()` while another compaction runs aborts it (Pi's `compact()` calls
//! `abort()` first) and compacts once it has ended, calling back with its own result; an abort
//! while the `session_before_compact` handlers run cancels their hook point (their `signal`);
//! and the preparation those handlers read lists the files in the order they were touched.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload};
use pi_core::agent::{CallId, Effect, Input, ToolOutcome};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::{Event, SessionEvent, ToolResult};
use pi_core::message::ContentBlock;
use pi_core::script::tool;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{
    answered, answered_full, answered_with, decided_as, done, hook, hooks, kinds, manual, prompt,
    requests,
};

fn session(handled: &[HookEvent]) -> SessionMachine {
    let compaction = CompactionSettings {
        keep_recent_tokens: 1,
        ..CompactionSettings::default()
    };
    support::hooked(
        handled,
        vec![tool("read", false), tool("write", false)],
        &["squash"],
        compaction,
    )
}

fn cancel() -> HookDecision {
    HookDecision::SessionBeforeCompact {
        cancel: true,
        compaction: None,
    }
}

/// `ctx.compact()` with the callbacks numbered `callback`.
fn asked_compact(callback: u64) -> HookAction {
    HookAction::Compact {
        custom_instructions: Some("asked".into()),
        callback: Some(callback),
    }
}

/// The compaction end among `step`'s events: its result's summary and `aborted`.
fn compaction_end(step: &SessionStep) -> Option<(Option<String>, bool)> {
    step.events.iter().find_map(|e| match e {
        Event::Session(SessionEvent::CompactionEnd {
            result, aborted, ..
        }) => Some((result.as_ref().map(|r| r.summary.clone()), *aborted)),
        _ => None,
    })
}

/// The summary calls `step` sent answered with `text`, one after the other (a split turn's
/// prefix is asked after its history): the step that answered the last.
fn summarized(s: &mut SessionMachine, mut step: SessionStep, at: u64, text: &str) -> SessionStep {
    let mut at = at;
    while let Some((call, _)) = requests(&step).pop() {
        step = s.step(at, answered(call, text)).unwrap();
        at += 1;
    }
    step
}

/// A session with two prompts answered, so that a compaction has something to summarise.
fn with_two_turns(s: &mut SessionMachine) {
    for (at, text) in [
        (1, "First prompt about alpha."),
        (3, "Second prompt about beta."),
    ] {
        support::prompted_and_answered(s, at, text, "An answer.");
    }
}

#[test]
fn a_compact_while_session_compact_failed_runs_starts_at_once_and_each_is_answered_as_its_own() {
    let mut s = session(&[
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionCompactFailed,
    ]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("cancel")).unwrap();
    let step = s
        .step(6, decided_as(hook(&step), cancel(), vec![]))
        .unwrap();
    assert_eq!(compaction_end(&step), Some((None, true)));
    let failed = hook(&step);
    assert!(!s.is_compacting(), "Pi's manual compaction has ended");
    let step = s
        .step(7, manual("model"))
        .expect("accepted while the failed one's handlers run");
    assert_eq!(kinds(&step), ["compaction_start"]);
    let asked = s.compacts_accepted();
    let step = s.step(8, done(hook(&step))).unwrap();
    let step = summarized(&mut s, step, 9, "## Goal\nModel.");
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(n, Ok(_))] if *n == asked),
        "{:?}",
        step.replies
    );
    let step = s.step(20, done(failed)).unwrap();
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(n, Err(e))] if *n == asked - 1 && e == "Compaction cancelled"),
        "{:?}",
        step.replies
    );
    assert!(!s.is_busy());
}

#[test]
fn a_compact_while_an_automatic_compactions_failed_handlers_run_starts_after_the_run_settled() {
    let mut s = session(&[
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionCompactFailed,
    ]);
    support::prompted_and_answered(&mut s, 1, "First prompt about alpha.", "An answer.");
    let call = support::prompted(&mut s, 3, "Second prompt about beta.");
    let step = s.step(4, answered_full(call)).unwrap();
    let step = s
        .step(5, decided_as(hook(&step), cancel(), vec![]))
        .unwrap();
    assert_eq!(compaction_end(&step), Some((None, true)));
    let failed = hook(&step);
    assert!(
        s.is_compacting(),
        "Pi's automatic compaction has not returned"
    );
    let step = s.step(6, manual("model")).expect("accepted");
    assert!(kinds(&step).is_empty(), "held: {:?}", kinds(&step));
    let step = s.step(7, done(failed)).unwrap();
    assert_eq!(kinds(&step), ["agent_settled", "compaction_start"]);
    assert_eq!(
        serde_json::to_value(&step.events[0]).unwrap()["aborted"],
        json!(true),
        "the compact aborted the run"
    );
    let step = s.step(8, done(hook(&step))).unwrap();
    let step = summarized(&mut s, step, 9, "## Goal\nModel.");
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(_, Ok(_))]),
        "{:?}",
        step.replies
    );
}

#[test]
fn a_handlers_ctx_compact_aborts_the_compaction_it_hears_and_compacts_once_that_has_ended() {
    let mut s = session(&[
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionCompactFailed,
    ]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("first")).unwrap();
    let step = s
        .step(
            6,
            decided_as(hook(&step), HookDecision::Done, vec![asked_compact(3)]),
        )
        .unwrap();
    assert!(requests(&step).is_empty(), "no summary for the aborted one");
    assert_eq!(compaction_end(&step), Some((None, true)));
    assert!(!kinds(&step).contains(&"compaction_start".to_owned()));
    let step = s.step(7, done(hook(&step))).unwrap();
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(_, Err(e))] if e == "Compaction cancelled")
    );
    assert_eq!(
        kinds(&step),
        ["compaction_start"],
        "the asked one, once the failed handlers ran"
    );
    let [(
        call,
        HookPayload::SessionBeforeCompact {
            custom_instructions,
            ..
        },
    )] = &hooks(&step)[..]
    else {
        panic!("{:?}", step.effects)
    };
    assert_eq!(custom_instructions.as_deref(), Some("asked"));
    let step = s.step(8, done(*call)).unwrap();
    let step = summarized(&mut s, step, 9, "## Goal\nAsked.");
    assert!(step.replies.is_empty(), "no RPC compact asked for it");
    let [(
        _,
        HookPayload::CompactEnd {
            callback: 3,
            result: Some(result),
            error: None,
        },
    )] = &hooks(&step)[..]
    else {
        panic!("{:?}", step.effects)
    };
    assert!(result.summary.ends_with("## Goal\nAsked."));
}

#[test]
fn a_commands_ctx_compact_while_a_summary_is_asked_cancels_it_and_compacts_after() {
    let mut s = session(&[HookEvent::Command]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("first")).unwrap();
    let (summary, _) = requests(&step).remove(0);
    let step = s.step(6, prompt("/squash")).unwrap();
    let step = s
        .step(
            7,
            decided_as(hook(&step), HookDecision::Done, vec![asked_compact(0)]),
        )
        .unwrap();
    assert!(
        step.effects.contains(&Effect::Cancel { call: summary }),
        "{:?}",
        step.effects
    );
    let step = s
        .step(8, answered_with(summary, json!([]), "aborted"))
        .unwrap();
    assert_eq!(compaction_end(&step), Some((None, true)));
    assert!(
        kinds(&step).ends_with(&["compaction_start".to_owned()]),
        "{:?}",
        kinds(&step)
    );
    let step = summarized(&mut s, step, 9, "## Goal\nAsked.");
    let [(
        _,
        HookPayload::CompactEnd {
            callback: 0,
            error: None,
            ..
        },
    )] = &hooks(&step)[..]
    else {
        panic!("{:?}", step.effects)
    };
}

#[test]
fn an_abort_while_session_before_compact_runs_cancels_its_hook_point() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("wait")).unwrap();
    let call = hook(&step);
    let step = s.step(6, SessionInput::Abort).unwrap();
    assert_eq!(
        step.effects,
        [Effect::Cancel { call }],
        "the handlers' signal fires"
    );
    assert_eq!(compaction_end(&step), None, "their answer is awaited");
    let step = s.step(7, done(call)).unwrap();
    assert_eq!(compaction_end(&step), Some((None, true)));
}

#[test]
fn the_preparations_file_operations_keep_the_order_they_were_touched() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    let call = support::prompted(&mut s, 1, "Read the files.");
    let calls = json!([
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "zeta.txt"}},
        {"type": "toolCall", "id": "c2", "name": "write", "arguments": {"path": "new.txt", "content": ""}},
        {"type": "toolCall", "id": "c3", "name": "read", "arguments": {"path": "alpha.txt"}}
    ]);
    let step = s.step(2, answered_with(call, calls, "toolUse")).unwrap();
    let runs: Vec<CallId> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        })
        .collect();
    let mut step = step;
    let mut at = 3;
    for run in runs {
        let outcome = ToolOutcome::Ok(ToolResult {
            content: vec![ContentBlock::text("ok")],
            ..ToolResult::default()
        });
        step = s
            .step(
                at,
                SessionInput::Answer(Input::ToolFinished { call: run, outcome }),
            )
            .unwrap();
        at += 1;
    }
    let (call, _) = requests(&step).remove(0);
    s.step(at, answered(call, "Done.")).unwrap();
    let step = s.step(at + 1, prompt("Second prompt.")).unwrap();
    let (call, _) = requests(&step).remove(0);
    s.step(at + 2, answered(call, "Second answer.")).unwrap();
    let step = s.step(at + 3, manual("files")).unwrap();
    let [(_, HookPayload::SessionBeforeCompact { preparation, .. })] = &hooks(&step)[..] else {
        panic!("{:?}", step.effects)
    };
    assert_eq!(
        preparation["fileOps"],
        json!({"read": ["zeta.txt", "alpha.txt"], "written": ["new.txt"], "edited": []})
    );
}

#[test]
fn a_compact_while_a_summary_is_asked_aborts_that_compaction_and_compacts_again() {
    let mut s = session(&[]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("first")).unwrap();
    let (first, _) = requests(&step).remove(0);
    // Pi's `compact()` aborts first: the summary in flight is cancelled, and the second waits
    // for the first's end.
    let step = s.step(6, manual("second")).expect("accepted");
    assert!(step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Cancel { call } if *call == first)));
    assert!(requests(&step).is_empty());
    let aborted = answered_with(first, json!([]), "aborted");
    let step = s.step(7, aborted).unwrap();
    assert_eq!(kinds(&step), ["compaction_end", "compaction_start"]);
    assert_eq!(compaction_end(&step), Some((None, true)));
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(1, Err(e))] if e == "Compaction cancelled"),
        "{:?}",
        step.replies
    );
    let summary = requests(&step);
    assert_eq!(summary.len(), 1);
    let sent = serde_json::to_string(&summary[0].1.messages).unwrap();
    assert!(sent.contains("Additional focus: second"), "{sent}");
    let step = summarized(&mut s, step, 8, "## Goal\nSecond.");
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(2, Ok(_))]),
        "{:?}",
        step.replies
    );
}
