//! Which files a stretch of conversation read and changed, for the summary's file lists.

use std::collections::BTreeSet;

use indexmap::IndexSet;
use serde_json::Value;

use crate::message::{AgentMessage, ContentBlock};

/// Paths touched by `read`, `write` and `edit` tool calls, each set in the order the paths were
/// first touched (Pi's `Set`s, which a `session_before_compact` handler iterates); the summary's
/// lists ([`FileOps::lists`]) are sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileOps {
    pub read: IndexSet<String>,
    pub written: IndexSet<String>,
    pub edited: IndexSet<String>,
}

impl FileOps {
    /// Adds the paths of an assistant message's `read`/`write`/`edit` calls, or of those a
    /// tool result records its tool made (Pi 1.5's `nestedCalls`, a codemode script's calls).
    pub fn add_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant(m) => {
                for block in &m.content {
                    if let ContentBlock::ToolCall(call) = block {
                        self.add_call(&call.name, &call.arguments);
                    }
                }
            }
            AgentMessage::ToolResult(m) => {
                let calls = m
                    .extra
                    .get("nestedCalls")
                    .and_then(|record| record.get("calls"))
                    .and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    if let Some(name) = call.get("name").and_then(Value::as_str) {
                        // A call whose arguments the record left out touched no path it knows.
                        self.add_call(name, call.get("arguments").unwrap_or(&Value::Null));
                    }
                }
            }
            _ => {}
        }
    }

    fn add_call(&mut self, name: &str, arguments: &Value) {
        let Some(path) = arguments
            .get("path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        else {
            return;
        };
        let set = match name {
            "read" => &mut self.read,
            "write" => &mut self.written,
            "edit" => &mut self.edited,
            _ => return,
        };
        set.insert(path.to_owned());
    }

    /// Adds the lists an earlier summary recorded in its `details` (`readFiles` -> read,
    /// `modifiedFiles` -> edited).
    pub fn add_details(&mut self, details: &Value) {
        let list = |key: &str| {
            details
                .get(key)
                .and_then(Value::as_array)
                .map(|files| {
                    files
                        .iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        self.read.extend(list("readFiles"));
        self.edited.extend(list("modifiedFiles"));
    }

    /// `(readFiles, modifiedFiles)`: modified = edited + written; read = read minus modified;
    /// both sorted as JavaScript sorts strings (UTF-16 code units).
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<&String> = self.edited.iter().chain(&self.written).collect();
        let mut read: Vec<String> = self
            .read
            .iter()
            .filter(|f| !modified.contains(f))
            .cloned()
            .collect();
        let mut modified: Vec<String> = modified.into_iter().cloned().collect();
        let js_order = |a: &String, b: &String| a.encode_utf16().cmp(b.encode_utf16());
        read.sort_by(js_order);
        modified.sort_by(js_order);
        (read, modified)
    }
}

/// The file lists as they are appended to a summary (empty when there are none).
pub fn format_file_operations(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            modified.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_tool_results_nested_calls_count_as_the_calls_they_record() {
        let message: AgentMessage = serde_json::from_value(serde_json::json!({
            "role": "toolResult", "toolCallId": "c", "toolName": "script", "content": [],
            "isError": false, "timestamp": 1,
            "nestedCalls": {"calls": [
                {"id": "c/1", "name": "read", "status": "ok", "arguments": {"path": "a.txt"}},
                {"id": "c/2", "name": "edit", "status": "ok", "arguments": {"path": "b.txt"}},
                {"id": "c/3", "name": "write", "status": "ok", "argumentsBytes": 9000},
                {"id": "c/4", "name": "bash", "status": "ok", "arguments": {"path": "c.txt"}}
            ], "complete": false}
        }))
        .unwrap();
        let mut ops = FileOps::default();
        ops.add_message(&message);
        assert_eq!(ops.lists(), (vec!["a.txt".into()], vec!["b.txt".into()]));
    }
}
