//! The tools and hooks a scenario can name.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::agent::convert::convert_to_llm;
use crate::agent::{
    AfterToolCall, AgentHooks, BeforeToolCall, Block, ToolExecution, ToolResultOverride, ToolSpec,
    TurnSummary,
};
use crate::message::{AgentMessage, ContentBlock, Message};

/// A tool by name: Pi-like schemas for `read`, `bash`, `write`, `edit` (with its legacy-argument
/// shim) and `echo`; any other name accepts any object.
pub fn tool(name: &str, sequential: bool) -> ToolSpec {
    let parameters = match name {
        "read" => json!({"type": "object", "properties": {"path": {"type": "string"},
            "offset": {"type": "number"}, "limit": {"type": "number"}}, "required": ["path"]}),
        "bash" => json!({"type": "object", "properties": {"command": {"type": "string"},
            "timeout": {"type": "number"}}, "required": ["command"]}),
        "write" => json!({"type": "object", "properties": {"path": {"type": "string"},
            "content": {"type": "string"}}, "required": ["path", "content"]}),
        "edit" => json!({"type": "object", "properties": {"path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"], "additionalProperties": false}}},
            "required": ["path", "edits"]}),
        "echo" | "slow" | "fast" => json!({"type": "object", "properties": {
            "value": {"type": "string"}}, "required": ["value"]}),
        _ => json!({"type": "object"}),
    };
    let mut spec = ToolSpec::new(name, format!("The {name} tool."), parameters);
    if sequential {
        spec.execution_mode = Some(ToolExecution::Sequential);
    }
    if name == "edit" {
        spec.prepare_arguments = Some(Arc::new(fold_legacy_edit));
    }
    spec
}

/// The edit tool's shim: top-level `oldText`/`newText` become one more entry of `edits`.
fn fold_legacy_edit(args: &Value) -> Result<Value, String> {
    let Value::Object(map) = args else {
        return Ok(args.clone());
    };
    let (Some(old), Some(new)) = (map.get("oldText"), map.get("newText")) else {
        return Ok(args.clone());
    };
    let mut out = map.clone();
    let mut edits = match out.remove("edits") {
        Some(Value::Array(edits)) => edits,
        _ => Vec::new(),
    };
    edits.push(json!({"oldText": old, "newText": new}));
    out.remove("oldText");
    out.remove("newText");
    out.insert("edits".into(), Value::Array(edits));
    Ok(Value::Object(out))
}

/// Hooks configured by `hook:` lines.
#[derive(Clone, Debug, Default)]
pub struct ScriptHooks {
    rules: Vec<Vec<String>>,
}

impl ScriptHooks {
    /// Adds a rule (`block bash reason…`, `after read terminate`, `stop-after-turn 2`, …).
    pub fn add(&mut self, rule: &str) -> Result<(), String> {
        let words: Vec<String> = rule.split_whitespace().map(str::to_owned).collect();
        let known = [
            "block",
            "before-throws",
            "after",
            "after-throws",
            "stop-after-turn",
            "transform",
            "transform-throws",
            "convert",
            "convert-throws",
        ];
        match words.first() {
            Some(w) if known.contains(&w.as_str()) => {
                self.rules.push(words);
                Ok(())
            }
            _ => Err(format!("unknown hook {rule:?}")),
        }
    }

    fn rule(&self, kind: &str) -> Option<&[String]> {
        self.rules
            .iter()
            .rev()
            .find(|r| r[0] == kind)
            .map(|r| &r[1..])
    }

    fn tool_rule(&self, kind: &str, tool: &str) -> Option<&[String]> {
        self.rules
            .iter()
            .rev()
            .find(|r| r[0] == kind && r.get(1).is_some_and(|t| t == tool || t == "*"))
            .map(|r| &r[2..])
    }
}

impl AgentHooks for ScriptHooks {
    fn transform_context(
        &self,
        messages: &[AgentMessage],
    ) -> Result<Option<Vec<AgentMessage>>, String> {
        if let Some(message) = self.rule("transform-throws") {
            return Err(message.join(" "));
        }
        match self.rule("transform") {
            Some([keep, n]) if keep == "keep-last" => {
                let n: usize = n.parse().unwrap_or(0);
                Ok(Some(messages[messages.len().saturating_sub(n)..].to_vec()))
            }
            _ => Ok(None),
        }
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        if let Some(message) = self.rule("convert-throws") {
            return Err(message.join(" "));
        }
        match self.rule("convert") {
            Some([which]) if which == "coding-agent" => Ok(convert_to_llm(messages)),
            _ => Ok(messages.iter().filter_map(AgentMessage::as_llm).collect()),
        }
    }

    /// A machine's hooks do not change (later rules make new hooks for a new machine), and each
    /// rule converts message by message.
    fn converts_each_message_alone(&self) -> bool {
        true
    }

    fn before_tool_call(&self, call: &BeforeToolCall<'_>) -> Result<Option<Block>, String> {
        if let Some(message) = self.tool_rule("before-throws", &call.tool_call.name) {
            return Err(message.join(" "));
        }
        Ok(self
            .tool_rule("block", &call.tool_call.name)
            .map(|reason| Block {
                reason: (!reason.is_empty()).then(|| reason.join(" ")),
                terminate: None,
            }))
    }

    fn after_tool_call(
        &self,
        call: &AfterToolCall<'_>,
    ) -> Result<Option<ToolResultOverride>, String> {
        if let Some(message) = self.tool_rule("after-throws", &call.tool_call.name) {
            return Err(message.join(" "));
        }
        let Some(action) = self.tool_rule("after", &call.tool_call.name) else {
            return Ok(None);
        };
        let mut over = ToolResultOverride::default();
        match action.first().map(String::as_str) {
            Some("terminate") => over.terminate = Some(true),
            Some("error") => over.is_error = Some(true),
            Some("content") => over.content = Some(vec![ContentBlock::text(action[1..].join(" "))]),
            _ => return Err(format!("unknown after-hook action {action:?}")),
        }
        Ok(Some(over))
    }

    fn should_stop_after_turn(&self, turn: &TurnSummary<'_>) -> Result<bool, String> {
        let Some([n]) = self.rule("stop-after-turn") else {
            return Ok(false);
        };
        let turns = turn
            .new_messages
            .iter()
            .filter(|m| matches!(m, AgentMessage::Assistant(_)))
            .count();
        Ok(n.parse::<usize>().is_ok_and(|n| turns >= n))
    }
}
