//! Path resolution against the original's `expandPath`, `resolveToCwd` and `resolveReadPath`
//! on the same inputs (`scripts/gen-path-fixtures.mjs`); for the read fallbacks the original
//! picked among real files, here the first candidate that "exists" is picked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::paths::{expand_path, read_path_candidates, resolve_to_cwd};
use serde_json::Value;

#[test]
fn paths_resolve_as_in_the_original() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/path_cases.json")).unwrap();
    let home = fixtures["home"].as_str().unwrap();
    for case in fixtures["resolved"].as_array().unwrap() {
        let (input, cwd) = (
            case["input"].as_str().unwrap(),
            case["cwd"].as_str().unwrap(),
        );
        assert_eq!(
            expand_path(input, home),
            case["expanded"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            resolve_to_cwd(input, cwd, home),
            case["resolved"].as_str().unwrap(),
            "{case}"
        );
    }
    for case in fixtures["reads"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let resolved = resolve_to_cwd(name, "/dir", home);
        let existing = case["existing"].as_str().map(|e| format!("/dir/{e}"));
        let candidates = read_path_candidates(&resolved);
        let picked = candidates
            .iter()
            .find(|c| Some(*c) == existing.as_ref())
            .unwrap_or(&candidates[0]);
        assert_eq!(
            picked,
            &format!("/dir/{}", case["picked"].as_str().unwrap()),
            "{case}"
        );
    }
}
