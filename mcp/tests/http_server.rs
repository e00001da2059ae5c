//! The client against the crate's test server serving streamable HTTP on 127.0.0.1, started as a
//! real process: tools listed and called over HTTP, and an unreachable URL reported as one error
//! naming the server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use pi_core::message::ContentBlock;
use pi_mcp::config::{validate_server, Scope};
use pi_mcp::{convert_result, tool_definitions, McpConnection, ServerEntry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const SERVER: &str = env!("CARGO_BIN_EXE_pi-mcp-test-server");

/// The test server in HTTP mode, killed when dropped.
struct HttpServer(Child, u16);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start() -> HttpServer {
    let mut child = Command::new(SERVER)
        .arg("--http")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .parse()
        .unwrap();
    HttpServer(child, port)
}

fn entry(name: &str, raw: Value) -> ServerEntry {
    let (config, transport) = validate_server(name, raw).unwrap();
    ServerEntry {
        name: name.into(),
        config,
        transport,
        source: "mcp.json".into(),
        scope: Scope::Global,
        override_path: None,
    }
}

#[tokio::test]
async fn tools_are_listed_and_called_over_streamable_http() {
    let server = start();
    let url = format!("http://127.0.0.1:{}/mcp", server.1);
    let entry = entry("web", json!({"url": url, "headers": {"X-Test": "1"}}));
    let connection = McpConnection::connect(&entry, Path::new("."))
        .await
        .unwrap();
    let defs = tool_definitions(&entry, connection.tools());
    assert_eq!(defs[0].name, "mcp__web__echo");
    let result = connection
        .call_tool(
            "echo",
            json!({"text": "over http"}),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let out = convert_result("web", "echo", &result, false, &mut |_, _| {
        Err("unused".into())
    });
    assert_eq!(out.content, vec![ContentBlock::text("over http")]);
    connection.close().await;
}

#[tokio::test]
async fn an_unreachable_server_is_one_error_naming_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let entry = entry(
        "gone",
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    );
    let error = McpConnection::connect(&entry, Path::new("."))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("MCP server \"gone\": "), "{error}");
}
