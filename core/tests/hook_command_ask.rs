//! A command's context asking the session (Pi 1.5.2's `ctx.navigateTree` in a command's
//! handler): the command's run is decided with the ask and the actions asked before it, which
//! are applied first; the session navigates as a front end's navigation does, its tree hooks
//! asked while the command still runs; then the command goes on (`command_resume`) with Pi's
//! `{cancelled}`, and only the end of its run answers the prompt.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    CommandAnswer, CommandAsk, HookAction, HookDecision, HookEvent, HookPayload, SuppliedSummary,
    TreeAnswer,
};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{answered, decided_as, done, hooks, prompt, requests};

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::hooked(handled, vec![], &["back"], CompactionSettings::default())
}

/// One prompt answered: the answer's id.
fn with_history(s: &mut SessionMachine) -> String {
    support::prompted_and_answered(s, 1, "First prompt.", "An answer.");
    support::prompted_and_answered(s, 3, "Second prompt.", "Another answer.");
    let branch = s.tree().branch_path(None);
    branch[1].id().to_owned()
}

fn navigate_to(target: &str, label: &str) -> HookDecision {
    HookDecision::CommandAsked {
        run: 7,
        ask: CommandAsk::NavigateTree {
            target_id: target.to_owned(),
            summarize: Some(true),
            custom_instructions: Some("names only".into()),
            replace_instructions: None,
            label: Some(label.to_owned()),
        },
    }
}

fn entry(custom_type: &str) -> HookAction {
    HookAction::AppendEntry {
        custom_type: custom_type.into(),
        data: None,
    }
}

#[test]
fn a_commands_navigation_runs_its_tree_hooks_and_the_command_goes_on_with_the_result() {
    let mut s = session(&[
        HookEvent::Command,
        HookEvent::SessionBeforeTree,
        HookEvent::SessionTree,
    ]);
    let answer = with_history(&mut s);
    let step = s.step(10, prompt("/back yes")).unwrap();
    let command = hooks(&step)[0].0;

    // The handler asks for the navigation after an entry of its own: that is written first.
    let step = s
        .step(
            11,
            decided_as(command, navigate_to(&answer, "yes"), vec![entry("before")]),
        )
        .unwrap();
    assert!(
        step.replies.is_empty(),
        "the prompt waits: {:?}",
        step.replies
    );
    assert!(s.is_busy());
    let asked = hooks(&step);
    assert_eq!(asked.len(), 1, "{:?}", step.effects);
    let HookPayload::SessionBeforeTree { preparation } = &asked[0].1 else {
        panic!("{:?}", asked[0].1)
    };
    assert_eq!(preparation["label"], json!("yes"));
    assert_eq!(preparation["customInstructions"], json!("names only"));
    let summarized: Vec<&str> = preparation["entriesToSummarize"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(summarized, ["message", "message", "custom"]);

    let supplied = HookDecision::SessionBeforeTree(TreeAnswer {
        summary: Some(SuppliedSummary {
            summary: "Left.".into(),
            details: None,
            usage: None,
        }),
        ..TreeAnswer::default()
    });
    let step = s
        .step(12, decided_as(asked[0].0, supplied, vec![]))
        .unwrap();
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let told = hooks(&step);
    let kinds: Vec<&str> = told.iter().map(|(_, p)| p.event().name()).collect();
    assert_eq!(
        kinds,
        ["session_tree"],
        "the command waits for its handlers"
    );

    // Its handlers write an entry; then the command goes on, with Pi's result.
    let step = s
        .step(
            13,
            decided_as(told[0].0, HookDecision::Done, vec![entry("tree")]),
        )
        .unwrap();
    let resumed = hooks(&step);
    assert_eq!(resumed.len(), 1, "{:?}", step.effects);
    assert_eq!(
        serde_json::to_value(&resumed[0].1).unwrap(),
        json!({"type": "command_resume", "name": "back", "run": 7,
            "answer": {"result": {"cancelled": false}}})
    );
    let step = s
        .step(
            14,
            decided_as(resumed[0].0, HookDecision::Done, vec![entry("after")]),
        )
        .unwrap();
    assert_eq!(step.replies, [Reply::CommandRan { errors: vec![] }]);
    assert!(!s.is_busy());
    let branch = s.tree().branch_path(None);
    let types: Vec<String> = branch
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    // The summary with the asked label, under the first answer; then the handler's entry.
    assert_eq!(
        types,
        [
            "message",
            "message",
            "branch_summary",
            "label",
            "custom",
            "custom"
        ]
    );
    assert_eq!(branch[1].id(), answer);
}

#[test]
fn a_cancelled_or_refused_navigation_is_the_commands_answer() {
    let mut s = session(&[HookEvent::Command, HookEvent::SessionBeforeTree]);
    let answer = with_history(&mut s);
    let step = s.step(10, prompt("/back no")).unwrap();
    let command = hooks(&step)[0].0;
    let step = s
        .step(11, decided_as(command, navigate_to(&answer, "no"), vec![]))
        .unwrap();
    let tree_hook = hooks(&step)[0].0;
    let cancel = HookDecision::SessionBeforeTree(TreeAnswer {
        cancel: true,
        ..TreeAnswer::default()
    });
    let step = s.step(12, decided_as(tree_hook, cancel, vec![])).unwrap();
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer: got, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(*got, CommandAnswer::Result(json!({"cancelled": true})));

    // Asked again, for an entry that is not there: the call throws Pi's error.
    let step = s
        .step(
            13,
            decided_as(resumed[0].0, navigate_to("nowhere", "x"), vec![]),
        )
        .unwrap();
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer: got, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(*got, CommandAnswer::Error("Entry nowhere not found".into()));
    let step = s.step(14, done(resumed[0].0)).unwrap();
    assert_eq!(step.replies, [Reply::CommandRan { errors: vec![] }]);
}

#[test]
fn errors_reported_before_the_ask_are_the_commands_and_the_navigation_goes_on() {
    use pi_core::agent::hooks::{HookError, HookOutcome};
    use pi_core::agent::Input;
    use pi_core::agent_session::SessionInput;
    use pi_core::event::{Event, SessionEvent};
    let mut s = session(&[HookEvent::Command]);
    let answer = with_history(&mut s);
    let step = s.step(10, prompt("/back yes")).unwrap();
    let command = hooks(&step)[0].0;
    let step = s
        .step(
            11,
            SessionInput::Answer(Input::HookDecided {
                call: command,
                outcome: HookOutcome {
                    decision: navigate_to(&answer, "yes"),
                    actions: vec![],
                    errors: vec![HookError {
                        extension: "command".into(),
                        event: HookEvent::Command,
                        error: "reported".into(),
                    }],
                },
            }),
        )
        .unwrap();
    let reported: Vec<(String, String)> = step
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Session(SessionEvent::ExtensionError {
                extension_path,
                error,
                ..
            }) => Some((extension_path.clone(), error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        reported,
        [("command:back".to_owned(), "reported".to_owned())]
    );
    // No tree handlers: the navigation (no summary without them: the model is asked) goes on.
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    assert!(s.is_busy());
}

/// At 10, the command `/back`, its handlers deciding `decision` at 11: the step.
fn back_decided(s: &mut SessionMachine, decision: HookDecision) -> SessionStep {
    let step = s.step(10, prompt("/back")).unwrap();
    let command = hooks(&step)[0].0;
    s.step(11, decided_as(command, decision, vec![])).unwrap()
}

fn new_session(parent: &str) -> HookDecision {
    HookDecision::CommandAsked {
        run: 3,
        ask: CommandAsk::NewSession {
            parent_session: Some(parent.to_owned()),
            with_session: true,
        },
    }
}

#[test]
fn a_commands_new_session_asks_session_before_switch_and_a_cancel_resumes_it() {
    let mut s = session(&[HookEvent::Command, HookEvent::SessionBeforeSwitch]);
    with_history(&mut s);
    let step = back_decided(&mut s, new_session("old.jsonl"));
    let asked = hooks(&step);
    assert!(
        matches!(&asked[..], [(_, HookPayload::SessionBeforeSwitch { reason, target_session_file: None })] if reason == "new"),
        "{asked:?}"
    );
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let cancel = HookDecision::SessionBeforeReplace { cancel: true };
    let step = s
        .step(12, decided_as(asked[0].0, cancel, vec![entry("asked")]))
        .unwrap();
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer, run, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(
        (run, answer),
        (&3, &CommandAnswer::Result(json!({"cancelled": true})))
    );
    let step = s.step(13, done(resumed[0].0)).unwrap();
    assert!(
        matches!(&step.replies[..], [Reply::CommandRan { errors }] if errors.is_empty()),
        "{:?}",
        step.replies
    );
}

#[test]
fn a_commands_new_session_let_go_on_leaves_the_session_for_the_front_end() {
    let mut s = session(&[HookEvent::Command, HookEvent::SessionBeforeSwitch]);
    with_history(&mut s);
    let step = back_decided(&mut s, new_session("old.jsonl"));
    let asked = hooks(&step)[0].0;
    let go_on = HookDecision::SessionBeforeReplace { cancel: false };
    let step = s.step(12, decided_as(asked, go_on, vec![])).unwrap();
    let [Reply::CommandReplacing(carried)] = &step.replies[..] else {
        panic!("{:?}", step.replies)
    };
    assert_eq!((carried.name.as_str(), carried.run), ("back", 3));
    assert!(hooks(&step).is_empty(), "nothing resumed here");
    assert!(!s.is_busy(), "the command left this session");
}

#[test]
fn a_carried_commands_message_runs_and_the_command_goes_on_once_the_run_settled() {
    let mut s = session(&[HookEvent::Command]);
    let step = s
        .step(
            1,
            SessionInput::ResumeCommand {
                name: "back".into(),
                run: 3,
                answer: CommandAnswer::Replaced(json!({"cancelled": false})),
            },
        )
        .unwrap();
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(
        answer,
        &CommandAnswer::Replaced(json!({"cancelled": false}))
    );
    assert!(s.is_busy());
    // `withSession`'s context prompts the new session: the command waits for that run.
    let send = HookDecision::CommandAsked {
        run: 3,
        ask: CommandAsk::SendUserMessage {
            content: serde_json::from_value(json!("Continue.")).unwrap(),
            deliver_as: None,
            expand_prompt_templates: None,
        },
    };
    let step = s.step(2, decided_as(resumed[0].0, send, vec![])).unwrap();
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let mut now = 3;
    let mut step = s.step(now, SessionInput::Wake).unwrap();
    let (call, _) = requests(&step).remove(0);
    now += 1;
    step = s.step(now, answered(call, "Continuing.")).unwrap();
    let settled = step
        .events
        .iter()
        .position(|e| serde_json::to_value(e).unwrap()["type"] == "agent_settled");
    assert!(settled.is_some(), "{:?}", step.events);
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(answer, &CommandAnswer::Result(serde_json::Value::Null));
    let step = s.step(now + 1, done(resumed[0].0)).unwrap();
    assert!(
        matches!(&step.replies[..], [Reply::CommandRan { .. }]),
        "{:?}",
        step.replies
    );
}

#[test]
fn a_commands_fork_and_switch_ask_pis_before_events_and_leave_the_session() {
    let cases = [
        (
            CommandAsk::Fork {
                entry_id: "e1".into(),
                position: None,
                with_session: false,
            },
            HookEvent::SessionBeforeFork,
            HookPayload::SessionBeforeFork {
                entry_id: "e1".into(),
                position: "before".into(),
            },
        ),
        (
            CommandAsk::SwitchSession {
                session_path: "/s/other.jsonl".into(),
                with_session: true,
            },
            HookEvent::SessionBeforeSwitch,
            HookPayload::SessionBeforeSwitch {
                reason: "resume".into(),
                target_session_file: Some("/s/other.jsonl".into()),
            },
        ),
    ];
    for (ask, event, expected) in cases {
        let mut s = session(&[HookEvent::Command, event]);
        with_history(&mut s);
        let asking = HookDecision::CommandAsked {
            run: 5,
            ask: ask.clone(),
        };
        let step = back_decided(&mut s, asking);
        let asked = hooks(&step);
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0].1, expected);
        let go_on = HookDecision::SessionBeforeReplace { cancel: false };
        let step = s.step(12, decided_as(asked[0].0, go_on, vec![])).unwrap();
        let [Reply::CommandReplacing(carried)] = &step.replies[..] else {
            panic!("{:?}", step.replies)
        };
        assert_eq!((carried.run, &carried.ask), (5, &ask));
        assert!(!s.is_busy());
    }
}

fn reload() -> HookDecision {
    HookDecision::CommandAsked {
        run: 4,
        ask: CommandAsk::Reload,
    }
}

#[test]
fn a_commands_reload_is_left_to_the_front_end_and_the_reload_tells_the_start_again() {
    let mut s = session(&[
        HookEvent::Command,
        HookEvent::SessionStart,
        HookEvent::ResourcesDiscover,
    ]);
    with_history(&mut s);
    let step = back_decided(&mut s, reload());
    let [Reply::CommandReplacing(carried)] = &step.replies[..] else {
        panic!("{:?}", step.replies)
    };
    assert_eq!(
        (carried.name.as_str(), carried.run, &carried.ask),
        ("back", 4, &CommandAsk::Reload)
    );
    let step = s.step(12, SessionInput::Reloaded(None)).unwrap();
    let told = hooks(&step);
    assert!(
        matches!(&told[..], [(_, HookPayload::SessionStart { reason, previous_session_file: None })] if reason == "reload"),
        "{told:?}"
    );
    let step = s.step(13, done(told[0].0)).unwrap();
    let told = hooks(&step);
    assert!(
        matches!(&told[..], [(_, HookPayload::ResourcesDiscover { reason, .. })] if reason == "reload"),
        "{told:?}"
    );
}

/// What a reload's new load registered replaces the first load's: the hook points it does not
/// handle are no longer asked (its `session_start` here), a command it no longer registers is
/// a prompt for the model, and the one it registers runs.
#[test]
fn a_reloads_registrations_take_the_place_of_the_first_loads() {
    let mut s = session(&[
        HookEvent::Command,
        HookEvent::SessionStart,
        HookEvent::ResourcesDiscover,
    ]);
    back_decided(&mut s, reload());
    let reload = pi_core::agent_session::Reload {
        handled_hooks: pi_core::agent::hooks::HandledHooks::of([HookEvent::Command]),
        commands: vec!["other".into()],
        ..Default::default()
    };
    let step = s
        .step(12, SessionInput::Reloaded(Some(Box::new(reload))))
        .unwrap();
    assert!(hooks(&step).is_empty(), "{:?}", hooks(&step));
    assert!(!s.agent().handled_hooks().contains(HookEvent::SessionStart));
    let step = s
        .step(
            13,
            SessionInput::ResumeCommand {
                name: "back".into(),
                run: 4,
                answer: CommandAnswer::Result(json!(null)),
            },
        )
        .unwrap();
    let resumed = hooks(&step)[0].0;
    let step = s.step(14, done(resumed)).unwrap();
    assert!(!s.is_busy(), "{:?}", step.replies);
    let step = s.step(15, prompt("/back")).unwrap();
    assert_eq!(requests(&step).len(), 1, "no longer a command: the model's");
    let (call, _) = requests(&step).remove(0);
    s.step(16, answered(call, "An answer.")).unwrap();
    let step = s.step(17, prompt("/other")).unwrap();
    assert!(
        matches!(&hooks(&step)[..], [(_, HookPayload::Command { .. })]),
        "{:?}",
        hooks(&step)
    );
}

#[test]
fn a_reload_while_the_agent_streams_throws_pis_error_in_the_handler() {
    let mut s = session(&[HookEvent::Command]);
    s.step(1, prompt("First prompt.")).unwrap();
    let step = s.step(2, prompt("/back")).unwrap();
    let command = hooks(&step)[0].0;
    let step = s.step(3, decided_as(command, reload(), vec![])).unwrap();
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let resumed = hooks(&step);
    let HookPayload::CommandResume { answer, .. } = &resumed[0].1 else {
        panic!("{resumed:?}")
    };
    assert_eq!(
        answer,
        &CommandAnswer::Error("Wait for the current response to finish before reloading.".into())
    );
}
