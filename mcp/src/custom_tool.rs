//! MCP tools as custom tools: each tool of a connected server registered in the Live
//! interpreter's [`ToolRegistry`] and declared in the run's configuration, so that its calls are
//! effects like a built-in's, recorded in a cassette and answered from it on replay without the
//! server. `direct` tools are declared to the model, each declaration with its server's
//! namespace (which `pi.getAllTools()` reports); `deferred` ones (and `codemode` ones, which
//! Pi registers as deferred) are registered for `tool_search` to load, with their server's
//! namespace, and called from Pi's `codemode` scripts (run by the extension host) as nested
//! calls; `hidden` ones are not registered.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use pi_core::tools::tool_search::SearchableTool;
use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolFuture, ToolNamespace, ToolRegistry,
};
use pi_effects::tools::temp_file::create_fresh;
use serde_json::Value;

use crate::client::McpConnection;
use crate::definition::{tool_definitions, McpToolDefinition};
use crate::naming::mcp_namespace;

/// One MCP tool of a connected server.
#[derive(Debug)]
pub struct McpTool {
    pub(crate) declaration: CustomToolDefinition,
    pub(crate) tool: McpToolDefinition,
    pub(crate) connection: Arc<McpConnection>,
}

impl CustomTool for McpTool {
    fn definition(&self) -> &CustomToolDefinition {
        &self.declaration
    }

    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let dir = std::env::temp_dir();
            let call = cx.tool_call_id.clone();
            let mut saved = 0;
            // Pi saves a truncated text or a binary resource to a temp file named for MCP.
            let mut save = |data: &[u8], extension: &str| {
                saved += 1;
                let name: String = call.chars().filter(char::is_ascii_alphanumeric).collect();
                let path = dir.join(format!("pi-mcp-{name}-{saved}{extension}"));
                write_new(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(path.to_string_lossy().into_owned())
            };
            self.connection
                .run_tool(&self.tool, args, &cx.signal, &mut save)
                .await
        })
    }
}

/// Writes `data` to a file created at `path`, never through what is already there: the temp
/// folder is shared and the name follows from the tool call's id, so another user could plant a
/// link there (see [`create_fresh`]; anything but a regular file of this user's fails the save).
pub(crate) fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    create_fresh(path)?.write_all(data)
}

/// Registers the tools of `connection` in `registry`, named and declared as Pi names and
/// declares them: the `direct` ones declared to the model, the `deferred` ones for
/// `tool_search`; returns the direct ones' declarations, for the run's configuration. Those
/// the registry does not admit (`--tools`, `--exclude-tools`) are left out.
pub fn register_tools(
    registry: &mut ToolRegistry,
    connection: Arc<McpConnection>,
) -> Vec<CustomToolDefinition> {
    let namespace = namespace(&connection);
    let mut declared = Vec::new();
    for tool in tool_definitions(connection.entry(), connection.tools()) {
        let exposure = tool.exposure.clone();
        // A direct tool's declaration carries its server's namespace (`pi.getAllTools()`
        // reports it); a deferred one's namespace is registered beside it.
        let declaration = CustomToolDefinition {
            namespace: (exposure == "direct").then(|| namespace.clone()),
            ..tool.custom_definition()
        };
        if !registry.admits(&declaration.name) {
            continue;
        }
        let registered = Arc::new(McpTool {
            declaration: declaration.clone(),
            tool,
            connection: Arc::clone(&connection),
        });
        match exposure.as_str() {
            "direct" => {
                declared.push(declaration);
                registry.register(registered);
            }
            "deferred" => registry.register_deferred(registered, Some(namespace.clone())),
            _ => {}
        }
    }
    declared
}

/// Registers the `deferred` tools of `connection` (a server that connected in the background)
/// for running in `registry` and every clone of it ([`ToolRegistry::register_late`]); returns
/// their declarations with the server's namespace, for the session's `tool_search`. Pi
/// registers a server's `codemode` tools as deferred too; `direct` and `hidden` ones are not
/// registered here (a server with direct tools is waited for).
pub fn register_late_tools(
    registry: &ToolRegistry,
    connection: Arc<McpConnection>,
) -> Vec<SearchableTool> {
    let namespace = namespace(&connection);
    let mut searchable = Vec::new();
    for tool in tool_definitions(connection.entry(), connection.tools()) {
        let declaration = tool.custom_definition();
        if tool.exposure != "deferred" || !registry.admits(&declaration.name) {
            continue;
        }
        searchable.push(SearchableTool {
            tool: declaration.clone(),
            namespace: Some(namespace.clone()),
        });
        registry.register_late(Arc::new(McpTool {
            declaration,
            tool,
            connection: Arc::clone(&connection),
        }));
    }
    searchable
}

/// Pi's namespace of a server's tools: `mcp__<server>`, the server's name as its alias, its
/// configured description (trimmed, when not empty) and its instructions.
pub(crate) fn namespace(connection: &McpConnection) -> ToolNamespace {
    let entry = connection.entry();
    ToolNamespace {
        name: mcp_namespace(&entry.name),
        aliases: vec![entry.name.clone()],
        description: entry
            .config
            .get("description")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_owned),
        instructions: connection.instructions().map(str::to_owned),
    }
}
