//! Streaming tool-call arguments parse as in Pi 1.5.2's pi-ai: every prefix of a set of JSON texts
//! against the output of the original `parseStreamingJson`, and, taken as a call's complete
//! arguments, of `parseToolCallArguments` (fixtures/partial_json_cases.json, written by
//! `scripts/gen-partial-json-fixtures.mjs` from the installed original).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use serde_json::Value;

/// The recorded texts with what the original made of them.
fn cases() -> Vec<Value> {
    serde_json::from_str(include_str!("fixtures/partial_json_cases.json")).unwrap()
}

/// That none of `total` cases came out `wrong`, else which did.
fn assert_none_wrong(wrong: &[String], total: usize) {
    assert!(
        wrong.is_empty(),
        "{} of {total} differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn every_prefix_parses_like_pi() {
    let cases = cases();
    assert!(cases.len() > 300);
    let mut wrong = Vec::new();
    for case in &cases {
        let input = case["input"].as_str().unwrap();
        let got = pi_core::partial_json::parse_streaming_json(input);
        if !pi_core::validate::js_equal(&got, &case["output"]) {
            wrong.push(format!("{input:?}: expected {}, got {got}", case["output"]));
        }
    }
    assert_none_wrong(&wrong, cases.len());
}

/// A call's complete arguments: the object, or `{}` and the `argumentsError` Pi 1.5.2 keeps on the
/// call, with Node 22's `JSON.parse` message (its line and column too) and the text received.
#[test]
fn complete_arguments_parse_like_pi_with_nodes_errors() {
    let cases = cases();
    let mut wrong = Vec::new();
    let mut errors = 0;
    for case in &cases {
        let input = case["input"].as_str().unwrap();
        let expected = &case["final"];
        let (arguments, error) = pi_core::partial_json::parse_tool_call_arguments(input);
        let expected_error = expected.get("argumentsError").and_then(Value::as_str);
        errors += usize::from(expected_error.is_some());
        if !pi_core::validate::js_equal(&arguments, &expected["arguments"])
            || error.as_deref() != expected_error
        {
            wrong.push(format!(
                "{input:?}: expected {expected}, got {arguments} {error:?}"
            ));
        }
    }
    assert!(errors > 100, "the fixture has {errors} unparsable texts");
    assert_none_wrong(&wrong, cases.len());
}

/// A character other than `:` after a key: JavaScript steps over one UTF-16 unit there, which
/// for a character beyond the Basic Multilingual Plane lands inside it, where nothing parses.
/// This once sliced a string inside a character and panicked. Outputs of the original's
/// `parseStreamingJson`.
#[test]
fn a_key_followed_by_a_multibyte_character_parses_like_pi() {
    let cases = [
        (r#"{"pa:"😀\t\t\n✓","limit":10}"#, "{}"),
        (r#"{"a"é1}"#, r#"{"a":1}"#),
        (r#"{"a"é"b"}"#, r#"{"a":"b"}"#),
        (r#"{"x":{"a"😀"b":1}"#, r#"{"x":{}}"#),
        (r#"{"a"😀"#, "{}"),
        (r#"[{"k"😀1}, 2]"#, "[{}]"),
        (r#"{"a"😀1,"b":2}"#, "{}"),
        (r#"{"a"✓1,"b":2}"#, r#"{"a":1,"b":2}"#),
        (r#"{"a":1,"b"😀:2, "c":3}"#, r#"{"a":1}"#),
    ];
    for (input, expected) in cases {
        let expected: Value = serde_json::from_str(expected).unwrap();
        assert_eq!(
            pi_core::partial_json::parse_streaming_json(input),
            expected,
            "{input}"
        );
    }
}

proptest::proptest! {
    /// Arguments come from the network: any text, cut anywhere, parses to something.
    #[test]
    fn any_text_parses_without_panicking(text in "[{}\\[\\]\":,a1 eé✓😀\\\\-]{0,24}") {
        for (at, _) in text.char_indices() {
            pi_core::partial_json::parse_streaming_json(&text[..at]);
        }
        pi_core::partial_json::parse_streaming_json(&text);
    }
}
