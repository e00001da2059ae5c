//! Each perturbation changes the run the way it says: the events of a corpus cassette driven
//! through the chaos interpreter under a one-perturbation plan, compared with the unperturbed
//! run's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};

use pi_cassettes::Cassette;
use pi_chaos::interpreter::{INJECTED_TOOL_FAILURE, ONE_MORE_TURN};
use pi_chaos::{ChaosInterpreter, ChaosRecording, Checker, PerturbationPlan};
use pi_core::session::ids::IdGenerator;
use pi_effects::driver::{advance, submit};
use pi_effects::run_config::build_machine;
use pi_effects::session::SessionStore;

/// The events of `cassette` under `plan`, one JSON line each, with the inputs and the times
/// of timers.
fn events(cassette: &str, plan: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cassettes/corpus")
        .join(cassette);
    let recording = ChaosRecording::from_cassette(&Cassette::load(&path).unwrap()).unwrap();
    let plan: PerturbationPlan = plan.parse().unwrap();
    let config = plan.config(&recording.config);
    let store = SessionStore::in_memory(
        &config.cwd,
        config.started_at,
        IdGenerator::new(config.seed),
    )
    .with_id_state(recording.session.id_state);
    let (mut machine, mut file) = build_machine(&config, store).unwrap();
    let checker = Arc::new(Mutex::new(Checker::new(config.retry)));
    let mut io = ChaosInterpreter::new(&recording, &plan, Arc::clone(&checker));
    let log = Mutex::new(Vec::new());
    let record =
        |e: &pi_core::event::Event| log.lock().unwrap().push(serde_json::to_string(e).unwrap());
    for _ in 0..10_000 {
        if !machine.is_busy() {
            let Some(input) = io.next_outside() else {
                break;
            };
            log.lock()
                .unwrap()
                .push(format!("outside {}", input.name()));
            let _ = submit(&mut machine, &mut io, &mut file, input, record);
        } else {
            let wake = machine.wake_at();
            let mut future = std::pin::pin!(advance(&mut machine, &mut io, &mut file, record));
            let polled = future
                .as_mut()
                .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
            assert!(polled.is_ready());
            if let Some(at) = wake {
                log.lock().unwrap().push(format!("wake due {at}"));
            }
        }
    }
    drop(io);
    let violations = Arc::try_unwrap(checker)
        .unwrap()
        .into_inner()
        .unwrap()
        .finish();
    assert!(violations.is_empty(), "{violations:?}");
    log.into_inner().unwrap()
}

fn count(events: &[String], needle: &str) -> usize {
    events.iter().filter(|e| e.contains(needle)).count()
}

fn position(events: &[String], needle: &str) -> usize {
    events
        .iter()
        .position(|e| e.contains(needle))
        .unwrap_or_else(|| panic!("no {needle}"))
}

fn user_texts(events: &[String]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.contains(r#""type":"message_end","message":{"role":"user""#))
        .cloned()
        .collect()
}

#[test]
fn a_resplit_stream_gives_the_same_messages() {
    let plain = events("plain_text.jsonl", "none");
    let split = events("plain_text.jsonl", "split:0:5");
    let ends = |e: &[String]| -> Vec<String> {
        e.iter()
            .filter(|l| l.contains("\"message_end\""))
            .cloned()
            .collect()
    };
    // The same messages, then the perturbed run's one more turn.
    let (plain, split) = (ends(&plain), ends(&split));
    assert_eq!(plain[..], split[..plain.len()]);
    assert_eq!(split.len(), plain.len() + 2);
}

#[test]
fn a_transient_failure_is_retried() {
    let plain = events("plain_text.jsonl", "none");
    assert_eq!(count(&plain, "auto_retry_start"), 0);
    for kind in ["429", "500", "reset"] {
        let failed = events("plain_text.jsonl", &format!("err:0:{kind}"));
        assert_eq!(count(&failed, "auto_retry_start"), 1, "{kind}");
        assert_eq!(
            count(&failed, r#""auto_retry_end","success":true"#),
            1,
            "{kind}"
        );
    }
}

#[test]
fn a_cut_stream_fails_with_terminated_and_is_retried() {
    let cut = events("plain_text.jsonl", "cut:0:500");
    let retried = cut
        .iter()
        .filter(|e| e.contains("auto_retry_start") && e.contains(r#""errorMessage":"terminated""#));
    assert_eq!(retried.count(), 1);
    assert_eq!(count(&cut, r#""auto_retry_end","success":true"#), 1);
}

#[test]
fn steering_follow_up_abort_and_compaction_arrive_at_their_step() {
    let steered = events("one_tool.jsonl", "steer:3");
    assert!(user_texts(&steered)
        .iter()
        .any(|t| t.contains("chaos: steering")));
    let followed = events("one_tool.jsonl", "follow:3");
    assert!(user_texts(&followed)
        .iter()
        .any(|t| t.contains("chaos: follow-up")));
    let aborted = events("one_tool.jsonl", "abort:3");
    assert!(count(&aborted, r#""stopReason":"aborted""#) > 0);
    assert_eq!(count(&aborted, "tool_execution_start"), 0);
    assert!(count(&events("one_tool.jsonl", "none"), "tool_execution_start") > 0);
    let compacted = events("one_tool.jsonl", "compact:3");
    assert_eq!(
        count(&compacted, r#""compaction_start","reason":"manual""#),
        1
    );
    // Every perturbed run ends with one more turn.
    assert!(user_texts(&compacted)
        .last()
        .unwrap()
        .contains(ONE_MORE_TURN));
}

#[test]
fn a_failing_tool_gives_an_error_result() {
    let failed = events("one_tool.jsonl", "toolfail:0");
    assert!(count(&failed, INJECTED_TOOL_FAILURE) > 0);
    assert!(count(&failed, r#""isError":true"#) > 0);
}

#[test]
fn reordered_answers_finish_another_tool_first() {
    let plain = events("parallel_tools.jsonl", "none");
    let reordered = events("parallel_tools.jsonl", "reorder:0");
    let first_end = |e: &[String]| e[position(e, "tool_execution_end")].clone();
    assert!(first_end(&plain).contains("call_bash_1"));
    assert!(first_end(&reordered).contains("call_read_2"));
}

#[test]
fn a_late_timer_fires_late() {
    let on_time = events("retry_500_then_429.jsonl", "none");
    let late = events("retry_500_then_429.jsonl", "late:0:60000");
    let first_wake = |e: &[String]| e.iter().position(|l| l.starts_with("wake due")).unwrap();
    assert_eq!(first_wake(&on_time), first_wake(&late));
    let messages_after = |e: &[String]| -> Vec<u64> {
        e.iter()
            .filter(|l| l.contains(r#""message_start","message":{"role":"assistant""#))
            .filter_map(|l| l.rsplit(r#""timestamp":"#).next())
            .filter_map(|t| t.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .collect()
    };
    let (a, b) = (messages_after(&on_time), messages_after(&late));
    assert!(b[1] >= a[1] + 60_000, "{a:?} {b:?}");
}

#[test]
fn a_small_keep_recent_moves_the_compaction_cut() {
    let kept = events("manual_compaction.jsonl", "none");
    let cut = events("manual_compaction.jsonl", "keep:1");
    let first_kept = |e: &[String]| {
        let line = &e[position(e, "firstKeptEntryId")];
        line.split("firstKeptEntryId").nth(1).unwrap()[3..11].to_owned()
    };
    assert_ne!(first_kept(&kept), first_kept(&cut));
}
