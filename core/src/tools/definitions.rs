//! Pi's eight built-in tools as the model sees them (`powershell`, Windows' shell, among them:
//! Pi registers it on every platform): names, descriptions, parameter schemas,
//! and the snippet and guidelines each adds to the system prompt (`definitions.json`, generated
//! from Pi 1.5.2 by `scripts/gen-tool-definitions.mjs`, with the `constrainedSampling` each
//! declares; `scripts/gen-system-prompt-fixtures.mjs` writes the same snippets and guidelines).

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;

use crate::agent::ToolSpec;

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
    /// How a provider may constrain sampling to the schema (Pi 1.5's `constrainedSampling`):
    /// part of the declaration the transcript's system message records.
    #[serde(default)]
    pub constrained_sampling: Option<Value>,
}

impl BuiltinTool {
    /// The tool as the agent loop knows it, with the argument repair Pi applies before
    /// validation (the edit tool's).
    pub fn spec(&self) -> ToolSpec {
        let mut spec = ToolSpec::new(&self.name, &self.description, self.parameters.clone());
        spec.label = self.label.clone();
        spec.constrained_sampling = self.constrained_sampling.clone();
        if self.name == "edit" {
            spec.prepare_arguments = Some(Arc::new(|args| Ok(prepare_edit_arguments(args))));
        }
        spec
    }
}

/// read, bash, powershell, edit, write, grep, find, ls: Pi's registry order.
pub fn builtin_tools() -> &'static [BuiltinTool] {
    static TOOLS: OnceLock<Vec<BuiltinTool>> = OnceLock::new();
    TOOLS.get_or_init(|| serde_json::from_str(DATA).unwrap_or_default())
}

/// The built-in tool of this name.
pub fn builtin_tool(name: &str) -> Option<&'static BuiltinTool> {
    builtin_tools().iter().find(|t| t.name == name)
}

/// The edit tool's repair of what models send: `edits` as a JSON string becomes the array, and
/// the legacy top-level `oldText`/`newText` become one more edit (Pi's `prepareEditArguments`).
pub fn prepare_edit_arguments(args: &Value) -> Value {
    let Some(fields) = args.as_object() else {
        return args.clone();
    };
    let mut fields = fields.clone();
    if let Some(Value::String(text)) = fields.get("edits") {
        if let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text) {
            fields.insert("edits".into(), parsed);
        }
    }
    let (Some(Value::String(old_text)), Some(Value::String(new_text))) =
        (fields.get("oldText"), fields.get("newText"))
    else {
        return Value::Object(fields);
    };
    let legacy = serde_json::json!({"oldText": old_text, "newText": new_text});
    let mut edits = match fields.get("edits") {
        Some(Value::Array(edits)) => edits.clone(),
        _ => Vec::new(),
    };
    edits.push(legacy);
    fields.remove("oldText");
    fields.remove("newText");
    fields.insert("edits".into(), Value::Array(edits));
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::prepare_edit_arguments;

    #[test]
    fn edits_sent_as_a_string_are_parsed() {
        let args = json!({"path": "a", "edits": "[{\"oldText\":\"x\",\"newText\":\"y\"}]"});
        assert_eq!(
            prepare_edit_arguments(&args),
            json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
        );
        let broken = json!({"path": "a", "edits": "[{"});
        assert_eq!(prepare_edit_arguments(&broken), broken);
    }

    #[test]
    fn legacy_fields_become_the_last_edit() {
        let args = json!({"path": "a", "oldText": "x", "newText": "y"});
        assert_eq!(
            prepare_edit_arguments(&args),
            json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})
        );
        let both =
            json!({"edits": [{"oldText": "1", "newText": "2"}], "oldText": "x", "newText": "y"});
        assert_eq!(
            prepare_edit_arguments(&both)["edits"],
            json!([{"oldText": "1", "newText": "2"}, {"oldText": "x", "newText": "y"}])
        );
        let half = json!({"path": "a", "oldText": "x"});
        assert_eq!(prepare_edit_arguments(&half), half);
    }
}
