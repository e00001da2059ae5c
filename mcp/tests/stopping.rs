//! A stdio server is stopped as Pi 1.5.2's MCP client stops one when its session ends: its
//! stdin closed, then after half a second SIGTERM to its process group, then after two seconds
//! more SIGKILL to the group. The servers here are real processes that ignore what a gentler
//! stop would ask of them; they are gone after the grace, and the end does not hang.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use pi_mcp::config::validate_server;
use pi_mcp::{McpConnection, ServerEntry};
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
