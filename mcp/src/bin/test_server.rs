//! A small MCP server for the crate's tests, built on rmcp's server side. Tools: `echo` (text),
//! `pixel` (an image), `fail` (`isError`), `slow` (waits until cancelled and then writes the file
//! named by `MCP_TEST_CANCEL_MARK`), `data` (structured content only), and `a.b`/`a-b`, whose Pi
//! names collide. `--http` serves streamable HTTP on 127.0.0.1 and prints `listening on <port>`;
//! otherwise it speaks over stdio. `--fail-start` writes to stderr and exits before the handshake.
//! `MCP_TEST_START_DELAY_MS` makes a stdio server wait that long before it reads its first
//! message (a slow server: `initialize` is answered that much later); `--fail-start` waits too.
//! `MCP_TEST_RESOURCES=1` gives it resources: `notes://first` (text), `notes://pixel` (a PNG
//! blob), `ui://app` (an MCP App, which Pi leaves out), over two pages, and the template
//! `notes://{name}`, which reads any other name as an empty resource. `MCP_TEST_RESOURCES=odd`
//! gives the same resources, but its second page hands back its own cursor again and it does
//! not know `resources/templates/list`. `MCP_TEST_LINK=1` adds the tool `link`, which answers
//! with a text and a `resource_link` to `notes://first`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParam, CallToolResult, Content, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParam, ReadResourceRequestParam,
    ReadResourceResult, ServerCapabilities, ServerInfo, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

/// A one-pixel PNG.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[derive(Clone, Debug)]
struct TestServer;

fn tools() -> Vec<Tool> {
    let list = json!([
        {"name": "echo", "description": "Echo the text back", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
         "annotations": {"readOnlyHint": true, "title": "Echo"}},
        {"name": "pixel", "title": "One pixel", "inputSchema": {"type": "object"}},
        {"name": "fail", "inputSchema": {"type": "object"}},
        {"name": "slow", "description": "Waits until cancelled", "inputSchema": {"type": "object"}},
        {"name": "data", "description": "Structured content only", "inputSchema": {"type": "object"}},
        {"name": "a.b", "description": "collides", "inputSchema": {"type": "object"}},
        {"name": "a-b", "description": "collides", "inputSchema": {"type": "object"}}
    ]);
    let mut tools: Vec<Tool> = serde_json::from_value(list).unwrap_or_default();
    if std::env::var("MCP_TEST_LINK").is_ok_and(|v| v == "1") {
        let link = json!({"name": "link", "description": "Links the first note", "inputSchema": {"type": "object"}});
        tools.extend(serde_json::from_value::<Tool>(link));
    }
    tools
}

/// Whether the server has resources (`MCP_TEST_RESOURCES=1`, or `odd`).
fn with_resources() -> bool {
    std::env::var("MCP_TEST_RESOURCES").is_ok_and(|v| v == "1" || v == "odd")
}

/// Whether the server's resources misbehave (`MCP_TEST_RESOURCES=odd`).
fn odd() -> bool {
    std::env::var("MCP_TEST_RESOURCES").is_ok_and(|v| v == "odd")
}

/// The resources' pages: the cursor `page2` gives the second.
fn resources_page(cursor: Option<&str>) -> serde_json::Value {
    match cursor {
        None => json!({"resources": [
            {"uri": "notes://first", "name": "first", "title": "First note", "mimeType": "text/plain",
             "_meta": {"x": 1}, "icons": [{"src": "data:,"}]},
            {"uri": "ui://app", "name": "app", "mimeType": "text/html"}
        ], "nextCursor": "page2"}),
        Some(_) if odd() => json!({"resources": [], "nextCursor": "page2"}),
        Some(_) => json!({"resources": [
            {"uri": "notes://pixel", "name": "pixel", "mimeType": "image/png", "size": 68}
        ]}),
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerInfo {
        let capabilities = if with_resources() {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerInfo {
            capabilities,
            instructions: Some("Tools for tests.\nSecond line.".to_string()),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult {
            tools: tools(),
            next_cursor: None,
        })
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        serde_json::from_value(resources_page(cursor.as_deref()))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        if odd() {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListResourceTemplatesRequestMethod,
            >());
        }
        serde_json::from_value(json!({"resourceTemplates": [
            {"uriTemplate": "notes://{name}", "name": "note", "description": "A note by name"}
        ]}))
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParam,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let contents = match request.uri.as_str() {
            "notes://first" => {
                json!([{"uri": "notes://first", "mimeType": "text/plain", "text": "The first note."}])
            }
            "notes://pixel" => {
                json!([{"uri": "notes://pixel", "mimeType": "image/png", "blob": PIXEL_PNG}])
            }
            uri if uri.starts_with("notes://") => json!([]),
            uri => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {uri}"),
                    None,
                ))
            }
        };
        serde_json::from_value(json!({ "contents": contents }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParam,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => {
                let text = args
                    .get("text")
                    .and_then(|t| t.as_str())
                    .unwrap_or("")
                    .to_string();
                Ok(CallToolResult::success(vec![Content::text(text)]))
            }
            "pixel" => Ok(CallToolResult::success(vec![
                Content::text("a pixel"),
                Content::image(PIXEL_PNG, "image/png"),
            ])),
            "fail" => Ok(CallToolResult::error(vec![Content::text(
                "the tool failed on purpose",
            )])),
            "link" => serde_json::from_value(json!({"content": [
                {"type": "text", "text": "Here it is."},
                {"type": "resource_link", "uri": "notes://first", "name": "first",
                 "title": "The first note", "description": "What came first",
                 "mimeType": "text/plain", "size": 2048}
            ]}))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None)),
            "data" => Ok(CallToolResult::structured(
                json!({"answer": 42, "items": ["x"]}),
            )),
            "slow" => {
                context.ct.cancelled().await;
                if let Ok(path) = std::env::var("MCP_TEST_CANCEL_MARK") {
                    let _ = std::fs::write(path, "cancelled");
                }
                Ok(CallToolResult::success(vec![Content::text("too late")]))
            }
            _ => Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            )),
        }
    }
}

async fn serve_http() -> std::io::Result<()> {
    use rmcp::transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        || Ok(TestServer),
        Arc::new(LocalSessionManager::default()),
        Default::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?.port());
    loop {
        let (stream, _) = listener.accept().await?;
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let delay = std::env::var("MCP_TEST_START_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok());
    if let Some(ms) = delay {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    if mode == "--fail-start" {
        eprintln!("test server: refusing to start");
        std::process::exit(3);
    }
    if mode == "--http" {
        return serve_http().await;
    }
    let running = TestServer
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let _ = running.waiting().await;
    Ok(())
}
