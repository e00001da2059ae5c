//! A tool defined outside the harness as the agent loop holds it: a custom tool's declaration
//! as data (the part of Pi 1.5.2's `ToolDefinition` that shapes the model request and the
//! system prompt), and the deferred tools `tool_search` can load, which a tool call carries to
//! the interpreter. The loop's own types, so that the tools (`crate::tools`) build on the loop
//! and never the other way round.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::ToolNamespace;
use super::{ToolExecution, ToolExposure, ToolSpec};

/// A tool defined outside the harness, as the model and the system prompt see it, and how the
/// session reaches it (its exposure, namespace and whether registering it activates it). Fields
/// Pi's `ToolDefinition` has only for its terminal UI (`renderCall`, `renderShell`, ...) are not
/// here.
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
    /// How the model reaches the tool (Pi 1.5's `exposure`); absent is `direct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<ToolExposure>,
    /// The group the tool belongs to, which `pi.getAllTools()` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<ToolNamespace>,
    /// The author's hints on what the tool does (MCP's annotations), which `pi.getAllTools()`
    /// reports and nothing here reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `false`: registering the tool does not activate it (naming it in `--tools` or
    /// `pi.setActiveTools` does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_active: Option<bool>,
    /// The tool rewrites its calls' arguments before they are validated (Pi's
    /// `prepareArguments`, a function only its extension can run): each call waits at a
    /// `prepare_arguments` hook point for the arguments to validate, or the error it threw.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepare_arguments: bool,
    /// Declaring the tool changes how the others are declared (Pi 1.5.2's `prepareLoadout`, a
    /// function only its extension can run, which codemode has): each turn that declares it
    /// waits at a `prepare_loadout` hook point for the descriptions it gives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prepare_loadout: bool,
    /// Where it came from (Pi's `sourceInfo` of the extension that registered it), which
    /// `pi.getAllTools()` reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_info: Option<Value>,
    /// Pi's `outputSchema`: what a result's `structuredContent` holds, which a codemode
    /// script's call resolves to and `describeTool()` shows (Pi's MCP tools declare one: the
    /// MCP result schema, a resource tool's payload). Only the extension host, which runs
    /// codemode, reads it; an extension's own tool's schema the host knows already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
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
        spec.exposure = self.exposure();
        spec.default_active = self.default_active;
        spec.namespace = self.namespace.clone();
        spec.annotations = self.annotations.clone();
        spec.prepared_by_hook = self.prepare_arguments;
        spec.prepares_loadout = self.prepare_loadout;
        spec.source_info = self.source_info.clone();
        spec.output_schema = self.output_schema.clone();
        spec
    }

    /// Its exposure, `direct` when it declares none.
    pub fn exposure(&self) -> ToolExposure {
        self.exposure.unwrap_or_default()
    }

    /// Whether registering it activates it (Pi's `_isActivatedOnRegistration`).
    pub fn activated_on_registration(&self) -> bool {
        self.exposure()
            .activated_on_registration(self.default_active)
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

/// A tool `tool_search` can load (a tool of `deferred` exposure): its declaration, and its
/// namespace, which a run's configuration records so that a replay loads what the run loaded.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchableTool {
    pub tool: CustomToolDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<ToolNamespace>,
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
