//! Tool-output truncation against the original's own functions on the same texts and limits
//! (`scripts/gen-truncate-fixtures.mjs`): head and tail cuts by lines and by bytes, a first line
//! over the budget, a partial last line cut inside multi-byte characters, CRLF and empty input;
//! grep line cuts and human sizes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::truncate::{format_size, truncate_head, truncate_line, truncate_tail, Limits};
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/truncate_cases.json")).unwrap()
}

#[test]
fn truncations_match_the_original() {
    let fixtures = fixtures();
    let mut wrong = Vec::new();
    for case in fixtures["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let text = fixtures["texts"][name].as_str().unwrap();
        let mut limits = Limits::default();
        if let Some(n) = case["limits"]["maxLines"].as_u64() {
            limits.max_lines = n as usize;
        }
        if let Some(n) = case["limits"]["maxBytes"].as_u64() {
            limits.max_bytes = n as usize;
        }
        let ours = match case["fn"].as_str().unwrap() {
            "head" => truncate_head(text, limits),
            _ => truncate_tail(text, limits),
        };
        let units: Vec<u16> = text.encode_utf16().collect();
        let (start, end) = (
            case["range"][0].as_u64().unwrap() as usize,
            case["range"][1].as_u64().unwrap() as usize,
        );
        let expected_content = String::from_utf16_lossy(&units[start..end]);
        let mut ours_json = serde_json::to_value(&ours).unwrap();
        ours_json.as_object_mut().unwrap().remove("content");
        if ours.content != expected_content || ours_json != case["result"] {
            wrong.push(format!(
                "{} {name} {}: ours {ours_json} ({} bytes of content), theirs {} ({} bytes)",
                case["fn"],
                case["limits"],
                ours.content.len(),
                case["result"],
                expected_content.len()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn grep_lines_and_sizes_match_the_original() {
    let fixtures = fixtures();
    for case in fixtures["lines"].as_array().unwrap() {
        let (text, cut) = truncate_line(
            case["line"].as_str().unwrap(),
            case["max"].as_u64().unwrap() as usize,
        );
        assert_eq!(cut, case["result"]["wasTruncated"], "{case}");
        let theirs = case["result"]["text"].as_str().unwrap();
        assert_eq!(text, theirs, "{case}");
    }
    for case in fixtures["sizes"].as_array().unwrap() {
        assert_eq!(
            format_size(case["bytes"].as_u64().unwrap()),
            case["text"].as_str().unwrap(),
            "{case}"
        );
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The head is a prefix and the tail a suffix of the text (a cut tail of the text
        /// without its final newline), within both budgets, and "untouched" means exactly that.
        #[test]
        fn cuts_stay_within_budget(
            text in "(?s)[a-zé😀\\n\\r]{0,300}",
            max_lines in 1usize..20,
            max_bytes in 1usize..200,
        ) {
            let limits = Limits { max_lines, max_bytes };
            for (cut, is_head) in [(truncate_head(&text, limits), true), (truncate_tail(&text, limits), false)] {
                if is_head {
                    prop_assert!(text.starts_with(&cut.content));
                } else {
                    let end = if cut.truncated { text.strip_suffix('\n').unwrap_or(&text) } else { &text };
                    prop_assert!(end.ends_with(&cut.content));
                }
                prop_assert!(cut.output_lines <= max_lines);
                prop_assert!(cut.output_bytes <= max_bytes || !cut.truncated);
                prop_assert_eq!(cut.output_bytes, cut.content.len());
                prop_assert_eq!(cut.truncated, cut.content != text || cut.truncated_by.is_some());
                if !cut.truncated {
                    prop_assert_eq!(&cut.content, &text);
                }
            }
        }
    }
}
