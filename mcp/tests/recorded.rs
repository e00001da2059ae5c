//! MCP tools as custom tools, recorded and replayed: a run whose model calls a tool of the
//! crate's test server (started as a real process from a copy of its binary) is recorded into a
//! cassette over real HTTP against the mock LLM; the server's tools are the cassette's
//! `customTools`; the copy of the server is then deleted and the cassette replays byte for byte
//! without it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::test_support::{mock_key, mock_model, prompt, record, replay, tool_events};
use pi_effects::agent_session::SessionOptions;
use pi_mcp::config::{validate_server, Scope};
use pi_mcp::{register_tools, McpConnection, ServerEntry};
use pi_testkit::MockLlm;
use serde_json::json;

const PROMPT: &str = "Echo something.";

/// Records a run in `workspace` whose model calls the MCP server's `echo` once, then answers;
/// the cassette's path and the run's events, one JSON line each.
async fn record_echo(dir: &Path, workspace: &Path, server: &Path) -> (PathBuf, Vec<String>) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": "{\"text\":\"hello mcp\"}"}]},
        {"text": ["Echoed."]},
    ]));
    let mut options = SessionOptions::new(workspace, mock_model(&mock), mock_key());
    options.agent_dir = dir.join("agent");
    options.tools = vec!["read".into()];
    let (config, transport) =
        validate_server("t", json!({"command": server, "exposure": "direct"})).unwrap();
    let entry = ServerEntry {
        name: "t".into(),
        config,
        transport,
        source: "mcp.json".into(),
        scope: Scope::Global,
        override_path: None,
    };
    let connection = Arc::new(McpConnection::connect(&entry, workspace).await.unwrap());
    let declared = register_tools(&mut options.custom_tools, connection);
    assert_eq!(declared.len(), 7);
    assert_eq!(options.run_config(0).unwrap().custom_tools, declared);
    let cassette = dir.join("custom.jsonl");
    let events = record(&cassette, options, prompt(PROMPT), None).await;
    (cassette, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tools_call_is_recorded_and_replays_byte_for_byte_without_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let server = dir.path().join("mcp-server");
    std::fs::copy(env!("CARGO_BIN_EXE_pi-mcp-test-server"), &server).unwrap();
    let (cassette, recorded) = record_echo(dir.path(), &workspace, &server).await;
    let tools = tool_events(&recorded);
    assert_eq!(tools.len(), 2, "{tools:#?}");
    assert!(
        tools[1].contains("tool_execution_end") && tools[1].contains("hello mcp"),
        "{tools:#?}"
    );
    assert!(
        tools[1].contains("\"details\":{\"server\":\"t\",\"tool\":\"echo\"}"),
        "{tools:#?}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"customTools\":[{\"name\":\"mcp__t__echo\",\"label\":\"t/echo\""));

    std::fs::remove_file(&server).unwrap();
    let (replayed, ended) = replay(&cassette, prompt(PROMPT), |r| r).await;
    assert_eq!(ended, Ok(()));
    assert_eq!(replayed, recorded);
}
