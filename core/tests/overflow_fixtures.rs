//! Context-overflow detection against the original's verdicts on the same messages
//! (`scripts/gen-overflow-fixtures.mjs`): every provider phrasing, the exclusions, and the
//! silent-overflow and truncation signals from usage.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::AssistantMessage;
use pi_core::overflow::is_context_overflow;
use serde_json::{json, Value};

#[test]
fn verdicts_match_the_original() {
    let text = include_str!("fixtures/overflow_cases.json");
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
    let mut wrong = Vec::new();
    for case in &cases {
        let mut message = json!({
            "role": "assistant", "content": [], "api": "openai-completions",
            "provider": case.get("provider").unwrap_or(&json!("p")),
            "model": "m", "usage": case["usage"], "stopReason": case["stopReason"], "timestamp": 0,
        });
        if let Some(error) = case.get("errorMessage") {
            message["errorMessage"] = error.clone();
        }
        let message: AssistantMessage = serde_json::from_value(message).unwrap();
        let window = case.get("contextWindow").and_then(Value::as_u64);
        if Value::Bool(is_context_overflow(&message, window)) != case["overflow"] {
            wrong.push(case.to_string());
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
