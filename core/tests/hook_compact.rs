//! An extension's `ctx.compact()` (Pi 1.5.2's `AgentSession.compact` from the extension
//! context): while idle, a command's compaction starts within its step, before the command is
//! answered; mid run, the run is aborted and heard to its end, and the compaction starts after
//! its `agent_settled`. The summary request carries the custom instructions, and the end answers
//! no RPC `compact` (none asked for it).
//!
//! And the compaction hook points (`session_before_compact`, `session_compact`): manual,
//! threshold and overflow compactions wait for the handlers after `compaction_start`; a cancel
//! ends the compaction as aborted, a supplied compaction is written with no summary request,
//! and `session_compact` runs after the entry, before `compaction_end`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HookAction, HookDecision, HookEvent, HookOutcome, HookPayload, SuppliedCompaction,
};
use pi_core::agent::{CallId, Effect, Input, StreamEvent};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::{CompactionReason, Event, SessionEvent};
use pi_core::message::AssistantMessage;
use pi_core::script::tool;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;
use support::{
    answered, answered_full, answered_with, decided_as, done, hook, kinds, manual, prompt,
    prompted, prompted_and_answered, requests,
};

fn session(handled: &[HookEvent]) -> SessionMachine {
    let compaction = CompactionSettings {
        keep_recent_tokens: 1,
        ..CompactionSettings::default()
    };
    support::hooked(handled, vec![tool("echo", false)], &["squash"], compaction)
}

fn compact(call: CallId) -> SessionInput {
    decided(
        call,
        vec![HookAction::Compact {
            custom_instructions: Some("keep the names".into()),
            callback: None,
        }],
    )
}

fn decided(call: CallId, actions: Vec<HookAction>) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Done,
            actions,
            errors: vec![],
        },
    })
}

/// The last user text of the summary request `step` sent.
fn summary_prompt(step: &SessionStep) -> String {
    let sent = requests(step);
    assert_eq!(sent.len(), 1, "the summary request");
    let last: Value = serde_json::to_value(sent[0].1.messages.last().unwrap()).unwrap();
    last["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Whether the summary request `step` sent asks to keep the names.
fn keeps_the_names(step: &SessionStep) -> bool {
    summary_prompt(step).ends_with("\n\nAdditional focus: keep the names")
}

/// Whether `step` settled the agent as aborted.
fn settled_aborted(step: &SessionStep) -> bool {
    step.events.iter().any(|e| {
        matches!(
            e,
            Event::Session(SessionEvent::AgentSettled { aborted: true })
        )
    })
}

/// That `step` answered the compaction asked for as cancelled.
fn assert_cancelled_reply(step: &SessionStep) {
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(_, Err(e))] if e == "Compaction cancelled"),
        "{:?}",
        step.replies
    );
}

/// An entry of `custom_type` with no data, appended by a handler.
fn append(custom_type: &str) -> HookAction {
    HookAction::AppendEntry {
        custom_type: custom_type.into(),
        data: None,
    }
}

/// A session with one prompt answered (and settled, unless a handler holds it): the answer's
/// step.
fn with_history(s: &mut SessionMachine) -> SessionStep {
    prompted_and_answered(
        s,
        1,
        "First prompt about alpha.",
        "First answer about alpha.",
    )
}

/// A first prompt runs through its `turn_end` (and its `agent_settled` where `settled_handled`),
/// then a second is answered: the step at the second's `turn_end`, one time unit a step (the
/// next free time is 6, or 7 with `agent_settled` handled).
fn at_second_turn_end(s: &mut SessionMachine, settled_handled: bool) -> SessionStep {
    let step = with_history(s);
    let step = s.step(3, done(hook(&step))).unwrap();
    let now = if settled_handled {
        s.step(4, done(hook(&step))).unwrap();
        5
    } else {
        4
    };
    prompted_and_answered(s, now, "Second prompt.", "Second answer.")
}

#[test]
fn a_command_compacts_at_once_while_idle_with_its_instructions_and_answers_no_compact() {
    let mut s = session(&[HookEvent::Command]);
    with_history(&mut s);
    let step = s.step(3, prompt("/squash keep the names")).unwrap();
    let step = s.step(4, compact(hook(&step))).unwrap();
    assert_eq!(kinds(&step), ["compaction_start"]);
    assert!(
        matches!(step.replies[..], [Reply::CommandRan { .. }]),
        "{:?}",
        step.replies
    );
    assert!(keeps_the_names(&step));
    let (call, _) = requests(&step).remove(0);
    let step = s.step(5, answered(call, "## Goal\nSquashed.")).unwrap();
    assert!(
        step.replies.is_empty(),
        "no compact asked: {:?}",
        step.replies
    );
    assert!(
        step.events.iter().any(|e| matches!(e,
            Event::Session(SessionEvent::CompactionEnd { result: Some(r), .. })
                if r.summary.ends_with("## Goal\nSquashed."))),
        "{:?}",
        step.events
    );
}

/// A first prompt runs through its `turn_end`, then a second's `turn_end` compacts.
#[test]
fn a_turn_end_handler_compacts_after_the_aborted_run_settles() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let step = at_second_turn_end(&mut s, false);
    let step = s.step(6, compact(hook(&step))).unwrap();
    let kinds = kinds(&step);
    let settled = kinds.iter().position(|k| k == "agent_settled");
    let started = kinds.iter().position(|k| k == "compaction_start");
    assert!(
        settled.is_some() && started == settled.map(|i| i + 1),
        "the run is heard to its end, then the compaction starts: {kinds:?}"
    );
    assert!(settled_aborted(&step), "settled as aborted");
    assert!(keeps_the_names(&step));
    assert!(step.replies.is_empty(), "{:?}", step.replies);
}

/// The same where `agent_settled` is handled (case `compact_after_abort`, asked from the
/// aborted run's end): Pi's `compact()` waits for the session to be idle, which it is once the
/// `agent_settled` handlers ran and the event is out, so the compaction starts only then.
#[test]
fn an_asked_compaction_waits_for_the_agent_settled_handlers_and_event() {
    let mut s = session(&[HookEvent::TurnEnd, HookEvent::AgentSettled]);
    let step = at_second_turn_end(&mut s, true);
    let step = s.step(7, compact(hook(&step))).unwrap();
    let (settled, payload) = hook_payload(&step);
    assert!(
        matches!(payload, HookPayload::AgentSettled { aborted: true }),
        "{payload:?}"
    );
    assert!(
        !kinds(&step).iter().any(|k| k == "compaction_start"),
        "not while the agent_settled handlers run: {:?}",
        kinds(&step)
    );
    let step = s.step(8, done(settled)).unwrap();
    assert_eq!(kinds(&step)[..2], ["agent_settled", "compaction_start"]);
    assert!(keeps_the_names(&step));
}

/// A `turn_end` after tool results, whose run would go on: the compaction's abort comes before
/// the loop's next step, as Pi's `abort()` runs within the handler, so no request goes out for
/// a turn that would only be cancelled (a model that answers fast would otherwise be heard).
#[test]
fn a_turn_end_handler_compacting_mid_run_sends_no_request_for_the_next_turn() {
    let mut s = session(&[HookEvent::TurnEnd]);
    let call = prompted(&mut s, 1, "Call echo.");
    let call_echo = json!([{"type": "toolCall", "id": "call_1", "name": "echo",
        "arguments": {"value": "v"}}]);
    let step = s
        .step(2, answered_with(call, call_echo, "toolUse"))
        .unwrap();
    let run = support::tool_run(&step.effects);
    let step = s.step(3, support::tool_finished(run, "v")).unwrap();
    let step = s.step(4, compact(hook(&step))).unwrap();
    assert!(
        !step
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Cancel { .. })),
        "nothing started to cancel: {:?}",
        step.effects
    );
    assert!(requests(&step).is_empty(), "no request for the next turn");
    assert_eq!(
        kinds(&step),
        ["turn_end", "turn_start", "message_start", "message_end"],
        "the next turn ends aborted at once"
    );
    let step = s.step(5, done(hook(&step))).unwrap();
    assert!(
        settled_aborted(&step),
        "settled as aborted: {:?}",
        kinds(&step)
    );
    assert!(keeps_the_names(&step));
}

/// The payload of the one hook point `step` asked for.
fn hook_payload(step: &SessionStep) -> (CallId, HookPayload) {
    let call = hook(step);
    let payload = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Hook { payload, .. } => Some(payload.clone()),
            _ => None,
        })
        .unwrap();
    (call, payload)
}

fn before_compact(cancel: bool, compaction: Option<SuppliedCompaction>) -> HookDecision {
    HookDecision::SessionBeforeCompact { cancel, compaction }
}

/// The `session_before_compact` point `step` asked for: its call and preparation.
fn before_compact_asked(step: &SessionStep) -> (CallId, Value) {
    let (call, payload) = hook_payload(step);
    let HookPayload::SessionBeforeCompact { preparation, .. } = payload else {
        panic!("{payload:?}")
    };
    (call, preparation)
}

/// `session_before_compact` point `call` supplies the extension's compaction, keeping from
/// where `preparation` would.
fn supplying(call: CallId, preparation: &Value) -> SessionInput {
    let first_kept = preparation["firstKeptEntryId"].as_str().unwrap();
    decided_as(
        call,
        before_compact(false, Some(supplied(first_kept))),
        vec![],
    )
}

fn supplied(first_kept_entry_id: &str) -> SuppliedCompaction {
    SuppliedCompaction {
        summary: "Summary by the extension.".into(),
        first_kept_entry_id: first_kept_entry_id.into(),
        tokens_before: 42,
        details: Some(json!({"by": "extension"})),
        usage: None,
    }
}

/// The compaction end among `step`'s events: its result's summary, `aborted`, `willRetry`.
fn compaction_end(step: &SessionStep) -> Option<(Option<String>, bool, bool)> {
    step.events.iter().find_map(|e| match e {
        Event::Session(SessionEvent::CompactionEnd {
            result,
            aborted,
            will_retry,
            ..
        }) => Some((
            result.as_ref().map(|r| r.summary.clone()),
            *aborted,
            *will_retry,
        )),
        _ => None,
    })
}

/// A session with two prompts answered, so that a compaction has something to summarise.
fn with_two_turns(s: &mut SessionMachine) {
    with_history(s);
    prompted_and_answered(
        s,
        3,
        "Second prompt about beta.",
        "Second answer about beta.",
    );
}

/// After two turns, a manual compaction with `instructions` whose `session_before_compact`
/// handlers `cancel` it or not, supplying nothing: the step of their decision.
fn manual_decided(s: &mut SessionMachine, instructions: &str, cancel: bool) -> SessionStep {
    with_two_turns(s);
    let step = s.step(5, manual(instructions)).unwrap();
    let decision = before_compact(cancel, None);
    s.step(6, decided_as(hook(&step), decision, vec![]))
        .unwrap()
}

#[test]
fn a_manual_compaction_waits_for_session_before_compact_and_a_cancel_ends_it_aborted() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("keep the names")).unwrap();
    assert_eq!(kinds(&step), ["compaction_start"]);
    assert!(requests(&step).is_empty(), "no summary before the handlers");
    let (call, payload) = hook_payload(&step);
    let HookPayload::SessionBeforeCompact {
        preparation,
        branch_entries,
        custom_instructions,
        reason,
        will_retry,
    } = &payload
    else {
        panic!("{payload:?}")
    };
    assert_eq!(custom_instructions.as_deref(), Some("keep the names"));
    assert_eq!((*reason, *will_retry), (CompactionReason::Manual, false));
    let first_kept = preparation["firstKeptEntryId"].as_str().unwrap();
    assert!(branch_entries.iter().any(|e| e["id"] == first_kept));
    assert!(preparation["fileOps"]["read"].is_array());
    assert_eq!(preparation["settings"]["keepRecentTokens"], 1);
    let step = s
        .step(
            6,
            decided_as(call, before_compact(true, None), vec![append("seen")]),
        )
        .unwrap();
    assert!(
        requests(&step).is_empty(),
        "a cancelled compaction asks no summary"
    );
    assert_eq!(kinds(&step), ["entry_appended", "compaction_end"]);
    assert_eq!(compaction_end(&step), Some((None, true, false)));
    assert_cancelled_reply(&step);
}

#[test]
fn a_supplied_compaction_is_written_without_a_summary_request_then_session_compact_runs() {
    let mut s = session(&[HookEvent::SessionBeforeCompact, HookEvent::SessionCompact]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("mine")).unwrap();
    let (call, preparation) = before_compact_asked(&step);
    let step = s.step(6, supplying(call, &preparation)).unwrap();
    assert!(requests(&step).is_empty(), "no summary request");
    assert!(
        kinds(&step).is_empty(),
        "compaction_end waits: {:?}",
        kinds(&step)
    );
    let (call, payload) = hook_payload(&step);
    let HookPayload::SessionCompact {
        compaction_entry,
        from_extension,
        reason,
        will_retry,
    } = payload
    else {
        panic!()
    };
    assert!(from_extension);
    assert_eq!((reason, will_retry), (CompactionReason::Manual, false));
    assert_eq!(compaction_entry["summary"], "Summary by the extension.");
    assert_eq!(compaction_entry["fromHook"], true);
    assert_eq!(compaction_entry["tokensBefore"], 42);
    assert_eq!(compaction_entry["details"], json!({"by": "extension"}));
    let step = s
        .step(
            8,
            decided_as(call, HookDecision::Done, vec![append("compacted")]),
        )
        .unwrap();
    assert_eq!(kinds(&step), ["entry_appended", "compaction_end"]);
    assert_eq!(
        compaction_end(&step),
        Some((Some("Summary by the extension.".into()), false, false))
    );
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(_, Ok(r))] if r.tokens_before == 42),
        "{:?}",
        step.replies
    );
}

#[test]
fn a_model_summary_is_asked_when_no_handler_cancels_or_supplies_and_its_entry_is_not_from_an_extension(
) {
    let mut s = session(&[HookEvent::SessionBeforeCompact, HookEvent::SessionCompact]);
    let step = manual_decided(&mut s, "model", false);
    assert!(summary_prompt(&step).ends_with("\n\nAdditional focus: model"));
    let (call, _) = requests(&step).remove(0);
    let mut step = s.step(7, answered(call, "## Goal\nModel.")).unwrap();
    // A split turn: the history, then the turn's prefix.
    if let Some((call, _)) = requests(&step).pop() {
        step = s.step(7, answered(call, "## Goal\nModel.")).unwrap();
    }
    assert_eq!(compaction_end(&step), None, "session_compact first");
    let (call, payload) = hook_payload(&step);
    assert!(matches!(
        payload,
        HookPayload::SessionCompact { from_extension: false, ref compaction_entry, .. }
            if compaction_entry["fromHook"] == false
    ));
    let step = s.step(8, done(call)).unwrap();
    assert!(compaction_end(&step)
        .is_some_and(|(summary, aborted, _)| !aborted
            && summary.is_some_and(|s| s.ends_with("## Goal\nModel."))));
}

#[test]
fn a_threshold_compaction_takes_the_supplied_compaction() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    with_history(&mut s);
    let call = support::prompted(&mut s, 3, "Second prompt about beta.");
    let step = s.step(4, answered_full(call)).unwrap();
    let (call, payload) = hook_payload(&step);
    let HookPayload::SessionBeforeCompact {
        preparation,
        reason,
        will_retry,
        custom_instructions,
        ..
    } = payload
    else {
        panic!()
    };
    assert_eq!(
        (reason, will_retry, custom_instructions),
        (CompactionReason::Threshold, false, None)
    );
    let step = s.step(5, supplying(call, &preparation)).unwrap();
    assert!(requests(&step).is_empty(), "no summary request");
    assert_eq!(
        compaction_end(&step),
        Some((Some("Summary by the extension.".into()), false, false))
    );
    assert!(step.replies.is_empty(), "nobody asked: {:?}", step.replies);
}

#[test]
fn an_overflow_compaction_cancelled_by_an_extension_is_not_retried() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    with_history(&mut s);
    let call = support::prompted(&mut s, 3, "Second prompt about beta.");
    let message: AssistantMessage = serde_json::from_value(json!({"role": "assistant",
        "content": [], "api": "openai-completions", "provider": "mock", "model": "mock-model",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "error", "errorMessage": "prompt is too long", "timestamp": 3}))
    .unwrap();
    let step = s
        .step(
            4,
            SessionInput::Answer(Input::Model {
                call,
                event: StreamEvent::Error {
                    reason: message.stop_reason,
                    error: message,
                },
            }),
        )
        .unwrap();
    let (call, payload) = hook_payload(&step);
    assert!(matches!(
        payload,
        HookPayload::SessionBeforeCompact {
            reason: CompactionReason::Overflow,
            will_retry: true,
            ..
        }
    ));
    let step = s
        .step(5, decided_as(call, before_compact(true, None), vec![]))
        .unwrap();
    assert_eq!(compaction_end(&step), Some((None, true, false)));
    let later = s.step(60_000, SessionInput::Wake).unwrap();
    assert!(
        requests(&step).is_empty() && requests(&later).is_empty(),
        "the turn is not asked again"
    );
}

#[test]
fn an_abort_while_the_handlers_decide_ends_the_compaction_aborted_once_they_ran() {
    let mut s = session(&[HookEvent::SessionBeforeCompact]);
    with_two_turns(&mut s);
    let step = s.step(5, manual("mine")).unwrap();
    let (call, preparation) = before_compact_asked(&step);
    let step = s.step(6, SessionInput::Abort).unwrap();
    assert_eq!(compaction_end(&step), None, "the handlers are awaited");
    let step = s.step(7, supplying(call, &preparation)).unwrap();
    assert_eq!(compaction_end(&step), Some((None, true, false)));
}

/// A command's `ctx.compact()` with callbacks numbered `callback`.
fn compact_calling_back(call: CallId, callback: u64) -> SessionInput {
    decided(
        call,
        vec![HookAction::Compact {
            custom_instructions: None,
            callback: Some(callback),
        }],
    )
}

#[test]
fn the_end_of_a_compaction_asked_with_callbacks_reaches_the_host_after_compaction_end() {
    let mut s = session(&[HookEvent::Command]);
    with_history(&mut s);
    let step = s.step(3, prompt("/squash")).unwrap();
    let step = s.step(4, compact_calling_back(hook(&step), 7)).unwrap();
    let (call, _) = requests(&step).remove(0);
    let step = s.step(5, answered(call, "## Goal\nSquashed.")).unwrap();
    assert!(compaction_end(&step).is_some());
    let (call, payload) = hook_payload(&step);
    let HookPayload::CompactEnd {
        callback,
        result,
        error,
    } = payload
    else {
        panic!("{payload:?}")
    };
    assert_eq!((callback, error), (7, None));
    assert!(result.unwrap().summary.ends_with("## Goal\nSquashed."));
    assert!(s.is_busy(), "the callbacks' actions are waited for");
    let step = s.step(6, decided(call, vec![append("compacted")])).unwrap();
    assert_eq!(kinds(&step), ["entry_appended"]);
    assert!(!s.is_busy());
}

#[test]
fn a_compaction_asked_with_callbacks_that_fails_calls_back_with_the_error() {
    let mut s = session(&[HookEvent::Command]);
    let step = s.step(1, prompt("/squash")).unwrap();
    let step = s.step(2, compact_calling_back(hook(&step), 0)).unwrap();
    assert_eq!(
        compaction_end(&step).map(|(r, a, _)| (r, a)),
        Some((None, false))
    );
    let (_, payload) = hook_payload(&step);
    assert_eq!(
        payload,
        HookPayload::CompactEnd {
            callback: 0,
            result: None,
            error: Some("Nothing to compact (session too small)".into()),
        }
    );
}

#[test]
fn a_compaction_asked_without_callbacks_calls_nothing_back() {
    let mut s = session(&[HookEvent::Command]);
    let step = s.step(1, prompt("/squash")).unwrap();
    let step = s.step(2, compact(hook(&step))).unwrap();
    assert!(compaction_end(&step).is_some());
    assert!(!step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Hook { .. })));
}

#[test]
fn session_compact_failed_runs_after_compaction_end_and_before_the_compact_is_answered() {
    let mut s = session(&[
        HookEvent::SessionBeforeCompact,
        HookEvent::SessionCompactFailed,
    ]);
    let step = manual_decided(&mut s, "cancel", true);
    assert_eq!(compaction_end(&step), Some((None, true, false)));
    assert!(step.replies.is_empty(), "answered once the handlers ran");
    let (call, payload) = hook_payload(&step);
    assert_eq!(
        payload,
        HookPayload::SessionCompactFailed {
            reason: CompactionReason::Manual,
            error_message: None,
            aborted: true,
            will_retry: false,
            from_extension: false,
        }
    );
    let step = s.step(7, done(call)).unwrap();
    assert_cancelled_reply(&step);
}

#[test]
fn session_compact_failed_hears_a_compaction_that_cannot_run_with_pis_error() {
    let mut s = session(&[HookEvent::SessionCompactFailed]);
    let step = s.step(1, manual("nothing")).unwrap();
    let (call, payload) = hook_payload(&step);
    assert_eq!(
        payload,
        HookPayload::SessionCompactFailed {
            reason: CompactionReason::Manual,
            error_message: Some("Compaction failed: Nothing to compact (session too small)".into()),
            aborted: false,
            will_retry: false,
            from_extension: false,
        }
    );
    let step = s.step(2, done(call)).unwrap();
    assert!(
        matches!(&step.replies[..], [Reply::Compacted(_, Err(e))] if e == "Nothing to compact (session too small)"),
        "{:?}",
        step.replies
    );
    assert!(!s.is_busy());
}

/// Two `ctx.compact()` calls around an aborted run's end: one from its `turn_end` (the run
/// still active), one from the `agent_settled` handler (no run active any more). Each is a
/// compaction of its own, none lost: as in Pi, where the second's `abort()` waits for nothing
/// and the first's for the session to be idle, the second runs first, then, once its callbacks
/// ran (their entry after the compaction), the first, which has nothing to compact; each one's
/// callback hears its end.
#[test]
fn two_asked_compactions_each_run_and_call_back_the_later_asked_while_idle_first() {
    let mut s = session(&[HookEvent::TurnEnd, HookEvent::AgentSettled]);
    let step = at_second_turn_end(&mut s, true);
    let step = s.step(7, compact_calling_back(hook(&step), 1)).unwrap();
    let step = s.step(8, compact_calling_back(hook(&step), 2)).unwrap();
    assert_eq!(kinds(&step)[..2], ["agent_settled", "compaction_start"]);
    // The summary calls (a split turn's prefix too) answered.
    let (mut step, mut now) = (step, 9);
    while let Some((call, _)) = requests(&step).first().cloned() {
        step = s.step(now, answered(call, "## Goal\nSquashed.")).unwrap();
        now += 1;
    }
    let (call, payload) = hook_payload(&step);
    assert!(
        matches!(
            payload,
            HookPayload::CompactEnd {
                callback: 2,
                error: None,
                ..
            }
        ),
        "{payload:?}"
    );
    let step = s
        .step(now, decided(call, vec![append("on_complete")]))
        .unwrap();
    let (_, payload) = hook_payload(&step);
    assert_eq!(
        payload,
        HookPayload::CompactEnd {
            callback: 1,
            result: None,
            error: Some("Nothing to compact (session too small)".into()),
        }
    );
}
