//! The edit tool's diff against the original's own `generateDiffString` and the `diff`
//! package's `diffLines` on the same pairs of texts (`scripts/gen-diff-fixtures.mjs`):
//! hand-picked pairs and a seeded random set full of repeated lines, where only jsdiff's exact
//! tie-breaking gives the same runs. Also the unified patch Pi 1.5.2's edit details carry
//! (jsdiff's `structuredPatch` written by `formatPatch` with file headers only).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::diff::{
    diff_lines, generate_diff_string, unified_patch, DEFAULT_CONTEXT_LINES,
};
use serde_json::{json, Value};

fn cases() -> Vec<Value> {
    serde_json::from_str(include_str!("fixtures/diff_cases.json")).unwrap()
}

#[test]
fn line_runs_match_diff_lines() {
    let cases = cases();
    assert!(cases.len() > 400, "{}", cases.len());
    for case in &cases {
        let (old, new) = (case["old"].as_str().unwrap(), case["new"].as_str().unwrap());
        let ours: Vec<Value> = diff_lines(old, new)
            .into_iter()
            .map(|c| json!({"value": c.value, "count": c.count, "added": c.added, "removed": c.removed}))
            .collect();
        assert_eq!(Value::from(ours), case["parts"], "{}", case["name"]);
    }
}

#[test]
fn diff_strings_match_generate_diff_string() {
    for case in &cases() {
        let (old, new) = (case["old"].as_str().unwrap(), case["new"].as_str().unwrap());
        let ours = generate_diff_string(old, new, DEFAULT_CONTEXT_LINES);
        assert_eq!(
            ours.diff,
            case["diff"].as_str().unwrap(),
            "{}",
            case["name"]
        );
        assert_eq!(
            ours.first_changed_line.map(|n| n as u64),
            case["firstChangedLine"].as_u64(),
            "{}",
            case["name"]
        );
    }
}

#[test]
fn patches_match_structured_patch() {
    for case in &cases() {
        let (old, new) = (case["old"].as_str().unwrap(), case["new"].as_str().unwrap());
        let ours = unified_patch("f.txt", old, new, DEFAULT_CONTEXT_LINES);
        assert_eq!(ours, case["patch"].as_str().unwrap(), "{}", case["name"]);
    }
}
