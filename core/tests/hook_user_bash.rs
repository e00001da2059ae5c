//! `user_bash` as Pi 1.5.2's RPC `bash` asks it (`emitUserBash`): the command goes to the
//! handlers with its `excludeFromContext` and the session's cwd; a result of theirs (or of the
//! command their operations ran) is recorded as a `bashExecution` message, held back while the
//! agent streams, and answers the command; a failure and "nobody answered" record nothing; the
//! commands are answered in the order they came; without a handler nothing is asked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookDecision, HookEvent, HookPayload, UserBashAnswer};
use pi_core::agent::{CallId, Effect};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::message::AgentMessage;
use pi_core::nullable::Nullable;
use serde_json::json;

#[path = "support/session.rs"]
mod support;

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::hooked(handled, vec![], &[], CompactionSettings::default())
}

fn bash(command: &str, exclude: Option<bool>) -> SessionInput {
    SessionInput::UserBash {
        command: command.into(),
        exclude_from_context: exclude,
    }
}

fn bash_messages(s: &SessionMachine) -> Vec<pi_core::message::BashExecutionMessage> {
    s.agent()
        .messages()
        .iter()
        .filter_map(|m| match m {
            AgentMessage::BashExecution(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

/// At `now`, `user_bash` point `call` decides `answer`, which answers the command: the step.
fn decide(
    s: &mut SessionMachine,
    now: u64,
    call: CallId,
    answer: Option<UserBashAnswer>,
) -> SessionStep {
    let decision = HookDecision::UserBash {
        answer: answer.clone(),
    };
    let step = s
        .step(now, support::decided_as(call, decision, vec![]))
        .unwrap();
    assert_eq!(step.replies, [Reply::UserBash(answer)]);
    step
}

#[test]
fn a_handlers_result_is_recorded_and_answers_the_command() {
    let mut s = session(&[HookEvent::UserBash]);
    let step = s.step(5, bash("ls", Some(true))).unwrap();
    let hooks = support::hooks(&step);
    assert_eq!(
        hooks.iter().map(|h| &h.1).collect::<Vec<_>>(),
        [&HookPayload::UserBash {
            command: "ls".into(),
            exclude_from_context: true,
            cwd: "/work".into()
        }]
    );
    assert!(step.replies.is_empty(), "answered only once decided");
    let result =
        json!({"output": "given\n", "exitCode": 0, "cancelled": false, "truncated": false});
    let answer = UserBashAnswer::Result {
        result: result.clone(),
    };
    decide(&mut s, 9, hooks[0].0, Some(answer));
    let recorded = bash_messages(&s);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].command, "ls");
    assert_eq!(recorded[0].output, "given\n");
    assert_eq!(recorded[0].exit_code, Nullable::Value(0));
    assert_eq!(recorded[0].exclude_from_context, Some(true));
    assert_eq!(recorded[0].timestamp, 9);
}

#[test]
fn nobody_answering_or_a_failure_records_nothing_and_commands_are_answered_in_order() {
    let mut s = session(&[HookEvent::UserBash]);
    let first = support::hook(&s.step(1, bash("one", None)).unwrap());
    // The second waits for the first's handlers, as the session's notifications do.
    let step = s.step(2, bash("two", None)).unwrap();
    assert!(support::hooks(&step).is_empty());
    let step = decide(&mut s, 3, first, None);
    let hooks = support::hooks(&step);
    assert!(
        matches!(&hooks[..], [(_, HookPayload::UserBash { command, .. })] if command == "two"),
        "{hooks:?}"
    );
    let failed = UserBashAnswer::Failed {
        error: "no shell".into(),
    };
    decide(&mut s, 4, hooks[0].0, Some(failed));
    assert!(bash_messages(&s).is_empty());
}

#[test]
fn a_result_while_the_agent_streams_waits_for_the_next_prompt() {
    let mut s = session(&[HookEvent::UserBash]);
    let step = s.step(1, support::prompt("Hi")).unwrap();
    assert!(!support::requests(&step).is_empty());
    let call = support::hook(&s.step(2, bash("ran", None)).unwrap());
    let answer = UserBashAnswer::Ran {
        chunks: vec!["a\n".into()],
        result: json!({"output": "a\n", "exitCode": 3, "cancelled": false, "truncated": false}),
    };
    decide(&mut s, 3, call, Some(answer));
    assert!(bash_messages(&s).is_empty(), "held while streaming");
}

#[test]
fn without_a_handler_nothing_is_asked() {
    let mut s = session(&[HookEvent::SessionStart]);
    let step = s.step(1, bash("ls", None)).unwrap();
    assert!(!step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Hook { .. })));
    assert_eq!(step.replies, [Reply::UserBash(None)]);
}

#[test]
fn abort_bash_cancels_the_hook_point_being_asked_and_its_answer_still_comes() {
    let mut s = session(&[HookEvent::UserBash]);
    let step = s.step(1, SessionInput::AbortUserBash).unwrap();
    assert!(step.effects.is_empty(), "nothing asked, nothing cancelled");
    let call = support::hook(&s.step(2, bash("wait", None)).unwrap());
    let step = s.step(3, SessionInput::AbortUserBash).unwrap();
    assert!(
        matches!(step.effects[..], [Effect::Cancel { call: c }] if c == call),
        "{:?}",
        step.effects
    );
    let answer = UserBashAnswer::Ran {
        chunks: vec![],
        result: json!({"output": "", "cancelled": true, "truncated": false}),
    };
    decide(&mut s, 4, call, Some(answer));
    assert!(bash_messages(&s)[0].cancelled);
    assert_eq!(bash_messages(&s)[0].exit_code, Nullable::Absent);
    let step = s.step(5, SessionInput::AbortUserBash).unwrap();
    assert!(step.effects.is_empty(), "decided: nothing left to cancel");
}
