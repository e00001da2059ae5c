//! MCP servers a TypeScript extension registers after loading, through the SDK: with
//! `mcp_config` called (Pi's MCP extension on), the server an extension registers in its
//! `session_start` handler connects, its `direct` tool is declared and called, and one it
//! unregisters in a command is withdrawn; the recording replays event for event with neither
//! Node nor the server. A server an extension registers while loading connects when the
//! session starts (`bind_extensions`), as Pi's MCP extension connects the registered servers
//! in its `session_start` handler.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{builder, drain, lines};
use pi_sdk::mcp::McpConfig;
use pi_sdk::SessionBuilder;
use pi_testkit::MockLlm;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_registered_after_loading_connects_and_replays_without_it() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let server = test_server(dir.path());
    let config = json!({"command": server, "exposure": "direct"});
    let extension = workspace.join("later.ts");
    std::fs::write(
        &extension,
        format!(
            "export default function (pi: any) {{\n  \
             pi.on(\"session_start\", () => pi.registerMcpServer(\"reg\", {config}));\n  \
             pi.registerCommand(\"drop\", {{ handler: async () => pi.unregisterMcpServer(\"reg\") }});\n}}\n"
        ),
    )
    .unwrap();
    let cassette = dir.path().join("later.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__reg__echo", "arguments": {"text": "hello later"}}]},
        {"text": ["Echoed."]},
        {"text": ["Gone."]}
    ]));
    let (started, notice) = builder(&mock, &workspace)
        .typescript_extensions([&extension])
        .session_dir(dir.path().join("sessions"))
        .record(&cassette)
        .mcp_config(&McpConfig::default())
        .await;
    assert_eq!(notice, None);
    let session = started.build().unwrap();
    let mut events = session.subscribe();
    session.bind_extensions().await.unwrap();
    session.prompt("echo it").await.unwrap();
    session.prompt("/drop").await.unwrap();
    session.prompt("again").await.unwrap();
    session.finish().await.unwrap();
    let recorded = drain(&mut events);

    assert_echoed_once(&recorded, "hello later");
    let declared = mock.declared_tools();
    assert_eq!(declared.len(), 3, "{declared:?}");
    assert!(
        declared[0].iter().any(|t| t == "mcp__reg__echo"),
        "{declared:?}"
    );
    assert!(
        !declared[2].iter().any(|t| t == "mcp__reg__echo"),
        "{declared:?}"
    );

    // No Node, no server: the servers' tools come from the recorded decisions.
    std::fs::remove_file(&server).unwrap();
    std::fs::remove_file(&extension).unwrap();
    std::env::set_var("PATH", dir.path().join("bare-path"));
    let again = replay(&workspace, &cassette, &["echo it", "/drop", "again"]).await;
    assert_eq!(lines(&again), lines(&recorded));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_registered_while_loading_connects_at_the_start_and_replays_without_it() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let server = test_server(dir.path());
    let config = json!({"command": server, "exposure": "direct"});
    let extension = workspace.join("loading.ts");
    std::fs::write(
        &extension,
        format!("export default function (pi: any) {{\n  pi.registerMcpServer(\"reg\", {config});\n}}\n"),
    )
    .unwrap();
    let cassette = dir.path().join("loading.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__reg__echo", "arguments": {"text": "hello loading"}}]},
        {"text": ["Echoed."]}
    ]));
    let (started, notice) = builder(&mock, &workspace)
        .typescript_extensions([&extension])
        .session_dir(dir.path().join("sessions"))
        .record(&cassette)
        .mcp_config(&McpConfig::default())
        .await;
    assert_eq!(notice, None);
    let session = started.build().unwrap();
    let mut events = session.subscribe();
    session.bind_extensions().await.unwrap();
    session.prompt("echo it").await.unwrap();
    session.finish().await.unwrap();
    let recorded = drain(&mut events);

    assert_echoed_once(&recorded, "hello loading");
    let declared = mock.declared_tools();
    assert!(
        declared[0].iter().any(|t| t == "mcp__reg__echo"),
        "{declared:?}"
    );

    std::fs::remove_file(&server).unwrap();
    std::fs::remove_file(&extension).unwrap();
    std::env::set_var("PATH", dir.path().join("bare-path"));
    let again = replay(&workspace, &cassette, &["echo it"]).await;
    assert_eq!(lines(&again), lines(&recorded));
}

/// A copy of the tests' stdio MCP server in `dir`, which a test removes to show a replay needs
/// none.
fn test_server(dir: &Path) -> PathBuf {
    let server = dir.join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &server,
    )
    .unwrap();
    server
}

/// The run called the server's `echo` tool once, which answered `text`.
fn assert_echoed_once(recorded: &[Value], text: &str) {
    let ends: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 1, "{recorded:#?}");
    assert_eq!(
        ends[0]["result"]["content"][0]["text"], text,
        "{recorded:#?}"
    );
}

/// The events of `cassette` replayed in `workspace` with `prompts`.
async fn replay(workspace: &Path, cassette: &Path, prompts: &[&str]) -> Vec<Value> {
    let replayed = SessionBuilder::new(workspace)
        .replay(cassette)
        .build()
        .unwrap();
    let mut events = replayed.subscribe();
    replayed.bind_extensions().await.unwrap();
    for prompt in prompts {
        replayed.prompt(prompt).await.unwrap();
    }
    replayed.finish().await.unwrap();
    drain(&mut events)
}
