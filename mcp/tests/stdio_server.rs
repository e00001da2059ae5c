//! The client against the crate's test server (rmcp's server side) run as a real child process:
//! tools named and declared as Pi 1.5.2 declares them, text, image, error and structured results
//! converted as Pi converts them, an abort that reaches the server, and a server that fails to
//! start reported once with its stderr.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use pi_core::message::ContentBlock;
use pi_mcp::config::validate_server;
use pi_mcp::{convert_result, tool_definitions, CallError, McpConnection, ServerEntry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const SERVER: &str = env!("CARGO_BIN_EXE_pi-mcp-test-server");

fn entry(name: &str, raw: Value) -> ServerEntry {
    let (config, transport) = validate_server(name, raw).unwrap();
    ServerEntry {
        name: name.to_string(),
        config,
        transport,
        source: Path::new("mcp.json").to_path_buf(),
        scope: pi_mcp::config::Scope::Global,
        override_path: None,
    }
}

fn no_save(_: &[u8], _: &str) -> Result<String, String> {
    Err("not saved in this test".to_string())
}

#[tokio::test]
async fn tools_are_named_labelled_and_described_as_pi_does() {
    let server = entry(
        "test-srv",
        json!({"command": SERVER, "exposure": "direct", "toolExposure": {"fail": "hidden"}}),
    );
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    assert_eq!(
        connection.instructions(),
        Some("Tools for tests.\nSecond line.")
    );
    let defs = tool_definitions(&server, connection.tools());
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names[..5],
        [
            "mcp__test_srv__echo",
            "mcp__test_srv__pixel",
            "mcp__test_srv__fail",
            "mcp__test_srv__slow",
            "mcp__test_srv__data"
        ]
    );
    // `a.b` and `a-b` both sanitise to mcp__test_srv__a_b: both get the hash suffix.
    assert!(
        names[5].starts_with("mcp__test_srv__a_b_") && names[6].starts_with("mcp__test_srv__a_b_")
    );
    assert_ne!(names[5], names[6]);
    assert_eq!(names[5].len(), "mcp__test_srv__a_b_".len() + 8);
    let echo = &defs[0];
    assert_eq!(echo.label, "test-srv/echo");
    assert_eq!(echo.description, "Echo the text back");
    assert_eq!(
        echo.annotations,
        Some(json!({"readOnlyHint": true}).as_object().unwrap().clone())
    );
    assert_eq!(echo.parameters["required"], json!(["text"]));
    assert_eq!(defs[1].description, "One pixel");
    assert_eq!(defs[2].description, "MCP tool fail from server test-srv");
    assert_eq!(defs[2].exposure, "hidden");
    assert_eq!(
        defs[1].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(echo.exposure, "direct");
    connection.close().await;
}

#[tokio::test]
async fn results_become_pi_tool_results() {
    let server = entry("t", json!({"command": SERVER}));
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    let abort = CancellationToken::new();

    let echo = connection
        .call_tool("echo", json!({"text": "hello"}), &abort)
        .await
        .unwrap();
    let out = convert_result("t", "echo", &echo, false, &mut no_save);
    assert_eq!(out.content, vec![ContentBlock::text("hello")]);
    assert_eq!(out.details, json!({"server": "t", "tool": "echo"}));
    assert!(!out.is_error);

    let pixel = connection
        .call_tool("pixel", json!({}), &abort)
        .await
        .unwrap();
    let out = convert_result("t", "pixel", &pixel, false, &mut no_save);
    assert!(
        matches!(&out.content[1], ContentBlock::Image(image) if image.mime_type == "image/png" && !image.data.is_empty())
    );

    let fail = connection
        .call_tool("fail", json!({}), &abort)
        .await
        .unwrap();
    let out = convert_result("t", "fail", &fail, false, &mut no_save);
    assert!(out.is_error);
    assert_eq!(
        out.content,
        vec![ContentBlock::text("the tool failed on purpose")]
    );
    assert_eq!(out.structured_content["isError"], json!(true));

    let data = connection
        .call_tool("data", json!({}), &abort)
        .await
        .unwrap();
    let out = convert_result("t", "data", &data, false, &mut no_save);
    let expected = "{\n  \"answer\": 42,\n  \"items\": [\n    \"x\"\n  ]\n}";
    // rmcp's `structured` also puts the JSON in a text block; either way the model sees the JSON.
    let text = match &out.content[0] {
        ContentBlock::Text(t) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    };
    assert!(
        text == expected
            || serde_json::from_str::<Value>(&text).unwrap()
                == json!({"answer": 42, "items": ["x"]})
    );
    connection.close().await;
}

#[tokio::test]
async fn an_abort_ends_the_call_and_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("cancelled");
    let server = entry(
        "t",
        json!({"command": SERVER, "env": {"MCP_TEST_CANCEL_MARK": mark.to_str().unwrap()}}),
    );
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    let abort = CancellationToken::new();
    let trigger = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let result = connection.call_tool("slow", json!({}), &abort).await;
    assert!(matches!(result, Err(CallError::Aborted)), "{result:?}");
    // The server saw notifications/cancelled: its handler wrote the mark (bounded wait; the
    // file exists, empty, a moment before its text is in).
    let written = || std::fs::read_to_string(&mark).unwrap_or_default();
    for _ in 0..100 {
        if written() == "cancelled" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(written(), "cancelled");
    connection.close().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_one_error_naming_it_with_its_stderr() {
    let server = entry(
        "broken",
        json!({"command": SERVER, "args": ["--fail-start"]}),
    );
    let error = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("MCP server \"broken\": "), "{error}");
    assert!(error.contains("test server: refusing to start"), "{error}");

    let missing = entry("missing", json!({"command": "/nonexistent/mcp-server"}));
    let error = McpConnection::connect(&missing, Path::new("."))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("MCP server \"missing\": cannot start /nonexistent/mcp-server"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unset_variable_in_env_is_named_and_nothing_starts() {
    let server = entry(
        "t",
        json!({"command": SERVER, "env": {"TOKEN": "${PI_MCP_TEST_SURELY_UNSET}"}}),
    );
    let error = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "MCP server \"t\" env \"TOKEN\" uses ${PI_MCP_TEST_SURELY_UNSET}, which is not set"
    );
}

#[tokio::test]
async fn a_tool_runs_into_the_object_pi_returns_and_declares_itself_as_a_custom_tool() {
    let server = entry("t", json!({"command": SERVER, "exposure": "direct"}));
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    let defs = tool_definitions(&server, connection.tools());
    let declared = defs[0].custom_definition();
    assert_eq!(
        serde_json::to_value(&declared).unwrap(),
        json!({"name": "mcp__t__echo", "label": "t/echo", "description": "Echo the text back",
               "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
               "annotations": {"readOnlyHint": true},
               "sourceInfo": {"path": "builtin:mcp", "source": "builtin", "scope": "temporary",
                              "origin": "top-level"},
               // The server lists no output schema: any value stands under structuredContent.
               "outputSchema": pi_mcp::output_schemas::mcp_result_schema(None)})
    );
    let abort = CancellationToken::new();
    let ok = connection
        .run_tool(&defs[0], json!({"text": "hi"}), &abort, &mut no_save)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&ok).unwrap(),
        json!({"content": [{"type": "text", "text": "hi"}], "details": {"server": "t", "tool": "echo"},
               // rmcp's server sends `isError: false`, and Pi keeps the result as sent.
               "structuredContent": {"content": [{"type": "text", "text": "hi"}], "isError": false}})
    );
    let failed = connection
        .run_tool(&defs[2], json!({}), &abort, &mut no_save)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&failed).unwrap()["isError"],
        json!(true)
    );
    abort.cancel();
    let aborted = connection
        .run_tool(&defs[3], json!({}), &abort, &mut no_save)
        .await;
    assert_eq!(aborted.unwrap_err(), "MCP request aborted");
    connection.close().await;
}

#[tokio::test]
async fn one_report_names_every_problem_and_the_good_servers_still_connect() {
    let agent = tempfile::tempdir().unwrap();
    let file = agent.path().join("mcp.json");
    let text = json!({"mcpServers": {
        "good": {"command": SERVER},
        "broken": {"command": SERVER, "args": ["--fail-start"]},
        "off": {"command": "/nonexistent", "enabled": false},
        "bad": {"url": 3}
    }});
    std::fs::write(&file, text.to_string()).unwrap();
    let config = pi_mcp::load_mcp_config(agent.path(), agent.path(), false);
    let started = pi_mcp::start_servers(&config, Path::new(".")).await;
    let names: Vec<&str> = started
        .connections
        .iter()
        .map(|c| c.entry().name.as_str())
        .collect();
    assert_eq!(names, ["good"]);
    let report = started.report.unwrap();
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[0], "MCP servers need attention:");
    assert_eq!(
        lines[1],
        format!("  config: {}: server \"bad\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)", file.display())
    );
    assert!(
        lines[2].starts_with("  broken: failed: ") && !lines[2].contains("MCP server"),
        "{report}"
    );
    assert_eq!(lines.last(), Some(&"Run /mcp to fix."));
    assert_eq!(lines.len(), 4, "{report}");
}
