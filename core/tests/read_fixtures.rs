//! The read tool's text results against the original tool reading the same files with the same
//! arguments (`scripts/gen-read-fixtures.mjs`): windows, continuation notices, line and byte
//! truncation, a first line over the budget, offsets past the end. Every text and truncated
//! content is compared whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::read::read_text;
use serde_json::Value;

#[test]
fn reads_match_the_original() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/read_cases.json")).unwrap();
    for case in fixtures["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let content = fixtures["files"][file].as_str().unwrap();
        let args = &case["args"];
        let ours = read_text(
            content,
            file,
            args["offset"].as_i64(),
            args["limit"].as_i64(),
        );
        let label = format!("{file} {args}");
        match (ours, case.get("error")) {
            (Err(error), Some(theirs)) => {
                assert_eq!(error.to_string(), theirs.as_str().unwrap(), "{label}")
            }
            (Ok(read), None) => {
                let expected = case["output"]["text"].as_str().unwrap();
                assert_eq!(read.text, expected, "{label}");
                match (&read.truncation, case["details"].get("truncation")) {
                    (None, None) => {}
                    (Some(ours), Some(theirs)) => {
                        let mut ours_json = serde_json::to_value(ours).unwrap();
                        let content = ours_json
                            .as_object_mut()
                            .unwrap()
                            .remove("content")
                            .unwrap();
                        assert_eq!(&ours_json, theirs, "{label}");
                        // The content, whole: stored where it is not the start of the text.
                        let content_theirs = match case["details"].get("content") {
                            Some(content) => content.as_str().unwrap().to_owned(),
                            None => {
                                let units: Vec<u16> = expected.encode_utf16().collect();
                                let length = case["details"]["contentLength"].as_u64().unwrap();
                                String::from_utf16(&units[..length as usize]).unwrap()
                            }
                        };
                        assert_eq!(content.as_str().unwrap(), content_theirs, "{label}");
                    }
                    (ours, theirs) => panic!("{label}: details {ours:?} vs {theirs:?}"),
                }
            }
            (ours, theirs) => panic!("{label}: ours {ours:?}, theirs {theirs:?}"),
        }
    }
}

/// Arguments come from the model: extreme numbers are answered, not a crash.
#[test]
fn extreme_offsets_and_limits_do_not_overflow() {
    let text = "a\nb\nc";
    assert_eq!(
        read_text(text, "f", Some(i64::MIN), Some(i64::MAX))
            .unwrap()
            .text,
        text
    );
    let negative = read_text(text, "f", Some(2), Some(i64::MIN)).unwrap().text;
    assert!(negative.starts_with("\n\n["), "{negative}");
    assert!(read_text(text, "f", Some(i64::MAX), None).is_err());
}
