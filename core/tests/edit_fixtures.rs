//! The edit tool's text handling against the original's own functions on the same inputs
//! (`scripts/gen-edit-fixtures.mjs`): fuzzy normalisation (NFKC, trailing whitespace, quotes,
//! dashes, spaces), line endings, and multi-edit application with every error text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::edit::{
    apply_edits, detect_line_ending, normalize_for_fuzzy_match, normalize_to_lf, Replacement,
};
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/edit_cases.json")).unwrap()
}

#[test]
fn normalisation_matches_the_original() {
    for case in fixtures()["normalize"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(
            normalize_for_fuzzy_match(text),
            case["normalized"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            detect_line_ending(text),
            case["ending"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            normalize_to_lf(text),
            case["lf"].as_str().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn edits_apply_as_in_the_original() {
    for case in fixtures()["applied"].as_array().unwrap() {
        let edits: Vec<Replacement> = case["edits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| Replacement {
                old_text: e["oldText"].as_str().unwrap().into(),
                new_text: e["newText"].as_str().unwrap().into(),
            })
            .collect();
        let ours = apply_edits(case["content"].as_str().unwrap(), &edits, "src/a.ts");
        match (ours, case.get("error")) {
            (Ok((base, result)), None) => {
                assert_eq!(base, case["base"].as_str().unwrap(), "{}", case["name"]);
                assert_eq!(result, case["result"].as_str().unwrap(), "{}", case["name"]);
            }
            (Err(error), Some(text)) => {
                assert_eq!(
                    error.to_string(),
                    text.as_str().unwrap(),
                    "{}",
                    case["name"]
                )
            }
            (ours, theirs) => panic!("{}: ours {ours:?}, theirs {theirs:?}", case["name"]),
        }
    }
}
