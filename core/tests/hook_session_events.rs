//! The session's `agent_settled` and `session_info_changed` told to extensions. `agent_settled`: where an extension handles it, the session's own
//! `agent_settled` event goes out once the handlers are done (Pi 1.5.2 awaits them), after the
//! entries they wrote; a user message they send starts its run after that event, as Pi defers
//! a prompt made while settling and awaits its run within the settling. `session_info_changed`:
//! told after the session's event, with the name now, only where handled.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookPayload};
use pi_core::agent_session::SessionInput;
use pi_core::compaction::CompactionSettings;
use pi_core::message::UserContent;
use serde_json::json;

#[path = "support/session.rs"]
mod support;

use support::{answered, decided_as, hook, hooked, hooks, kinds, prompt, requests};

#[test]
fn unhandled_the_run_settles_at_once() {
    let mut s = hooked(&[], vec![], &[], CompactionSettings::default());
    let step = s.step(0, prompt("Hi")).unwrap();
    let (call, _) = requests(&step)[0].clone();
    let step = s.step(0, answered(call, "Hello.")).unwrap();
    assert_eq!(kinds(&step).last().unwrap(), "agent_settled");
    assert!(!s.is_busy());
}

#[test]
fn the_settled_event_waits_for_the_handlers_and_their_run_follows_it() {
    let mut s = hooked(
        &[HookEvent::AgentSettled],
        vec![],
        &[],
        CompactionSettings::default(),
    );
    let step = s.step(0, prompt("Hi")).unwrap();
    let (call, _) = requests(&step)[0].clone();
    let step = s.step(0, answered(call, "Hello.")).unwrap();
    assert!(
        !kinds(&step).contains(&"agent_settled".to_owned()),
        "{:?}",
        kinds(&step)
    );
    assert_eq!(
        hooks(&step)
            .iter()
            .map(|(_, p)| p.clone())
            .collect::<Vec<_>>(),
        [HookPayload::AgentSettled { aborted: false }]
    );
    assert!(s.is_busy(), "the settling holds the session");

    let settled = hook(&step);
    let actions = vec![
        HookAction::AppendEntry {
            custom_type: "settled".into(),
            data: Some(json!({"n": 1})),
        },
        HookAction::SendUserMessage {
            content: UserContent::Text("One more time.".into()),
            deliver_as: None,
            expand_prompt_templates: None,
        },
    ];
    let step = s
        .step(0, decided_as(settled, HookDecision::Done, actions))
        .unwrap();
    let order = kinds(&step);
    let at = |kind: &str| order.iter().position(|k| k == kind).unwrap();
    assert!(at("entry_appended") < at("agent_settled"), "{order:?}");
    assert!(at("agent_settled") < at("agent_start"), "{order:?}");
    let (call, request) = requests(&step)[0].clone();
    assert!(
        serde_json::to_string(&request.messages)
            .unwrap()
            .contains("One more time."),
        "the run the handler asked for is under way"
    );
    assert!(
        s.is_busy(),
        "print mode waits for the run the handler asked for"
    );

    let step = s.step(0, answered(call, "Again.")).unwrap();
    let (settled, payload) = hooks(&step)[0].clone();
    assert_eq!(payload, HookPayload::AgentSettled { aborted: false });
    let step = s
        .step(0, decided_as(settled, HookDecision::Done, vec![]))
        .unwrap();
    assert_eq!(kinds(&step), ["agent_settled"]);
    assert!(!s.is_busy());
}

#[test]
fn a_new_name_is_told_after_the_sessions_event_where_handled() {
    for handled in [vec![], vec![HookEvent::SessionInfoChanged]] {
        let mut s = hooked(&handled, vec![], &[], CompactionSettings::default());
        let step = s
            .step(0, SessionInput::SetSessionName("first".into()))
            .unwrap();
        assert_eq!(kinds(&step), ["session_info_changed"]);
        let told: Vec<HookPayload> = hooks(&step).into_iter().map(|(_, p)| p).collect();
        let want = match handled.is_empty() {
            true => vec![],
            false => vec![HookPayload::SessionInfoChanged {
                name: Some("first".into()),
            }],
        };
        assert_eq!(told, want);
    }
}
