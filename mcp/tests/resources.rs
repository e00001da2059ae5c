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
    entry_with(if resources { "1" } else { "" })
}

/// The test server with `MCP_TEST_RESOURCES` set to `resources` (none when empty).
fn entry_with(resources: &str) -> ServerEntry {
    let env = if resources.is_empty() {
        json!({})
    } else {
        json!({ "MCP_TEST_RESOURCES": resources })
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

mod tools {
    use std::sync::Arc;

    use pi_core::message::ContentBlock;
    use pi_mcp::resources::{resource_tools, ResourceServers, ResourceTool};
    use pi_mcp::McpConnection;
    use serde_json::{json, Value};
    use tokio_util::sync::CancellationToken;

    use super::entry_with;

    async fn tools_over_the_server() -> (Vec<ResourceTool>, Arc<McpConnection>) {
        tools_over("1").await
    }

    async fn tools_over(resources: &str) -> (Vec<ResourceTool>, Arc<McpConnection>) {
        let connection = Arc::new(
            McpConnection::connect(&entry_with(resources), std::path::Path::new("."))
                .await
                .unwrap(),
        );
        let reached = Arc::clone(&connection);
        let servers: ResourceServers = Arc::new(move || vec![Arc::clone(&reached)]);
        (
            resource_tools(pi_effects::custom_tool::ToolExposure::Codemode, &servers),
            connection,
        )
    }

    fn no_save(_: &[u8], _: &str) -> Result<String, String> {
        Err("not saved in this test".to_string())
    }

    async fn run(tool: &ResourceTool, args: Value) -> Result<pi_core::event::ToolResult, String> {
        tool.run(&args, &CancellationToken::new(), &mut no_save)
            .await
    }

    fn text(result: &pi_core::event::ToolResult) -> String {
        match &result.content[0] {
            ContentBlock::Text(t) => t.text.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn the_tools_are_declared_as_pi_declares_them() {
        let (tools, connection) = tools_over_the_server().await;
        let names: Vec<&str> = tools.iter().map(|t| t.definition_name()).collect();
        assert_eq!(
            names,
            [
                "list_mcp_resources",
                "list_mcp_resource_templates",
                "read_mcp_resource"
            ]
        );
        let read = pi_effects::custom_tool::CustomTool::definition(&tools[2]);
        assert_eq!(
            read.exposure,
            Some(pi_effects::custom_tool::ToolExposure::Deferred),
            "codemode is registered as deferred"
        );
        assert_eq!(read.annotations, Some(json!({"readOnlyHint": true})));
        assert_eq!(read.parameters["required"], json!(["server", "uri"]));
        connection.close().await;
    }

    #[tokio::test]
    async fn listings_are_pis_json_without_apps_meta_or_icons() {
        let (tools, connection) = tools_over_the_server().await;
        let all = run(&tools[0], json!({})).await.unwrap();
        assert_eq!(
            text(&all),
            r#"{"resources":[{"server":"notes","uri":"notes://first","name":"first","title":"First note","mimeType":"text/plain"},{"server":"notes","uri":"notes://pixel","name":"pixel","mimeType":"image/png","size":68}]}"#
        );
        assert_eq!(
            all.details,
            Some(json!({"server": "", "tool": "list_mcp_resources"}))
        );
        let page = run(&tools[0], json!({"server": " notes "})).await.unwrap();
        let payload: Value = serde_json::from_str(&text(&page)).unwrap();
        assert_eq!(payload["server"], "notes");
        assert_eq!(payload["nextCursor"], "page2");
        assert_eq!(payload["resources"].as_array().unwrap().len(), 1);
        let next = run(&tools[0], json!({"server": "notes", "cursor": "page2"}))
            .await
            .unwrap();
        assert!(text(&next).contains("notes://pixel"));
        let templates = run(&tools[1], json!({})).await.unwrap();
        assert_eq!(
            text(&templates),
            r#"{"resourceTemplates":[{"server":"notes","uriTemplate":"notes://{name}","name":"note","description":"A note by name"}]}"#
        );
        connection.close().await;
    }

    #[tokio::test]
    async fn wrong_arguments_are_pis_errors() {
        let (tools, connection) = tools_over_the_server().await;
        assert_eq!(
            run(&tools[0], json!({"cursor": "page2"}))
                .await
                .unwrap_err(),
            "cursor can only be used when a server is specified"
        );
        assert_eq!(
            run(&tools[0], json!({"server": "other"}))
                .await
                .unwrap_err(),
            "MCP server \"other\" has no resources. Servers with resources: notes"
        );
        assert_eq!(
            run(&tools[0], json!({"server": 3})).await.unwrap_err(),
            "server must be a string"
        );
        assert_eq!(
            run(&tools[2], json!({"server": "notes"}))
                .await
                .unwrap_err(),
            "uri must be provided"
        );
        connection.close().await;
    }

    #[tokio::test]
    async fn reads_become_text_and_images_with_the_contents_whole() {
        let (tools, connection) = tools_over_the_server().await;
        let read = run(
            &tools[2],
            json!({"server": "notes", "uri": "notes://first"}),
        )
        .await
        .unwrap();
        assert_eq!(text(&read), "The first note.");
        assert_eq!(
            read.extra.get("structuredContent").cloned().unwrap(),
            json!({"server": "notes", "uri": "notes://first", "contents": [
                {"uri": "notes://first", "mimeType": "text/plain", "text": "The first note."}
            ]})
        );
        let pixel = run(
            &tools[2],
            json!({"server": "notes", "uri": "notes://pixel"}),
        )
        .await
        .unwrap();
        assert!(
            matches!(pixel.content[0], ContentBlock::Image(_)),
            "{:?}",
            pixel.content
        );
        let empty = run(&tools[2], json!({"server": "notes", "uri": "notes://none"}))
            .await
            .unwrap();
        assert_eq!(text(&empty), "Resource notes://none is empty.");
        connection.close().await;
    }

    /// A server that does not know `resources/templates/list` has no templates (Pi's
    /// `withoutTemplates`), and one that hands back a cursor it gave before is not asked forever:
    /// its listing fails under `errors`.
    #[tokio::test]
    async fn a_server_without_templates_has_none_and_a_looping_cursor_ends() {
        let (tools, connection) = tools_over("odd").await;
        let templates = run(&tools[1], json!({})).await.unwrap();
        assert_eq!(text(&templates), r#"{"resourceTemplates":[]}"#);
        let one = run(&tools[1], json!({"server": "notes"})).await.unwrap();
        assert_eq!(text(&one), r#"{"server":"notes","resourceTemplates":[]}"#);
        let all = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            run(&tools[0], json!({})),
        )
        .await
        .expect("the listing ended")
        .unwrap();
        assert_eq!(
            text(&all),
            r#"{"resources":[],"errors":[{"server":"notes","error":"the server repeated the cursor \"page2\""}]}"#
        );
        connection.close().await;
    }
}
