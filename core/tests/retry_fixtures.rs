//! Which failures are retried, against Pi 1.5.2's decision and overflow check applied to the
//! same messages (`scripts/gen-retry-fixtures.mjs`); the backoff doubles from the base delay,
//! up to 60 s.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent_session::retry::{delay_ms, is_retryable, RetrySettings};
use pi_core::message::AssistantMessage;
use serde_json::{json, Value};

#[test]
fn retry_decisions_match_the_original() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/retry_cases.json")).unwrap();
    for case in fixtures["cases"].as_array().unwrap() {
        let (input, output) = match case.get("usage") {
            Some(u) => (u[0].as_u64().unwrap(), u[1].as_u64().unwrap()),
            None => (10, 0),
        };
        let mut message = json!({
            "role": "assistant", "content": [], "api": "a", "provider": "p", "model": "m",
            "usage": {"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
                "totalTokens": input + output,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": case["stopReason"], "timestamp": 0,
        });
        if case["errorMessage"] != "" {
            message["errorMessage"] = case["errorMessage"].clone();
        }
        let message: AssistantMessage = serde_json::from_value(message).unwrap();
        let window = case["contextWindow"].as_u64().unwrap();
        assert_eq!(
            Value::Bool(is_retryable(&message, window)),
            case["retryable"],
            "{case}"
        );
    }
}

#[test]
fn backoff_doubles_from_the_base_delay_up_to_a_minute() {
    let settings = RetrySettings::default();
    let delays: Vec<u64> = (1..=6).map(|n| delay_ms(&settings, n)).collect();
    assert_eq!(delays, [2000, 4000, 8000, 16000, 32000, 60000]);
    assert_eq!(
        delay_ms(&settings, 200),
        60_000,
        "no overflow on absurd attempts"
    );
}
