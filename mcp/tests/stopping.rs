//! A stdio server is stopped as Pi 1.5.2's MCP client stops one when its session ends: its
//! stdin closed, then after half a second SIGTERM to its process group, then after two seconds
//! more SIGKILL to the group. The servers here are real processes that ignore what a gentler
//! stop would ask of them; they are gone after the grace, and the end does not hang.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pi_mcp::config::validate_server;
use pi_mcp::{stop_servers, McpConnection, ServerEntry};
use serde_json::{json, Value};

const SERVER: &str = env!("CARGO_BIN_EXE_pi-mcp-test-server");

fn entry(raw: Value) -> ServerEntry {
    let (config, transport) = validate_server("s", raw).unwrap();
    ServerEntry {
        name: "s".to_string(),
        config,
        transport,
        source: Path::new("mcp.json").to_path_buf(),
        scope: pi_mcp::config::Scope::Global,
        override_path: None,
    }
}

/// Whether process `pid` still runs (gone, or a zombie no one reaped yet, is not running).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

/// Connects the test server behind `sh -c script` (the server is `$0`, `$1` a file the script
/// may write pids to), drops the connection, and says how long that took, with the pids the
/// script wrote (each still running after the drop is killed, and fails the test).
async fn stop(script: &str) -> (Duration, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let server = entry(json!({
        "command": "sh",
        "args": ["-c", script, SERVER, pids],
        "exposure": "direct",
    }));
    let connection = McpConnection::connect(&server, dir.path()).await.unwrap();
    assert!(!connection.tools().is_empty());
    let started = Instant::now();
    connection.close().await;
    let took = started.elapsed();
    let pids: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let left: Vec<&String> = pids.iter().filter(|pid| running(pid)).collect();
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    assert!(left.is_empty(), "left running: {left:?} after {took:?}");
    (took, pids)
}

/// The attack: a server (the shell leading its process group) that ignores SIGTERM and goes on
/// after its stdin closes, with a child of its own that ignores SIGTERM too. Only SIGKILL,
/// two and a half seconds after the stdin closed, ends them; the stop waits for that and no
/// longer.
#[tokio::test]
async fn a_server_that_ignores_sigterm_is_killed_after_the_grace() {
    let script = r#"trap '' TERM; echo $$ > "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait"#;
    let (took, pids) = stop(script).await;
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(
        took >= Duration::from_millis(2_500),
        "killed early: {took:?}"
    );
    assert!(took < Duration::from_secs(10), "the stop hung: {took:?}");
}

/// A server that ignores its stdin closing but honours SIGTERM is gone at the first signal,
/// half a second after its stdin closed, without waiting for SIGKILL.
#[tokio::test]
async fn a_server_that_honours_sigterm_is_stopped_by_it() {
    let script = r#"echo $$ > "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait"#;
    let (took, pids) = stop(script).await;
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(
        took >= Duration::from_millis(500),
        "signalled early: {took:?}"
    );
    assert!(
        took < Duration::from_millis(2_500),
        "waited for SIGKILL: {took:?}"
    );
}

/// A server (a shell leading its group) that ignores SIGTERM and whose child does too: only
/// SIGKILL ends it, Pi's whole grace (2.5 s) after its stdin closed. `$1` gets their pids.
const STUBBORN: &str = r#"trap '' TERM; echo $$ > "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait"#;

/// Connects a stubborn server whose pids go to `pids`.
async fn stubborn(dir: &Path, pids: &Path) -> McpConnection {
    let server = entry(json!({
        "command": "sh",
        "args": ["-c", STUBBORN, SERVER, pids],
        "exposure": "direct",
    }));
    McpConnection::connect(&server, dir).await.unwrap()
}

/// The pids written to the files `pids`, and those of them still running (killed, so that a
/// failing test leaves none behind).
fn left_running(pids: &[std::path::PathBuf]) -> (Vec<String>, Vec<String>) {
    let all: Vec<String> = pids
        .iter()
        .flat_map(|file| {
            std::fs::read_to_string(file)
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    let left: Vec<String> = all.iter().filter(|pid| running(pid)).cloned().collect();
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    (all, left)
}

/// A session's servers stop together, as Pi stops them: three stubborn servers take one grace
/// between them (at least the 2.5 s SIGKILL waits for, well under twice that), not one after
/// another (7.5 s), and none of their processes is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_stubborn_servers_stop_together_in_one_grace() {
    let dir = tempfile::tempdir().unwrap();
    let pids: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("pids{i}")))
        .collect();
    let mut connections = Vec::new();
    for file in &pids {
        connections.push(Arc::new(stubborn(dir.path(), file).await));
    }
    let started = Instant::now();
    stop_servers(&connections).await;
    let took = started.elapsed();
    let (all, left) = left_running(&pids);
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(left.is_empty(), "left running: {left:?} after {took:?}");
    assert!(
        took >= Duration::from_millis(2_500),
        "killed early: {took:?}"
    );
    assert!(
        took < Duration::from_millis(5_000),
        "the servers were stopped one after another: {took:?}"
    );
}

/// A connection dropped without being closed does not hold the thread dropping it for the
/// grace: its server is stopped as Pi stops it in a task of its own, and is gone after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_stops_its_server_without_blocking_the_dropper() {
    let dir = tempfile::tempdir().unwrap();
    let pids = [dir.path().join("pids")];
    let connection = stubborn(dir.path(), &pids[0]).await;
    let started = Instant::now();
    drop(connection);
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "the drop waited for the grace: {took:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let all = loop {
        let all: Vec<String> = std::fs::read_to_string(&pids[0])
            .unwrap()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if all.iter().all(|pid| !running(pid)) || Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(all.len(), 2, "{all:?}");
    let (_, left) = left_running(&pids);
    assert!(left.is_empty(), "left running: {left:?}");
}
