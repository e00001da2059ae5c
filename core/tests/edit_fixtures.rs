//! The edit tool's text handling against the original's own functions on the same inputs
//! (`scripts/gen-edit-fixtures.mjs`): fuzzy normalisation (NFKC, trailing whitespace, quotes,
//! dashes, spaces), line endings, multi-edit application with every error text, and the text
//! written back (untouched lines keep their bytes and line endings).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::edit::{
    apply_edits, apply_to_original, normalize_for_fuzzy_match, normalize_to_lf, Replacement,
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
        let content = case["content"].as_str().unwrap();
        let lf = normalize_to_lf(content);
        let ours = apply_edits(&lf, &edits, "src/a.ts");
        match (ours, case.get("error")) {
            (Ok(applied), None) => {
                let name = &case["name"];
                assert_eq!(applied.base, case["base"].as_str().unwrap(), "{name}");
                assert_eq!(applied.result, case["result"].as_str().unwrap(), "{name}");
                let written = if content == lf {
                    applied.result.clone()
                } else {
                    apply_to_original(content, &applied.replacements)
                };
                assert_eq!(written, case["written"].as_str().unwrap(), "{name}");
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
