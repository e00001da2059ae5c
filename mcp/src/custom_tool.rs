//! MCP tools as custom tools: each tool of a connected server registered in the Live
//! interpreter's [`ToolRegistry`] and declared in the run's configuration, so that its calls are
//! effects like a built-in's, recorded in a cassette and answered from it on replay without the
//! server. Only `direct` tools are declared to the model: Pi reaches the other exposures through
//! its `codemode` and `tool_search` tools, which this harness does not have.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolFuture, ToolRegistry,
};
use pi_effects::tools::temp_file::create_fresh;
use serde_json::Value;

use crate::client::McpConnection;
use crate::definition::{tool_definitions, McpToolDefinition};

/// One MCP tool of a connected server.
#[derive(Debug)]
pub struct McpTool {
    declaration: CustomToolDefinition,
    tool: McpToolDefinition,
    connection: Arc<McpConnection>,
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
fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    create_fresh(path)?.write_all(data)
}

/// Registers the `direct` tools of `connection` in `registry`, named and declared as Pi
/// names and declares them; returns their declarations, for the run's configuration.
pub fn register_direct_tools(
    registry: &mut ToolRegistry,
    connection: Arc<McpConnection>,
) -> Vec<CustomToolDefinition> {
    let mut declared = Vec::new();
    for tool in tool_definitions(connection.entry(), connection.tools()) {
        if tool.exposure != "direct" {
            continue;
        }
        let declaration = tool.custom_definition();
        declared.push(declaration.clone());
        registry.register(Arc::new(McpTool {
            declaration,
            tool,
            connection: Arc::clone(&connection),
        }));
    }
    declared
}
