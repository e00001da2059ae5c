//! Pi's seven built-in tools as the model sees them: names, descriptions, parameter schemas,
//! and the snippet and guidelines each adds to the system prompt (`definitions.json`, generated
//! from the original by `scripts/gen-tool-definitions.mjs`).

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::ToolDefinition;

const DATA: &str = include_str!("definitions.json");

/// One built-in tool's definition.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltinTool {
    pub name: String,
    pub label: String,
    pub description: String,
    #[serde(default)]
    pub prompt_snippet: Option<String>,
    #[serde(default)]
    pub prompt_guidelines: Vec<String>,
    pub parameters: Value,
}

impl BuiltinTool {
    /// What a model request carries for this tool.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

/// read, bash, edit, write, grep, find, ls.
pub fn builtin_tools() -> &'static [BuiltinTool] {
    static TOOLS: OnceLock<Vec<BuiltinTool>> = OnceLock::new();
    TOOLS.get_or_init(|| serde_json::from_str(DATA).unwrap_or_default())
}

/// The built-in tool of this name.
pub fn builtin_tool(name: &str) -> Option<&'static BuiltinTool> {
    builtin_tools().iter().find(|t| t.name == name)
}
