//! The client's MCP resource requests against the crate's test server run as a real child
//! process with resources (`MCP_TEST_RESOURCES=1`): whether the server has resources, the
//! pages of its resources and templates as it answered them, and a read of text and of a blob;
//! the same server without resources says so.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use pi_mcp::config::validate_server;
use pi_mcp::{McpConnection, ServerEntry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const SERVER: &str = env!("CARGO_BIN_EXE_pi-mcp-test-server");

fn entry(resources: bool) -> ServerEntry {
    let env = if resources {
        json!({"MCP_TEST_RESOURCES": "1"})
    } else {
        json!({})
    };
    let (config, transport) =
        validate_server("notes", json!({"command": SERVER, "env": env})).unwrap();
    ServerEntry {
        name: "notes".to_string(),
        config,
        transport,
        source: Path::new("mcp.json").to_path_buf(),
        scope: pi_mcp::config::Scope::Global,
        override_path: None,
    }
}

fn uris(page: &Value, key: &str, field: &str) -> Vec<String> {
    page[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item[field].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_server_with_resources_lists_them_page_by_page_and_reads_them() {
    let connection = McpConnection::connect(&entry(true), Path::new("."))
        .await
        .unwrap();
    assert!(connection.has_resources());
    let abort = CancellationToken::new();
    let first = connection.resources_page(None, &abort).await.unwrap();
    assert_eq!(
        uris(&first, "resources", "uri"),
        ["notes://first", "ui://app"]
    );
    assert_eq!(first["nextCursor"], "page2");
    assert_eq!(first["resources"][0]["title"], "First note");
    let second = connection
        .resources_page(Some("page2".to_owned()), &abort)
        .await
        .unwrap();
    assert_eq!(uris(&second, "resources", "uri"), ["notes://pixel"]);
    assert!(second.get("nextCursor").is_none());
    let templates = connection
        .resource_templates_page(None, &abort)
        .await
        .unwrap();
    assert_eq!(
        uris(&templates, "resourceTemplates", "uriTemplate"),
        ["notes://{name}"]
    );
    let text = connection
        .read_resource("notes://first", &abort)
        .await
        .unwrap();
    assert_eq!(text["contents"][0]["text"], "The first note.");
    let blob = connection
        .read_resource("notes://pixel", &abort)
        .await
        .unwrap();
    assert_eq!(blob["contents"][0]["mimeType"], "image/png");
    assert!(blob["contents"][0]["blob"].is_string());
    let missing = connection.read_resource("other://x", &abort).await;
    assert!(missing.is_err(), "{missing:?}");
    connection.close().await;
}

#[tokio::test]
async fn a_server_without_resources_says_so() {
    let connection = McpConnection::connect(&entry(false), Path::new("."))
        .await
        .unwrap();
    assert!(!connection.has_resources());
    connection.close().await;
}

#[tokio::test]
async fn an_aborted_resource_request_is_not_sent() {
    let connection = McpConnection::connect(&entry(true), Path::new("."))
        .await
        .unwrap();
    let abort = CancellationToken::new();
    abort.cancel();
    let aborted = connection.resources_page(None, &abort).await;
    assert!(
        matches!(aborted, Err(pi_mcp::CallError::Aborted)),
        "{aborted:?}"
    );
    connection.close().await;
}
