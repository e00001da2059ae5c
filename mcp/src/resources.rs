//! Pi 1.5.2's MCP resource tools (`extensions/mcp/resources.js`): `list_mcp_resources`,
//! `list_mcp_resource_templates` and `read_mcp_resource`, which take a `server` argument and
//! reach every connected server that has resources. Listings are JSON: one server's page (with
//! its `nextCursor`), or every page of every server sorted by name, a server that fails listed
//! under `errors`; MCP App resources (`ui://`, `profile=mcp-app`) are left out, and each item
//! loses its `_meta` and `icons` and gains its `server`. A read becomes text and images for the
//! model, as a tool result's resource blocks do, its contents whole in `structuredContent`.

use std::sync::Arc;

use pi_core::event::ToolResult;
use pi_core::message::Extra;
use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolExposure, ToolFuture,
};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use crate::client::McpConnection;
use crate::convert::{block_to_content, limit_content, text, SaveOutput};
use crate::definition::mcp_source_info;
use crate::output_schemas::{list_resources_output, list_templates_output, read_resource_output};

pub const LIST_MCP_RESOURCES_TOOL: &str = "list_mcp_resources";
pub const LIST_MCP_RESOURCE_TEMPLATES_TOOL: &str = "list_mcp_resource_templates";
pub const READ_MCP_RESOURCE_TOOL: &str = "read_mcp_resource";

/// The connected servers with resources the tools reach, asked at each call.
pub type ResourceServers = Arc<dyn Fn() -> Vec<Arc<McpConnection>> + Send + Sync>;

/// Which of the three tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceToolKind {
    ListResources,
    ListTemplates,
    Read,
}

/// One of the resource tools, over the servers `servers` gives.
pub struct ResourceTool {
    kind: ResourceToolKind,
    declaration: CustomToolDefinition,
    servers: ResourceServers,
}

impl std::fmt::Debug for ResourceTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTool")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The three tools' declarations (Pi's names, descriptions, parameters, output schemas, source
/// and read-only annotation), with the exposure `exposure` (the widest of the servers they
/// reach).
pub fn resource_tool_declarations(
    exposure: ToolExposure,
) -> Vec<(ResourceToolKind, CustomToolDefinition)> {
    let server_filter = json!({"type": "string", "description": "MCP server name. Omit to list every server with resources."});
    let cursor = json!({"type": "string", "description": "Opaque cursor from a previous call with the same server; omit for the first page."});
    let list_parameters = json!({
        "type": "object",
        "properties": {"server": server_filter, "cursor": cursor},
        "additionalProperties": false,
    });
    let read_parameters = json!({
        "type": "object",
        "properties": {
            "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
            "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."},
        },
        "required": ["server", "uri"],
        "additionalProperties": false,
    });
    // Pi's `toToolExposure`: this harness, as Pi, registers a `codemode` tool as deferred.
    let exposure = match exposure {
        ToolExposure::Codemode => ToolExposure::Deferred,
        other => other,
    };
    let declared =
        |name: &str, description: &str, parameters: &Value, output: Value| CustomToolDefinition {
            name: name.to_owned(),
            label: name.to_owned(),
            description: description.to_owned(),
            parameters: parameters.clone(),
            exposure: Some(exposure),
            annotations: Some(json!({"readOnlyHint": true})),
            source_info: Some(mcp_source_info()),
            output_schema: Some(output),
            ..CustomToolDefinition::default()
        };
    vec![
        (
            ResourceToolKind::ListResources,
            declared(
                LIST_MCP_RESOURCES_TOOL,
                "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible.",
                &list_parameters,
                list_resources_output(),
            ),
        ),
        (
            ResourceToolKind::ListTemplates,
            declared(
                LIST_MCP_RESOURCE_TEMPLATES_TOOL,
                "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible.",
                &list_parameters,
                list_templates_output(),
            ),
        ),
        (
            ResourceToolKind::Read,
            declared(
                READ_MCP_RESOURCE_TOOL,
                "Read a specific resource from an MCP server given the server name and resource URI.",
                &read_parameters,
                read_resource_output(),
            ),
        ),
    ]
}

/// The exposure Pi registers the resource tools with (its `syncResourceTools`): the widest
/// (`direct`, then `codemode`, then `deferred`) of the enabled servers with resources whose
/// exposure is not `hidden`; none when there is no such server.
pub fn resource_exposure(connections: &[Arc<McpConnection>]) -> Option<ToolExposure> {
    let reached = reached(connections);
    let exposures: Vec<&str> = reached.iter().map(|c| c.entry().exposure()).collect();
    [
        ("direct", ToolExposure::Direct),
        ("codemode", ToolExposure::Codemode),
        ("deferred", ToolExposure::Deferred),
    ]
    .into_iter()
    .find(|(name, _)| exposures.contains(name))
    .map(|(_, exposure)| exposure)
}

/// The servers the resource tools reach: enabled, with resources, not `hidden`.
pub fn reached(connections: &[Arc<McpConnection>]) -> Vec<Arc<McpConnection>> {
    connections
        .iter()
        .filter(|c| c.resources_reachable())
        .cloned()
        .collect()
}

/// The three tools over `servers`, declared with `exposure`.
pub fn resource_tools(exposure: ToolExposure, servers: &ResourceServers) -> Vec<ResourceTool> {
    resource_tool_declarations(exposure)
        .into_iter()
        .map(|(kind, declaration)| ResourceTool {
            kind,
            declaration,
            servers: Arc::clone(servers),
        })
        .collect()
}

impl CustomTool for ResourceTool {
    fn definition(&self) -> &CustomToolDefinition {
        &self.declaration
    }

    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let dir = std::env::temp_dir();
            let call: String = cx
                .tool_call_id
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect();
            let mut saved = 0;
            let mut save = |data: &[u8], extension: &str| {
                saved += 1;
                let path = dir.join(format!("pi-mcp-{call}-{saved}{extension}"));
                crate::custom_tool::write_new(&path, data)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(path.to_string_lossy().into_owned())
            };
            self.run(&args, &cx.signal, &mut save).await
        })
    }
}

impl ResourceTool {
    /// The tool's name.
    pub fn definition_name(&self) -> &str {
        &self.declaration.name
    }

    /// Pi's `execute` of this tool: the result, or the error its call throws.
    pub async fn run(
        &self,
        args: &Value,
        abort: &CancellationToken,
        save: SaveOutput<'_>,
    ) -> Result<ToolResult, String> {
        let server = string_argument(args, "server")?;
        match self.kind {
            ResourceToolKind::ListResources | ResourceToolKind::ListTemplates => {
                let payload = self.list(server.as_deref(), args, abort).await?;
                Ok(json_result(
                    &self.declaration.name,
                    server.as_deref(),
                    payload,
                    save,
                ))
            }
            ResourceToolKind::Read => {
                let server = server.ok_or("server must be provided")?;
                let uri = string_argument(args, "uri")?.ok_or("uri must be provided")?;
                let connection = self.find(&server)?;
                let read = connection
                    .read_resource(&uri, abort)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(read_result(&server, &uri, &read, save))
            }
        }
    }

    /// The listing's key in the payload and in each page.
    fn key(&self) -> &'static str {
        match self.kind {
            ResourceToolKind::ListTemplates => "resourceTemplates",
            _ => "resources",
        }
    }

    async fn page(
        &self,
        connection: &McpConnection,
        cursor: Option<String>,
        abort: &CancellationToken,
    ) -> Result<Value, String> {
        let page = match self.kind {
            ResourceToolKind::ListTemplates => {
                connection.resource_templates_page(cursor, abort).await
            }
            _ => connection.resources_page(cursor, abort).await,
        };
        page.map_err(|e| e.to_string())
    }

    /// Every page of `connection`'s listing. A server that hands back a cursor it gave before
    /// would be asked forever: its listing fails instead, naming the cursor.
    async fn all(
        &self,
        connection: &McpConnection,
        abort: &CancellationToken,
    ) -> Result<Vec<Value>, String> {
        let mut items = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.page(connection, cursor, abort).await?;
            items.extend(page[self.key()].as_array().cloned().unwrap_or_default());
            let Some(next) = page.get("nextCursor").and_then(Value::as_str) else {
                return Ok(items);
            };
            if !seen.insert(next.to_owned()) {
                return Err(format!("the server repeated the cursor {next:?}"));
            }
            cursor = Some(next.to_owned());
        }
    }

    async fn list(
        &self,
        server: Option<&str>,
        args: &Value,
        abort: &CancellationToken,
    ) -> Result<Value, String> {
        let cursor = string_argument(args, "cursor")?;
        let key = self.key();
        let mut payload = Map::new();
        if let Some(name) = server {
            let connection = self.find(name)?;
            let page = self.page(&connection, cursor, abort).await?;
            let items = page[key].as_array().cloned().unwrap_or_default();
            payload.insert("server".into(), json!(name));
            payload.insert(key.into(), Value::Array(visible(name, items)));
            if let Some(next) = page.get("nextCursor").filter(|c| !c.is_null()) {
                payload.insert("nextCursor".into(), next.clone());
            }
            return Ok(Value::Object(payload));
        }
        if cursor.is_some() {
            return Err("cursor can only be used when a server is specified".into());
        }
        let mut servers = (self.servers)();
        servers.sort_by(|a, b| a.entry().name.cmp(&b.entry().name));
        let mut items = Vec::new();
        let mut errors = Vec::new();
        for connection in &servers {
            let name = &connection.entry().name;
            match self.all(connection, abort).await {
                Ok(listed) => items.extend(visible(name, listed)),
                Err(error) => errors.push(json!({"server": name, "error": error})),
            }
        }
        payload.insert(key.into(), Value::Array(items));
        if !errors.is_empty() {
            payload.insert("errors".into(), Value::Array(errors));
        }
        Ok(Value::Object(payload))
    }

    /// The connected server `name` with resources, else Pi's error naming those there are.
    fn find(&self, name: &str) -> Result<Arc<McpConnection>, String> {
        let servers = (self.servers)();
        if let Some(found) = servers.iter().find(|c| c.entry().name == name) {
            return Ok(Arc::clone(found));
        }
        let available: Vec<&str> = servers.iter().map(|c| c.entry().name.as_str()).collect();
        let mut message = format!("MCP server \"{name}\" has no resources");
        if !available.is_empty() {
            message.push_str(&format!(
                ". Servers with resources: {}",
                available.join(", ")
            ));
        }
        Err(message)
    }
}

/// Pi's `stringArgument`: absent or null is none, a string is trimmed (empty is none), anything
/// else an error naming the argument.
fn string_argument(args: &Value, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => {
            let trimmed = value.trim();
            Ok((!trimmed.is_empty()).then(|| trimmed.to_owned()))
        }
        Some(_) => Err(format!("{key} must be a string")),
    }
}

/// Whether a listed resource or template is an MCP App's user interface (Pi leaves them out).
fn is_mcp_app(item: &Value) -> bool {
    let uri = item
        .get("uri")
        .or_else(|| item.get("uriTemplate"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("");
    uri.starts_with("ui://") || app_profile(mime)
}

/// Pi's `/;\s*profile\s*=\s*"?mcp-app"?/i` over a MIME type.
fn app_profile(mime: &str) -> bool {
    let lower = mime.to_ascii_lowercase();
    lower.split(';').skip(1).any(|parameter| {
        let Some((name, value)) = parameter.split_once('=') else {
            return false;
        };
        name.trim() == "profile"
            && value
                .trim_start()
                .trim_start_matches('"')
                .starts_with("mcp-app")
    })
}

/// The items that are not MCP Apps, each without `_meta` and `icons`, `server` first.
fn visible(server: &str, items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .filter(|item| !is_mcp_app(item))
        .map(|item| {
            let mut listed = Map::new();
            listed.insert("server".into(), json!(server));
            if let Value::Object(fields) = item {
                for (name, value) in fields {
                    if name != "_meta" && name != "icons" {
                        listed.insert(name, value);
                    }
                }
            }
            Value::Object(listed)
        })
        .collect()
}

/// Pi's `jsonResult`: the payload as one text (limited as a tool result is), the details,
/// and the payload whole for scripts.
fn json_result(tool: &str, server: Option<&str>, payload: Value, save: SaveOutput) -> ToolResult {
    let (content, path) = limit_content(vec![text(payload.to_string())], save);
    result(content, server.unwrap_or(""), tool, path, payload)
}

/// A read's result: each content as a resource block (labelled with its URI when there are
/// several), converted as a tool result's are, or Pi's line for an empty resource.
fn read_result(server: &str, uri: &str, read: &Value, save: SaveOutput) -> ToolResult {
    let contents = read["contents"].as_array().cloned().unwrap_or_default();
    let mut converted = Vec::new();
    for item in &contents {
        if contents.len() > 1 {
            let label = item.get("uri").and_then(Value::as_str).unwrap_or("");
            converted.push(text(format!("{label}:")));
        }
        let block = json!({"type": "resource", "resource": item});
        converted.push(block_to_content(server, &block, false, &mut *save));
    }
    if converted.is_empty() {
        converted.push(text(format!("Resource {uri} is empty.")));
    }
    let (content, path) = limit_content(converted, save);
    let kept: Vec<Value> = contents
        .into_iter()
        .map(|mut item| {
            if let Some(fields) = item.as_object_mut() {
                fields.remove("_meta");
            }
            item
        })
        .collect();
    let structured = json!({"server": server, "uri": uri, "contents": kept});
    result(content, server, READ_MCP_RESOURCE_TOOL, path, structured)
}

fn result(
    content: Vec<pi_core::message::ContentBlock>,
    server: &str,
    tool: &str,
    full_output_path: Option<String>,
    structured: Value,
) -> ToolResult {
    let mut details = Map::new();
    details.insert("server".into(), json!(server));
    details.insert("tool".into(), json!(tool));
    if let Some(path) = full_output_path {
        details.insert("fullOutputPath".into(), json!(path));
    }
    let mut extra = Extra::default();
    extra.insert("structuredContent".into(), structured);
    ToolResult {
        content,
        details: Some(Value::Object(details)),
        terminate: None,
        extra,
    }
}
