//! Properties of the session machine over arbitrary scenarios: prompts, queued prompts, aborts,
//! manual compactions, branch navigation, `!command` results, model switches and time passing, against a model that answers with text, tool calls,
//! transient errors, overflows and fatal errors, in any order. 256 cases by default; set
//! PROPTEST_CASES for more.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The case count comes from the environment; the core's IO ban applies to the library.
#![allow(clippy::disallowed_methods)]

use pi_core::message::{AgentMessage, StopReason};
use pi_core::script::{parse, Driver};
use proptest::prelude::*;

const SETUP: &str = "session: contextWindow=2000 reserveTokens=500 keepRecentTokens=5 maxRetries=2 baseDelayMs=1000\ntools: bash";

/// The lines a scenario is made of; lines that do not apply at that moment (no call waiting)
/// are skipped.
const LINES: &[&str] = &[
    "user: question",
    "user-steer: steer this way",
    "user-followup: and then this",
    "abort",
    "compact:",
    "tick 100",
    "tick 1000",
    "tick 5000",
    "thinking: high",
    "model: usage=100/10 text An answer.",
    "model: usage=1800/10 text A long answer.",
    r#"model: tool bash {"command": "ls"}"#,
    "model: error 429 Too many requests",
    "model: error 503 Service unavailable",
    "model: error 400 prompt is too long: 2100 tokens > 2000 maximum",
    "model: error 401 Invalid API key",
    "model~ text \"Part\"",
    "tool: ok done",
    "tool: error failed",
    "navigate: 2 summarize",
    "navigate: 3",
    r#"bash-result: {"command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false}"#,
    "set-model: thinker reasoning",
    "set-model: plain",
];

#[path = "support/properties.rs"]
mod cases;
use cases::config;

/// Runs the scenario made of `picks` and checks the invariants after every line.
fn run(picks: &[usize]) -> Result<(), TestCaseError> {
    let mut driver = Driver::default();
    for line in parse(SETUP).unwrap() {
        driver.line(&line).unwrap();
    }
    let mut unheard_run = false;
    for pick in picks {
        let line = &parse(LINES[pick % LINES.len()]).unwrap()[0];
        let was_retrying = driver.session().is_some_and(|m| m.is_retrying());
        // Pi's quirk: a manual compaction stops listening to the run it aborts, so what that
        // run still produces is not persisted.
        if LINES[pick % LINES.len()] == "compact:"
            && driver.session().is_some_and(|m| m.agent().is_streaming())
        {
            unheard_run = true;
        }
        // A line that does not apply now (no model call or tool waiting) changes nothing.
        let _ = driver.line(line);
        let Some(machine) = driver.session() else {
            continue;
        };
        // Retries are bounded by the settings.
        prop_assert!(machine.retry_attempt() <= 2);
        // An idle session has nothing in flight and no timer set.
        if !machine.is_busy() {
            prop_assert!(machine.wake_at().is_none());
            prop_assert!(!driver.model_waiting(), "a model call outlived the run");
            prop_assert!(driver.running_tools().is_empty(), "a tool outlived the run");
        }
        // When a retry is scheduled, the failed attempt leaves what the model will see.
        if machine.is_retrying() && !was_retrying {
            let last = machine.agent().messages().last();
            prop_assert!(
                !matches!(last, Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error),
                "a failed attempt would be sent again"
            );
        }
        // Every message the model can see is in the session (persisted as it ended).
        for message in machine.agent().messages() {
            if !unheard_run
                && matches!(
                    message.role(),
                    "user" | "assistant" | "toolResult" | "bashExecution"
                )
            {
                prop_assert!(
                    machine
                        .tree()
                        .entries()
                        .iter()
                        .any(|e| e.message() == Some(message)),
                    "not in the session: {message:?}"
                );
            }
        }
    }
    // The machine never saw an input that broke its contract.
    for line in driver.transcript() {
        prop_assert!(!line.contains("refused while"), "contract error: {line}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn session_invariants_hold_for_any_scenario(picks in proptest::collection::vec(0..LINES.len(), 1..60)) {
        run(&picks)?;
    }
}
