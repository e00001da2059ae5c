//! The client against the real MCP servers from npm, `@modelcontextprotocol/server-filesystem`
//! and `server-everything`, installed by `scripts/install-mcp-servers.sh` into `PI_MCP_NPM_DIR`
//! and run with Node (`PI_MCP_NODE`, else `node` on the PATH). Skipped with one line when they
//! are absent, unless `PI_REQUIRE_MCP_NPM=1` (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use pi_core::message::ContentBlock;
use pi_mcp::config::{validate_server, Scope};
use pi_mcp::{convert_result, tool_definitions, McpConnection, ServerEntry};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// The installed servers' folder and the Node to run them with, or None (skipped).
fn installed() -> Option<(PathBuf, String)> {
    let dir = std::env::var_os("PI_MCP_NPM_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir());
    let required = std::env::var("PI_REQUIRE_MCP_NPM").is_ok_and(|v| v == "1");
    match dir {
        Some(dir) => Some((
            dir,
            std::env::var("PI_MCP_NODE").unwrap_or_else(|_| "node".to_string()),
        )),
        None if required => {
            panic!("PI_REQUIRE_MCP_NPM=1 but PI_MCP_NPM_DIR (the npm MCP servers) is not a folder")
        }
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "skipped: PI_MCP_NPM_DIR (the npm MCP servers) is not set"
            );
            None
        }
    }
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

fn script(dir: &Path, package: &str) -> String {
    dir.join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

fn texts(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| {
            if let ContentBlock::Text(t) = b {
                Some(t.text.as_str())
            } else {
                None
            }
        })
        .collect()
}

#[tokio::test]
async fn the_filesystem_server_reads_inside_its_root_and_refuses_outside_it() {
    let Some((dir, node)) = installed() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("note.txt"), "hello from the workspace\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let server = entry(
        "filesystem",
        json!({"command": node, "args": [script(&dir, "server-filesystem"), root_path]}),
    );
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    let defs = tool_definitions(&server, connection.tools());
    let read = defs
        .iter()
        .find(|d| d.server_tool == "read_text_file")
        .expect("read_text_file listed");
    assert_eq!(read.name, "mcp__filesystem__read_text_file");
    assert_eq!(read.label, "filesystem/read_text_file");
    assert_eq!(
        read.annotations
            .as_ref()
            .and_then(|a| a.get("readOnlyHint")),
        Some(&json!(true))
    );
    let abort = CancellationToken::new();
    let path = root_path.join("note.txt");
    let result = connection
        .call_tool("read_text_file", json!({"path": path}), &abort)
        .await
        .unwrap();
    let out = convert_result(
        "filesystem",
        "read_text_file",
        &result,
        false,
        &mut |_, _| Err("unused".into()),
    );
    assert!(!out.is_error);
    assert_eq!(texts(&out.content), "hello from the workspace\n");
    let secret = outside.path().join("secret.txt");
    let result = connection
        .call_tool("read_text_file", json!({"path": secret}), &abort)
        .await
        .unwrap();
    let out = convert_result(
        "filesystem",
        "read_text_file",
        &result,
        false,
        &mut |_, _| Err("unused".into()),
    );
    assert!(out.is_error, "{:?}", out.content);
    assert!(!texts(&out.content).contains("secret\n") && texts(&out.content) != "secret");
    connection.close().await;
}

#[tokio::test]
async fn the_everything_server_echoes_and_sends_an_image() {
    let Some((dir, node)) = installed() else {
        return;
    };
    let server = entry(
        "everything",
        json!({"command": node, "args": [script(&dir, "server-everything"), "stdio"]}),
    );
    let connection = McpConnection::connect(&server, Path::new("."))
        .await
        .unwrap();
    let names: Vec<String> = tool_definitions(&server, connection.tools())
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    let abort = CancellationToken::new();
    let result = connection
        .call_tool("echo", json!({"message": "ping"}), &abort)
        .await
        .unwrap();
    let out = convert_result("everything", "echo", &result, false, &mut |_, _| {
        Err("unused".into())
    });
    assert!(texts(&out.content).contains("ping"), "{:?}", out.content);
    let image_tool = ["get-tiny-image", "getTinyImage"]
        .into_iter()
        .find(|t| names.contains(&format!("mcp__everything__{}", t.replace('-', "_"))))
        .expect("an image tool");
    let result = connection
        .call_tool(image_tool, json!({}), &abort)
        .await
        .unwrap();
    let out = convert_result("everything", image_tool, &result, false, &mut |_, _| {
        Err("unused".into())
    });
    assert!(
        out.content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(i) if i.mime_type == "image/png")),
        "{:?}",
        out.content
    );
    connection.close().await;
}
