//! The regression corpus (`cassettes/corpus/`) through the real binary: every cassette replays
//! to the recorded event stream and session file byte for byte (their digests are in the
//! cassette's outcome line), replaying twice is identical, and each replay's events are
//! snapshotted in a readable form. A deliberate change (another system prompt) is a divergence
//! at the first model request with exit 1; a cut-off cassette exits 125. The corpus is made by
//! `scripts/record-corpus.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use std::ffi::OsString;

use pi_testkit::demo::{Scenario, Workspace};

#[path = "cassette_corpus/editions.rs"]
mod editions;
#[path = "cassette_corpus/rerecord.rs"]
mod rerecord;
#[path = "cassette_corpus/tampered.rs"]
mod tampered;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus")
}

/// The extension corpus: runs of TypeScript extensions, which replay without Node
/// (`scripts/record-extension-corpus.sh` makes it).
fn extension_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus-extensions")
}

/// The cassettes of `folder`, sorted.
fn cassettes_in(folder: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// Both corpora's cassettes: the regression corpus's, then the extension corpus's.
fn cassettes() -> Vec<PathBuf> {
    let mut files = cassettes_in(&corpus());
    files.extend(cassettes_in(&extension_corpus()));
    files
}

fn pi(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(args)
        .args(paths)
        .output()
        .unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn outcome(cassette: &Path) -> Value {
    let text = std::fs::read_to_string(cassette).unwrap();
    let last = text.lines().last().unwrap();
    let line: Value = serde_json::from_str(last).unwrap();
    assert_eq!(
        line["type"],
        "outcome",
        "{} ends with its outcome",
        cassette.display()
    );
    line
}

/// The session files a replay wrote in `dir`, by name: one per session of the run with a file
/// (a run that replaced its session wrote one for each).
fn session_files(dir: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// The events of a replay, one readable line each: what a reviewer checks in a snapshot.
fn readable(stdout: &[u8]) -> String {
    let mut out = String::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            out.push_str(&format!("(not JSON) {line}\n"));
            continue;
        };
        let kind = event["type"].as_str().unwrap_or("?");
        let text = match kind {
            "response" => format!(
                "response {} {}{}",
                event["command"].as_str().unwrap_or("?"),
                if event["success"] == true {
                    "ok"
                } else {
                    "failed: "
                },
                event["error"].as_str().unwrap_or_default()
            ),
            "message_update" => {
                let update = &event["assistantMessageEvent"];
                let delta = update["delta"]
                    .as_str()
                    .map(|d| format!(" {d:?}"))
                    .unwrap_or_default();
                format!("  {}{delta}", update["type"].as_str().unwrap_or("?"))
            }
            "message_start" | "message_end" => {
                let message = &event["message"];
                let mut text = format!("{kind} {}", message["role"].as_str().unwrap_or("?"));
                if let Some(reason) = message["stopReason"].as_str() {
                    text.push_str(&format!(" ({reason})"));
                }
                text
            }
            "tool_execution_start" | "tool_execution_end" => format!(
                "{kind} {}{}",
                event["toolName"].as_str().unwrap_or("?"),
                if event["isError"] == true {
                    " (error)"
                } else {
                    ""
                }
            ),
            "session" => "session header".to_owned(),
            other => other.to_owned(),
        };
        out.push_str(&text);
        out.push('\n');
    }
    out
}

#[test]
fn every_cassette_replays_its_run_byte_for_byte_and_twice_the_same() {
    let files = cassettes();
    assert!(
        files.len() >= 12,
        "the corpus has {} cassettes",
        files.len()
    );
    for cassette in files {
        let stem = cassette
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .replace('.', "_");
        let name = match cassette.starts_with(extension_corpus()) {
            true => format!("extensions_{stem}"),
            false => stem,
        };
        let expected = outcome(&cassette);
        let mut runs = Vec::new();
        for _ in 0..2 {
            let dir = tempfile::tempdir().unwrap();
            let out = pi(
                &["replay", "--mode", "json", "--session-dir"],
                &[dir.path(), &cassette],
            );
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            runs.push((out.stdout, session_files(dir.path())));
        }
        assert_eq!(runs[0], runs[1], "{name}: two replays differ");
        let (stdout, session) = &runs[0];
        let recorded_mode_is_json = std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .is_some_and(|h| !h.contains("\"mode\":\"text\""));
        if recorded_mode_is_json {
            assert_eq!(
                sha256(stdout),
                expected["stdout"].as_str().unwrap(),
                "{name}: the replay prints what the recorded run printed"
            );
        }
        let replaces = std::fs::read_to_string(&cassette)
            .unwrap()
            .contains(r#"{"type":"replaced""#);
        assert!(
            session.len() <= 1 || replaces,
            "{name}: one session file, {} written",
            session.len()
        );
        // The run's last session's file is the one the outcome holds.
        match expected["session"].as_str() {
            Some(digest) => assert!(
                session.iter().any(|bytes| sha256(bytes) == digest),
                "{name}: the session file differs"
            ),
            None => assert!(
                session.len() <= usize::from(replaces),
                "{name}: {session:?}"
            ),
        }
        insta::assert_snapshot!(format!("corpus_{name}"), readable(stdout));
    }
}

#[test]
fn the_whole_corpus_checks_with_one_job_and_with_several() {
    for jobs in ["1", "2"] {
        let out = pi(
            &["replay", "--check", "--jobs", jobs],
            &[&corpus(), &extension_corpus()],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
        assert!(stdout.contains("0 diverged, 0 unusable"), "{stdout}");
        // A check says its verdicts only: what the replayed runs said on stderr (an
        // extension's error in print mode) is theirs, not the check's.
        assert_eq!(stderr, "", "{stdout}");
    }
}

#[test]
fn another_system_prompt_diverges_at_the_first_model_request() {
    let dir = tempfile::tempdir().unwrap();
    let original = corpus().join("one_tool.jsonl");
    let text = std::fs::read_to_string(&original).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    let prompt = header["config"]["systemSections"]["preamble"]
        .as_str()
        .unwrap()
        .to_owned();
    let changed = prompt.replacen("a coding assistant", "a careless coding assistant", 1);
    assert_ne!(prompt, changed);
    header["config"]["systemSections"]["preamble"] = Value::String(changed);
    let cassette = dir.path().join("one_tool.jsonl");
    std::fs::write(&cassette, format!("{header}\n{rest}")).unwrap();

    let out = pi(&["replay", "--check"], &[&cassette]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Step 1 is the prompt; step 2 the first model call, whose request carries the prompt.
    assert!(stderr.contains("one_tool.jsonl:"), "{stderr}");
    assert!(
        stderr.contains("diverged at step 2: the model request differs"),
        "{stderr}"
    );
    assert!(
        stderr.contains("-        \"content\": \"You are a coding assistant running inside pi"),
        "{stderr}"
    );
    assert!(
        stderr.contains("+        \"content\": \"You are a careless coding assistant"),
        "{stderr}"
    );
    assert!(
        stderr.contains("to record it again: pi --record"),
        "{stderr}"
    );
}

#[test]
fn a_cut_off_cassette_is_unusable_and_says_where_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(corpus().join("one_tool.jsonl")).unwrap();
    let kept: Vec<&str> = text.lines().take(12).collect();
    let cassette = dir.path().join("cut.jsonl");
    std::fs::write(&cassette, kept.join("\n") + "\n").unwrap();
    let out = pi(&["replay", "--check"], &[&cassette]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("cut.jsonl:12: the recording ends early"),
        "{stderr}"
    );
}

#[test]
fn a_message_that_is_the_word_replay_is_still_a_message() {
    // `pi replay` is the replay command; `pi -- replay` sends the word to the model, as Pi does.
    let scenario = json!({"script": [{"text": ["Sent."]}]});
    let scenario = Scenario::from_value(&scenario, Path::new("test scenario")).unwrap();
    let ws = Workspace::prepare(scenario, None).unwrap();
    let args: Vec<OsString> = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--",
        "replay",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let out = ws
        .command(env!("CARGO_BIN_EXE_pi").as_ref(), &args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Sent.\n");
    let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
    let first: Value = serde_json::from_str(requests.lines().next().unwrap()).unwrap();
    let messages = first["body"]["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "replay");
}

#[test]
fn tools_run_live_in_a_scratch_copy_and_a_changed_file_diverges_at_the_next_request() {
    let same = tempfile::tempdir().unwrap();
    std::fs::write(same.path().join("hello.txt"), "hi there\nsecond line\n").unwrap();
    let cassette = corpus().join("one_tool.jsonl");
    let out = pi(
        &["replay", "--check", "--tools", "live", "--workspace"],
        &[same.path(), &cassette],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let changed = tempfile::tempdir().unwrap();
    std::fs::write(changed.path().join("hello.txt"), "something else\n").unwrap();
    let out = pi(
        &["replay", "--check", "--tools", "live", "--workspace"],
        &[changed.path(), &cassette],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the model request differs"), "{stderr}");
    assert!(
        stderr.contains("+        \"content\": \"something else\\n"),
        "{stderr}"
    );
    // The workspace itself is untouched: the tools ran in a copy.
    let left = std::fs::read_dir(changed.path()).unwrap().count();
    assert_eq!(left, 1);
}
