//! A cassette of a run that used a custom tool (one that writes a file), through the real
//! binary, which registers no custom tool: `pi replay` answers the call from the cassette and
//! writes nothing on the host, also under `--config current` (which keeps the recorded tools'
//! declarations); `pi replay --tools live` refuses before running anything, naming the tool it
//! does not have.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use pi_cassettes::test_support::{mock_key, mock_model, prompt, record, WriteNote, NOTE};
use pi_effects::agent_session::SessionOptions;
use pi_effects::custom_tool::CustomTool;
use pi_testkit::MockLlm;
use serde_json::json;

/// Records a run in `workspace` whose model calls `write_note` once, then answers; the
/// cassette's path and the run's events, one JSON line each.
async fn record_note(dir: &Path, workspace: &Path) -> (PathBuf, Vec<String>) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "write_note", "arguments": "{\"text\":\"hello note\"}"}]},
        {"text": ["Noted."]},
    ]));
    let mut options = SessionOptions::new(workspace, mock_model(&mock), mock_key());
    options.agent_dir = dir.join("agent");
    options.tools = vec!["read".into()];
    options.custom_tools.register(Arc::new(WriteNote::new()));
    let declared = options.run_config(0).unwrap().custom_tools;
    assert_eq!(declared, vec![WriteNote::new().definition().clone()]);
    // The command line that `--config current` reads again: the binary registers no custom
    // tool, so the recorded ones are the only ones it can know of.
    let command = [
        "--mode",
        "json",
        "--no-session",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--thinking",
        "off",
        "--tools",
        "read",
        "-p",
        "Take a note.",
    ]
    .map(str::to_owned)
    .to_vec();
    let cassette = dir.join("custom.jsonl");
    let events = record(&cassette, options, prompt("Take a note."), Some(command)).await;
    (cassette, events)
}

fn pi_replay(args: &[&str], cassette: &Path) -> std::process::Output {
    let home = cassette.with_file_name("home");
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", cassette.with_file_name("agent"))
        .arg("replay")
        .args(args)
        .arg(cassette)
        .output()
        .unwrap()
}

/// `pi replay` with `args` on `cassette` succeeds, prints the recorded result of the
/// `write_note` call (one of the `recorded` events) and writes no note in `workspace`.
fn replays_the_recorded_result(
    args: &[&str],
    cassette: &Path,
    recorded: &[String],
    workspace: &Path,
) {
    let out = pi_replay(args, cassette);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = recorded
        .iter()
        .find(|e| e.contains("\"type\":\"tool_execution_end\""))
        .unwrap();
    assert!(stdout.lines().any(|line| line == end), "{stdout}");
    assert!(!workspace.join(NOTE).exists(), "the replay ran the tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_replays_a_custom_tools_call_from_the_cassette_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let (cassette, recorded) = record_note(dir.path(), &workspace).await;
    std::fs::remove_file(workspace.join(NOTE)).unwrap();

    replays_the_recorded_result(&[], &cassette, &recorded, &workspace);
    // The library's recording holds what `pi --mode json` printed: the check reproduces it.
    let check = pi_replay(&["--check"], &cassette);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = pi_replay(
        &["--tools", "live", "--workspace", scratch.to_str().unwrap()],
        &cassette,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("custom tools this program does not register (write_note)"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!scratch.join(NOTE).exists() && !workspace.join(NOTE).exists());
}

/// `--config current` rebuilds the run's configuration from the recorded command line; the
/// binary has no custom tool of its own, so the recorded tools' declarations are kept: the
/// request declares them as the run did and the replay does not diverge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_under_todays_configuration_keeps_the_recorded_custom_tools() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let (cassette, recorded) = record_note(dir.path(), &workspace).await;
    std::fs::remove_file(workspace.join(NOTE)).unwrap();

    replays_the_recorded_result(
        &[
            "--config",
            "current",
            "--workspace",
            workspace.to_str().unwrap(),
        ],
        &cassette,
        &recorded,
        &workspace,
    );

    // Declared is not registered: running the tools again is still refused.
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = pi_replay(
        &[
            "--config",
            "current",
            "--tools",
            "live",
            "--workspace",
            scratch.to_str().unwrap(),
        ],
        &cassette,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(write_note)"), "{stderr}");
    assert!(!scratch.join(NOTE).exists());
}

/// An edit of a cassette header's `customTools`.
type Edit = dyn Fn(&mut serde_json::Value);

/// The attack: the header's declaration of the custom tool edited (its description, its
/// parameters, the tool removed) so the cassette says the model was offered another tool than
/// it was: `pi replay` must fail every time (the request the replay builds is not the
/// recorded one, or the recorded call names a tool the run does not have), and the untouched
/// cassette replays (a recording made through the library printed nothing, so `pi replay`,
/// which compares every request and result, is the check).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_whose_custom_tool_declaration_was_edited_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let (cassette, _) = record_note(dir.path(), &workspace).await;
    let text = std::fs::read_to_string(&cassette).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let check = |name: &str, edit: &Edit| {
        let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
        edit(&mut header["config"]["customTools"]);
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
        pi_replay(&[], &path)
    };
    let untouched = check("untouched", &|_| {});
    assert!(
        untouched.status.success(),
        "{}",
        String::from_utf8_lossy(&untouched.stderr)
    );
    let edits: [(&str, &Edit); 3] = [
        ("described", &|tools| {
            tools[0]["description"] = json!("Writes a note, and more.");
        }),
        ("parameters", &|tools| {
            tools[0]["parameters"] = json!({"type": "object", "properties": {}});
        }),
        ("removed", &|tools| {
            *tools = json!([]);
        }),
    ];
    for (name, edit) in edits {
        let out = check(name, edit);
        assert!(!out.status.success(), "{name}: the edited cassette checked");
    }
}
