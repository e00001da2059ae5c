//! Tool-argument validation against cases recorded from Pi 1.5.2's `validateToolArguments` (pi-ai
//! over pi-schema's `getValidator`; fixtures/validation_cases.json: schema, arguments, and the
//! coerced result or the exact error; written by `scripts/gen-validation-fixtures.mjs` from the
//! installed original).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde_json::Value;

#[test]
fn validation_matches_pi_case_by_case() {
    let text = include_str!("fixtures/validation_cases.json");
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
    assert!(cases.len() > 100);
    let mut failed = Vec::new();
    for case in &cases {
        let name = case["case"].as_str().unwrap();
        let got =
            pi_core::validate::validate_tool_arguments("test_tool", &case["schema"], &case["args"]);
        match (case.get("ok"), case.get("error"), got) {
            (Some(expected), _, Ok(value)) => {
                if !pi_core::validate::js_equal(expected, &value) {
                    failed.push(format!("{name}: expected {expected}, got {value}"));
                } else if pi_core::json::to_string(expected).unwrap()
                    != pi_core::json::to_string(&value).unwrap()
                {
                    failed.push(format!("{name}: same value, different JSON"));
                }
            }
            (_, Some(Value::String(expected)), Err(message)) => {
                if &message != expected {
                    failed.push(format!("{name}: expected {expected:?}, got {message:?}"));
                }
            }
            (_, _, got) => failed.push(format!("{name}: expected {case}, got {got:?}")),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases differ:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}
