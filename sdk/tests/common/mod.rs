//! What this crate's test suites share: the kit's mock model, a session builder on it, and one
//! prompt run to the end with the events it published.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use pi_cassettes::test_support::mock_model;
use pi_sdk::{Event, SessionBuilder, ThinkingLevel};
use pi_testkit::MockLlm;
use serde_json::Value;

/// A session in `workspace` (its agent folder inside) on [`mock_model`], with a key that looks
/// like a real one (so a test can look for it where it must not be) and thinking off.
pub fn builder(mock: &MockLlm, workspace: &Path) -> SessionBuilder {
    SessionBuilder::new(workspace)
        .agent_dir(workspace.join(".agent"))
        .model(mock_model(mock))
        .api_key("sk-secret-test-key-0123456789")
        .thinking_level(ThinkingLevel::Off)
}

/// Everything already published to `events`, as JSON.
pub fn drain(events: &mut pi_sdk::broadcast::Receiver<Event>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(serde_json::to_value(&event).unwrap());
    }
    out
}

/// Builds the session `builder` sets up, runs `text` through it and finishes it (a recording is
/// written then); the events it published.
pub async fn prompt_once(builder: SessionBuilder, text: &str) -> Vec<Value> {
    let session = builder.build().unwrap();
    let mut events = session.subscribe();
    session.prompt(text).await.unwrap();
    session.finish().await.unwrap();
    drain(&mut events)
}

/// `pi replay --check cassette`: its exit code and what it said (stdout, then stderr).
pub fn pi_check(cassette: &Path) -> (Option<i32>, String) {
    pi_check_with(cassette, &[])
}

/// [`pi_check`] with `envs` set (no Node on `PATH`, a home of its own).
pub fn pi_check_with(cassette: &Path, envs: &[(&str, &Path)]) -> (Option<i32>, String) {
    let out = std::process::Command::new(pi_testkit::workspace_binary("pi-cli", "pi"))
        .args(["replay", "--check"])
        .arg(cassette)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// `pi replay --check` finds the recording at `cassette` reproduced: what a program recorded
/// checks as the binary's own recordings do.
pub fn assert_checks(cassette: &Path) {
    let (code, said) = pi_check(cassette);
    assert_eq!(code, Some(0), "{said}");
}

/// `pi replay --chaos 20 --seed 1 cassette` keeps every invariant (exit 0): a program's
/// recording, its extensions' answers included, is checked under chaos as the binary's are.
pub fn assert_chaos(cassette: &Path) {
    let out = std::process::Command::new(pi_testkit::workspace_binary("pi-cli", "pi"))
        .args(["replay", "--chaos", "20", "--seed", "1"])
        .arg(cassette)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(": 0 failed, 0 diverged, 0 unusable"),
        "{stdout}"
    );
}

/// A scratch folder for a session with Pi's TypeScript extensions: the workspace `work/` (its
/// `.agent` folder made) and an empty `bare-path/` (a PATH without Node, on which a recording
/// must still replay), with Pi 1.5.2's Node put first on this process's PATH (the extension host
/// runs it; Pi 1.5.2 needs Node >= 22.19). `None` without the install: the test skips with a
/// line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a failure.
pub struct NodeScratch {
    pub dir: tempfile::TempDir,
    pub workspace: PathBuf,
}

impl NodeScratch {
    pub fn new() -> Option<NodeScratch> {
        let install = pi_testkit::extension_host_install()?;
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("work");
        std::fs::create_dir_all(workspace.join(".agent")).unwrap();
        std::fs::create_dir_all(dir.path().join("bare-path")).unwrap();
        let path = std::env::var("PATH").unwrap_or_default();
        std::env::set_var(
            "PATH",
            format!("{}:{path}", install.join("node/bin").display()),
        );
        Some(NodeScratch { dir, workspace })
    }
}

/// The events as the text they serialize to, one line each (key order kept).
pub fn lines(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}
