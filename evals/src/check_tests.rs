//! What each kind of failed check says it found: enough to tell why without rerunning the
//! trial (the text searched, the folder that lacks the file, the file that should not be
//! there, the calls that should not have been made, the command's exit and output).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::json;

use super::*;

fn check(kind: CheckKind) -> Check {
    Check {
        kind,
        weight: 1.0,
        not: false,
    }
}

fn outcome(final_text: &str) -> AgentOutcome {
    AgentOutcome {
        final_text: final_text.to_owned(),
        messages: vec![json!({"role": "assistant", "content": [
            {"type": "toolCall", "id": "1", "name": "write", "arguments": {"path": "out/a.txt"}},
            {"type": "toolCall", "id": "2", "name": "write", "arguments": {"path": "b.txt"}},
        ]})],
        ..AgentOutcome::default()
    }
}

fn no_command(_: &str, _: Duration) -> Result<CommandResult, String> {
    Err("no commands here".into())
}

fn no_judge(_: &str, _: &str) -> Result<String, String> {
    Err("no judge here".into())
}

/// The check's result on `outcome` in `workspace`.
fn found(kind: CheckKind, outcome: &AgentOutcome, workspace: &Path) -> CheckResult {
    check(kind).evaluate(outcome, workspace, &no_command, &no_judge)
}

#[test]
fn a_missing_file_is_told_by_what_its_folder_holds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("out/sub")).unwrap();
    std::fs::write(dir.path().join("out/a.txt"), "x").unwrap();
    let result = found(
        CheckKind::FileExists {
            path: "out/b.txt".into(),
        },
        &outcome(""),
        dir.path(),
    );
    assert!(!result.passed);
    assert_eq!(
        result.detail.as_deref(),
        Some("no such file; `out` holds: a.txt, sub/")
    );
    let result = found(
        CheckKind::FileExists {
            path: "gone/b.txt".into(),
        },
        &outcome(""),
        dir.path(),
    );
    assert_eq!(
        result.detail.as_deref(),
        Some("no such file, and no folder `gone`")
    );
    let result = found(
        CheckKind::FileExists {
            path: "top.txt".into(),
        },
        &outcome(""),
        dir.path(),
    );
    assert_eq!(
        result.detail.as_deref(),
        Some("no such file; the workspace holds: out/")
    );
}

#[test]
fn a_file_that_should_be_absent_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("left.txt"), "still here\n").unwrap();
    let result = found(
        CheckKind::FileAbsent {
            path: "left.txt".into(),
        },
        &outcome(""),
        dir.path(),
    );
    assert_eq!(
        result.detail.as_deref(),
        Some(r#"the file exists (11 bytes): "still here\n""#)
    );
}

#[test]
fn a_text_not_found_shows_both_ends_of_a_long_text_and_a_case_miss() {
    let long = format!("{}The answer is 42.", "words ".repeat(100));
    let result = found(
        CheckKind::TextContains {
            text: "43".into(),
            case_sensitive: true,
        },
        &outcome(&long),
        Path::new("/nonexistent"),
    );
    let detail = result.detail.unwrap();
    assert!(detail.starts_with("final text: \"words words"), "{detail}");
    assert!(
        detail.ends_with("The answer is 42.\" (617 characters)"),
        "{detail}"
    );
    let result = found(
        CheckKind::TextContains {
            text: "Hello".into(),
            case_sensitive: true,
        },
        &outcome("hello there"),
        Path::new("/nonexistent"),
    );
    assert_eq!(
        result.detail.as_deref(),
        Some("final text: \"hello there\" (it is there in another case)")
    );
}

#[test]
fn calls_that_should_not_have_been_made_are_listed() {
    let result = found(
        CheckKind::ToolNotCalled {
            tool: "write".into(),
        },
        &outcome(""),
        Path::new("/nonexistent"),
    );
    assert_eq!(
        result.detail.as_deref(),
        Some(r#"`write` called 2 times, with: "{\"path\":\"out/a.txt\"}"; "{\"path\":\"b.txt\"}""#)
    );
}

#[test]
fn a_passed_check_has_no_detail() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.txt"), "x").unwrap();
    let result = found(
        CheckKind::FileExists {
            path: "here.txt".into(),
        },
        &outcome(""),
        dir.path(),
    );
    assert!(result.passed);
    assert_eq!(result.detail, None);
}
