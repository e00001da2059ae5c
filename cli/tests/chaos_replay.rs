//! `pi replay --chaos` through the real binary: the corpus keeps every invariant under seeded
//! perturbations (exit 0, a report on stdout), and a cassette whose session was broken the
//! way Pi's compaction bug broke sessions (a tool result without its call) is caught, shrunk
//! and reported with the seed and the command that reproduces it (exit 1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus")
}

fn pi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_corpus_keeps_the_invariants_under_chaos() {
    let corpus = corpus();
    let output = pi(&[
        "replay",
        "--chaos",
        "20",
        "--seed",
        "1",
        corpus.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let files: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    let cassettes = files.len();
    // Each session of a run that replaced its session is perturbed on its own.
    let sessions: usize = files
        .iter()
        .map(|text| 1 + text.matches(r#"{"type":"replaced""#).count())
        .sum();
    assert_eq!(
        stdout.matches("\nok ").count() + usize::from(stdout.starts_with("ok ")),
        cassettes,
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{cassettes} cassettes, {} runs (20 a session, seed 1)",
            sessions * 20
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(": 0 failed, 0 diverged, 0 unusable"),
        "{stdout}"
    );
}

/// `resumed_session.jsonl` resuming a session whose last entry is a tool result whose call
/// is gone.
fn orphaned_result_cassette(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(corpus().join("resumed_session.jsonl")).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(head).unwrap();
    let content = header["session"]["content"].as_str().unwrap().to_owned();
    let orphan = r#"{"type":"message","id":"0e0e0e0e","parentId":"29df4caa","timestamp":"2026-11-24T00:14:34.636Z","message":{"role":"toolResult","toolCallId":"call_gone","toolName":"read","content":[{"type":"text","text":"stale"}],"isError":false,"timestamp":1795479274636}}"#;
    header["session"]["content"] = Value::String(format!("{content}{orphan}\n"));
    let path = dir.join("orphaned_result.jsonl");
    std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
    path
}

#[test]
fn an_orphaned_tool_result_is_caught_shrunk_and_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = orphaned_result_cassette(dir.path());
    let cassette = cassette.to_str().unwrap();
    let output = pi(&["replay", "--chaos", "3", "--seed", "7", cassette]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAILED    "), "{stdout}");
    assert!(stdout.contains("(seed 7)"), "{stdout}");
    assert!(
        stdout.contains("tool results paired in requests"),
        "{stdout}"
    );
    assert!(stdout.contains("follows no call of that id"), "{stdout}");
    // Every plan shrinks to none: the session itself is broken.
    let command = format!("reproduce: pi replay --chaos 1 --plan 'none' {cassette}");
    assert!(stdout.contains(&command), "{stdout}");
    // The printed command reproduces it.
    let again = pi(&["replay", "--chaos", "1", "--plan", "none", cassette]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("follows no call of that id"));
    // A plan that does not parse is refused with exit 2.
    let bad = pi(&["replay", "--chaos", "1", "--plan", "split:x", cassette]);
    assert_eq!(bad.status.code(), Some(2));
}
