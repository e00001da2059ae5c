//! MCP tools as Pi 1.5.2 declares them (`extensions/mcp/tools.js` `createMcpToolDefinition`):
//! the name from `naming`, the label `server/tool`, the description (the tool's, else its title,
//! else a sentence naming it), the input schema with `type: "object"` and `properties` filled in,
//! the exposure from the server's config, the four boolean annotation hints, and the output
//! schema it declares.

use pi_core::tools::custom::CustomToolDefinition;
use serde_json::{json, Map, Value};

use crate::config::{Scope, ServerEntry, Transport};
use crate::naming::{assign_tool_names, mcp_namespace};
use crate::output_schemas::mcp_result_schema;

/// The annotation hints Pi passes on (`pi.getAllTools()` reports them).
const ANNOTATION_HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// One MCP tool as a Pi tool.
#[derive(Clone, Debug, PartialEq)]
pub struct McpToolDefinition {
    /// `mcp__<server>__<tool>`, sanitised, hashed on collision.
    pub name: String,
    /// `<server>/<tool>`.
    pub label: String,
    pub description: String,
    /// The JSON Schema the model fills in.
    pub parameters: Value,
    /// Pi's tool exposure: the server exposure, with `codemode` declared as `deferred`.
    pub exposure: String,
    /// The server's name for the tool, which `tools/call` takes.
    pub server_tool: String,
    pub server: String,
    /// The boolean hints among the tool's annotations, when it has any.
    pub annotations: Option<Map<String, Value>>,
    /// The structured result the tool declares (its `outputSchema`), which Pi's MCP result
    /// schema holds under `structuredContent` ([`mcp_result_schema`]).
    pub output_schema: Option<Value>,
}

impl McpToolDefinition {
    /// The tool as a custom tool's declaration, which a run's configuration (and so its
    /// cassette) holds. Pi gives MCP tools no prompt snippet or guidelines, so they are not
    /// listed in the system prompt's tools section. Its annotation hints and its source (Pi's
    /// built-in MCP extension registers it) are what `pi.getAllTools()` reports; its output
    /// schema is Pi's MCP result schema; its server's namespace is added by whoever knows the
    /// connection ([`crate::custom_tool`]).
    pub fn custom_definition(&self) -> CustomToolDefinition {
        CustomToolDefinition {
            label: self.label.clone(),
            annotations: self.annotations.clone().map(Value::Object),
            source_info: Some(mcp_source_info()),
            output_schema: Some(mcp_result_schema(self.output_schema.as_ref())),
            ..CustomToolDefinition::new(&self.name, &self.description, self.parameters.clone())
        }
    }
}

/// The `sourceInfo` Pi 1.5.2 gives the tools its built-in MCP extension registers.
pub fn mcp_source_info() -> Value {
    json!({"path": "builtin:mcp", "source": "builtin", "scope": "temporary", "origin": "top-level"})
}

/// pi-mcp's `normalizeMcpInputSchema`: `type` defaults to `object`, `properties` to `{}`.
pub fn normalize_input_schema(schema: &Value) -> Value {
    let mut out = Map::new();
    let source = schema.as_object().cloned().unwrap_or_default();
    let ty = source
        .get("type")
        .cloned()
        .filter(|t| !t.is_null())
        .unwrap_or(json!("object"));
    for (key, value) in &source {
        out.insert(key.clone(), value.clone());
    }
    out.insert("type".into(), ty);
    if !out.contains_key("properties") {
        out.insert("properties".into(), json!({}));
    }
    Value::Object(out)
}

/// The definitions of a server's tools (each the JSON of an MCP `Tool`), in list order.
pub fn tool_definitions(entry: &ServerEntry, tools: &[Value]) -> Vec<McpToolDefinition> {
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let assigned = assign_tool_names(&entry.name, &names);
    tools
        .iter()
        .zip(names.iter().zip(assigned))
        .map(|(tool, (server_tool, name))| {
            let title = tool
                .get("title")
                .and_then(Value::as_str)
                .or_else(|| tool.pointer("/annotations/title").and_then(Value::as_str))
                .filter(|t| !t.is_empty());
            let own = tool
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty());
            let description = own
                .or(title)
                .map(str::to_string)
                .unwrap_or_else(|| format!("MCP tool {server_tool} from server {}", entry.name));
            let hints: Map<String, Value> = ANNOTATION_HINTS
                .iter()
                .filter_map(|hint| {
                    let value = tool.pointer(&format!("/annotations/{hint}"))?;
                    value
                        .is_boolean()
                        .then(|| (hint.to_string(), value.clone()))
                })
                .collect();
            let exposure = match entry.tool_exposure(server_tool) {
                "codemode" => "deferred",
                other => other,
            };
            McpToolDefinition {
                name,
                label: format!("{}/{server_tool}", entry.name),
                description,
                parameters: normalize_input_schema(tool.get("inputSchema").unwrap_or(&Value::Null)),
                exposure: exposure.to_string(),
                server_tool: server_tool.to_string(),
                server: entry.name.clone(),
                annotations: (!hints.is_empty()).then_some(hints),
                output_schema: tool.get("outputSchema").filter(|s| s.is_object()).cloned(),
            }
        })
        .collect()
}

/// Checks a recording's MCP servers (`config.mcpServers`: each `{"name", "tools"}` as the
/// server listed them) against the tools it could declare to the model (`config.customTools`
/// and the deferred tools of `config.toolLoadout`): every
/// declared tool of a listed server's namespace must be one of its listed tools, declared as
/// [`tool_definitions`] declares it. A replay declares the tools from `customTools`, so an edit
/// of either one alone would make the header say tools the run did not have; the error names
/// the field and the tool.
pub fn check_recorded_servers(
    servers: &[Value],
    declared: &[CustomToolDefinition],
) -> Result<(), String> {
    for (index, server) in servers.iter().enumerate() {
        let field = format!("config.mcpServers[{index}]");
        let name = server
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{field}: no \"name\""))?;
        // A server listed by its name alone connected after the session started: the run's
        // configuration declares none of its tools.
        let tools = match server.get("tools") {
            None => &Vec::new(),
            Some(tools) => tools
                .as_array()
                .ok_or_else(|| format!("{field} ({name}): no \"tools\" list"))?,
        };
        // Only the server's name shapes a declaration; exposure decides whether it is offered.
        let entry = ServerEntry {
            name: name.to_owned(),
            config: Map::new(),
            transport: Transport::Http {
                url: String::new(),
                headers: Vec::new(),
            },
            source: std::path::PathBuf::new(),
            scope: Scope::Global,
            override_path: None,
        };
        let listed = tool_definitions(&entry, tools);
        let prefix = format!("{}__", mcp_namespace(name));
        for tool in declared.iter().filter(|t| t.name.starts_with(&prefix)) {
            let Some(definition) = listed.iter().find(|d| d.name == tool.name) else {
                return Err(format!(
                    "{field} ({name}) does not list the tool {} that config.customTools declares",
                    tool.name
                ));
            };
            // The namespace is the server's (its name and alias are checked; its description
            // and instructions come from the config and the connection, which are not here).
            let namespace_ok = tool
                .namespace
                .as_ref()
                .is_none_or(|ns| ns.name == mcp_namespace(name) && ns.aliases == [name]);
            let expected = CustomToolDefinition {
                namespace: tool.namespace.clone(),
                ..definition.custom_definition()
            };
            if !namespace_ok || expected != *tool {
                return Err(format!(
                    "{field} ({name}) lists the tool {} otherwise than config.customTools declares it",
                    tool.name
                ));
            }
        }
    }
    Ok(())
}
