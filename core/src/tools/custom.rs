//! A custom tool's declaration as data (the part of Pi 1.5.2's `ToolDefinition` that shapes the
//! model request and the system prompt): what a run's configuration, and so a cassette, holds of
//! a tool defined by a program (an SDK user, an MCP server, an extension), so that a replay
//! declares it exactly as the run did without the program that defined it. Running it is the
//! interpreter's job.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{ToolExecution, ToolSpec};
use crate::tools::definitions::builtin_tool;

/// A tool defined outside the harness, as the model and the system prompt see it. Fields Pi's
/// `ToolDefinition` has only for its terminal UI (`renderCall`, `renderShell`, ...) or for
/// features this harness does not run (`outputSchema` for codemode, `exposure`) are not here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomToolDefinition {
    /// The name the model calls it by; a built-in of the same name is replaced by it.
    pub name: String,
    /// A human-readable name (Pi's UI; kept in the configuration for the SDK's listings).
    pub label: String,
    /// What the model is told the tool does.
    pub description: String,
    /// The one line listing the tool in the system prompt's tools section; without it the
    /// tool is not listed there (Pi's rule for custom tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_snippet: Option<String>,
    /// Rules added to the system prompt's guidelines while the tool is active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_guidelines: Vec<String>,
    /// The JSON Schema of the arguments, which they are validated against before a call runs.
    pub parameters: Value,
    /// Pi 1.5's `constrainedSampling`; `false` encodes as absent does, and is declared as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
    /// `sequential` makes every batch holding a call to this tool run one call at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ToolExecution>,
}

impl CustomToolDefinition {
    /// A tool with a name, description and parameter schema; its label is its name.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let name = name.into();
        CustomToolDefinition {
            label: name.clone(),
            name,
            description: description.into(),
            parameters,
            ..CustomToolDefinition::default()
        }
    }

    /// The tool as the agent loop knows it.
    pub fn spec(&self) -> ToolSpec {
        let mut spec = ToolSpec::new(&self.name, &self.description, self.parameters.clone());
        spec.label = self.label.clone();
        spec.execution_mode = self.execution_mode;
        spec.constrained_sampling = self.constrained_sampling.clone();
        spec
    }

    /// The snippet as Pi's `_normalizePromptSnippet` leaves it: on one line, runs of white
    /// space as one space, trimmed; `None` when nothing is left.
    pub fn normalized_snippet(&self) -> Option<String> {
        let text = self.prompt_snippet.as_deref()?;
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!line.is_empty()).then_some(line)
    }

    /// The guidelines as Pi's `_normalizePromptGuidelines` leaves them: trimmed, empty ones
    /// and repeats dropped, in order.
    pub fn normalized_guidelines(&self) -> Vec<String> {
        let mut list: Vec<String> = Vec::new();
        for rule in self.prompt_guidelines.iter().map(|r| r.trim()) {
            if !rule.is_empty() && !list.iter().any(|r| r == rule) {
                list.push(rule.to_owned());
            }
        }
        list
    }
}

/// The tools a run declares, in order, as Pi 1.5.2 composes them: the built-ins named in
/// `builtins`, each replaced in its place by a custom tool of its name, then the other custom
/// tools in their order. `Err` names a built-in that does not exist.
pub fn compose_tools(
    builtins: &[String],
    custom: &[CustomToolDefinition],
) -> Result<Vec<ToolSpec>, String> {
    let named = |name: &str| custom.iter().find(|t| t.name == name);
    builtins
        .iter()
        .map(|name| match named(name) {
            Some(tool) => Ok(tool.spec()),
            None => builtin_tool(name)
                .map(|t| t.spec())
                .ok_or_else(|| name.clone()),
        })
        .chain(
            custom
                .iter()
                .filter(|t| !builtins.contains(&t.name))
                .map(|t| Ok(t.spec())),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::CustomToolDefinition;

    #[test]
    fn snippets_and_guidelines_are_normalized_as_pi_normalizes_them() {
        let mut tool = CustomToolDefinition::new("t", "d", json!({"type": "object"}));
        tool.prompt_snippet = Some("  Look\r\nup \t a  word \n".into());
        tool.prompt_guidelines = vec![" a ".into(), "".into(), "a".into(), "b".into()];
        assert_eq!(tool.normalized_snippet().as_deref(), Some("Look up a word"));
        assert_eq!(tool.normalized_guidelines(), ["a", "b"]);
        tool.prompt_snippet = Some(" \n ".into());
        assert_eq!(tool.normalized_snippet(), None);
    }
}
