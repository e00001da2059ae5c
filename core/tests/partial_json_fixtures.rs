//! Streaming tool-call arguments parse as in pi-ai 0.73.1: every prefix of a set of JSON texts
//! against the output of the original `parseStreamingJson`
//! (fixtures/partial_json_cases.json, written by `scripts/gen-partial-json-fixtures.mjs` from the
//! installed original).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde_json::Value;

#[test]
fn every_prefix_parses_like_pi() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("fixtures/partial_json_cases.json")).unwrap();
    assert!(cases.len() > 300);
    let mut wrong = Vec::new();
    for case in &cases {
        let input = case["input"].as_str().unwrap();
        let got = pi_core::partial_json::parse_streaming_json(input);
        if !pi_core::validate::js_equal(&got, &case["output"]) {
            wrong.push(format!("{input:?}: expected {}, got {got}", case["output"]));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
