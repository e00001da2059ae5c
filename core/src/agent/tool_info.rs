//! One registered tool as Pi 1.5.2's `pi.getAllTools()` describes it. Two places build it: the
//! session machine, for every tool its registry holds at a hook point
//! ([`HookState::all_tools`](super::hook_state::HookState::all_tools)), and a hook point's round
//! of handlers, for the tools one handler registered, which the handlers after it read at once
//! (Pi's `registerTool` is synchronous), before the machine has applied the registration. One
//! function, so the two descriptions cannot drift apart.

use serde_json::{json, Map, Value};

use super::config::{ToolExposure, ToolNamespace, ToolSpec};

/// What `getAllTools()` says of a tool beyond its declaration: where the registry puts it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Registered<'a> {
    /// Its exposure as the registry reports it.
    pub exposure: ToolExposure,
    /// Its namespace, when its declaration has none of its own.
    pub namespace: Option<&'a ToolNamespace>,
    /// Its rules in the system prompt (left out when empty).
    pub guidelines: &'a [String],
    /// The built-in extension or tool it comes from (`builtin:<name>`), if one.
    pub builtin: Option<&'a str>,
}

/// Pi's `getAllTools()` entry of `tool`: name, description, parameters, rules (when it has
/// some), exposure, namespace and annotations (when it has them) and its source (a built-in's,
/// or where the extension that registered it came from); and, for the extension host alone,
/// the output schema the session declares for a tool of its own (Pi's MCP tools').
pub fn tool_info(tool: &ToolSpec, registered: Registered<'_>) -> Value {
    let mut info = Map::new();
    info.insert("name".into(), json!(tool.name));
    info.insert("description".into(), json!(tool.description));
    info.insert("parameters".into(), tool.parameters.clone());
    if !registered.guidelines.is_empty() {
        info.insert("promptGuidelines".into(), json!(registered.guidelines));
    }
    info.insert("exposure".into(), json!(registered.exposure.as_str()));
    if let Some(namespace) = tool.namespace.as_ref().or(registered.namespace) {
        info.insert("namespace".into(), json!(namespace));
    }
    if let Some(annotations) = &tool.annotations {
        info.insert("annotations".into(), annotations.clone());
    }
    if let Some(source) = registered.builtin {
        info.insert(
            "sourceInfo".into(),
            json!({"path": format!("builtin:{source}"), "source": "builtin",
                "scope": "temporary", "origin": "top-level"}),
        );
    } else if let Some(source) = &tool.source_info {
        info.insert("sourceInfo".into(), source.clone());
    }
    // Not Pi's: the extension host's codemode reads it, and its `getAllTools()` leaves it out.
    if let Some(schema) = &tool.output_schema {
        info.insert("outputSchema".into(), schema.clone());
    }
    Value::Object(info)
}
