//! The session's replacement asked of the extensions (Pi 1.5.2's `emitBeforeSwitch`,
//! `emitBeforeFork`): `SessionInput::AskReplace` asks the handlers of its event and answers
//! `Reply::Replacing` with their cancel, what they asked for applied first; with no handler it
//! answers at once, asking nothing. `Leave` and `Replaced` tell `session_shutdown` and
//! `session_start` with the replacement's reason and the other session's file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine};
use pi_core::compaction::CompactionSettings;
use serde_json::json;

#[path = "support/session.rs"]
mod support;

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::hooked(handled, vec![], &[], CompactionSettings::default())
}

fn fork_at(entry: &str) -> SessionInput {
    SessionInput::AskReplace(HookPayload::SessionBeforeFork {
        entry_id: entry.into(),
        position: "at".into(),
    })
}

#[test]
fn with_no_handler_a_replacement_is_answered_at_once() {
    let mut s = session(&[HookEvent::SessionShutdown]);
    let step = s.step(1, fork_at("e1")).unwrap();
    assert!(step.effects.is_empty(), "{:?}", step.effects);
    assert_eq!(step.replies, [Reply::Replacing { cancelled: false }]);
}

#[test]
fn the_handlers_cancel_comes_back_after_what_they_asked_for() {
    let mut s = session(&[HookEvent::SessionBeforeFork, HookEvent::SessionBeforeSwitch]);
    let step = s.step(1, fork_at("e1")).unwrap();
    let hooks = support::hooks_json(&step);
    assert_eq!(
        hooks.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(),
        [json!({"type": "session_before_fork", "entryId": "e1", "position": "at"})]
    );
    assert!(step.replies.is_empty(), "the answer waits for the handlers");
    assert!(s.is_busy());
    let note = HookAction::AppendEntry {
        custom_type: "refused".into(),
        data: None,
    };
    let cancel = HookDecision::SessionBeforeReplace { cancel: true };
    let step = s
        .step(2, support::decided_as(hooks[0].0, cancel, vec![note]))
        .unwrap();
    assert_eq!(step.replies, [Reply::Replacing { cancelled: true }]);
    assert!(
        s.tree()
            .entries()
            .iter()
            .any(|e| serde_json::to_value(e).unwrap()["customType"] == "refused"),
        "the handler's entry is in the session that stays"
    );
    assert!(!s.is_busy());

    let step = s
        .step(
            3,
            SessionInput::AskReplace(HookPayload::SessionBeforeSwitch {
                reason: "resume".into(),
                target_session_file: Some("other.jsonl".into()),
            }),
        )
        .unwrap();
    let hooks = support::hooks_json(&step);
    assert_eq!(
        hooks[0].1,
        json!({"type": "session_before_switch", "reason": "resume", "targetSessionFile": "other.jsonl"})
    );
    let go_on = HookDecision::SessionBeforeReplace { cancel: false };
    let step = s
        .step(4, support::decided_as(hooks[0].0, go_on, vec![]))
        .unwrap();
    assert_eq!(step.replies, [Reply::Replacing { cancelled: false }]);
}

#[test]
fn leaving_and_replacing_tell_the_reason_and_the_other_file() {
    let mut s = session(&[HookEvent::SessionShutdown, HookEvent::SessionStart]);
    let step = s
        .step(
            1,
            SessionInput::Leave {
                reason: "fork".into(),
                target_session_file: Some("/s/new.jsonl".into()),
            },
        )
        .unwrap();
    assert_eq!(
        support::hooks_json(&step)[0].1,
        json!({"type": "session_shutdown", "reason": "fork", "targetSessionFile": "/s/new.jsonl"})
    );
    let mut s = session(&[HookEvent::SessionShutdown, HookEvent::SessionStart]);
    let step = s
        .step(
            1,
            SessionInput::Replaced {
                reason: "new".into(),
                previous_session_file: None,
                loaded: None,
            },
        )
        .unwrap();
    assert_eq!(
        support::hooks_json(&step)[0].1,
        json!({"type": "session_start", "reason": "new"})
    );
}
