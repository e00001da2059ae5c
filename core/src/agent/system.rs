//! The system prompt a transcript holds (Pi 1.5): its `role: "system"` messages folded in order
//! (pi-ai's `getCurrentSystemMessage` and `getCurrentTools`), and the patch that brings it to the
//! prompt and tools wanted now (`diffSystemPromptSections`, `getToolStateChanges`), which the
//! agent loop records as a new system message before the turn's request.

use serde_json::{Map, Value};

use super::{PlacedSystemMessage, ToolDefinition, ToolSpec};
use crate::message::{text_parts, AgentMessage, SystemMessage, UserContent};

/// The prompt in force after a transcript's system messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemState {
    /// The non-empty contents, in order.
    pub contents: Vec<String>,
    /// Sections by name; a patch's `null` removed one, a later text replaced it in place.
    pub sections: Map<String, Value>,
    /// The declarations in force, by name (a re-added tool moves to the end).
    pub tools: Vec<Value>,
    /// Whether any system message was seen.
    pub recorded: bool,
}

fn content_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Blocks(blocks) => text_parts(blocks).collect::<Vec<_>>().join("\n"),
    }
}

fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("name").and_then(Value::as_str)
}

impl SystemState {
    /// The state after every system message of `messages`.
    pub fn of<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> Self {
        let mut state = SystemState::default();
        for message in messages {
            if let AgentMessage::System(system) = message {
                state.apply(system);
            }
        }
        state
    }

    fn apply(&mut self, message: &SystemMessage) {
        self.recorded = true;
        let text = content_text(&message.content);
        if !text.is_empty() {
            self.contents.push(text);
        }
        for (name, value) in message.sections.iter().flatten() {
            if value.is_null() {
                self.sections.shift_remove(name);
            } else {
                self.sections.insert(name.clone(), value.clone());
            }
        }
        for removed in message.tools_removed.iter().flatten() {
            self.tools
                .retain(|tool| tool_name(tool) != tool_name(removed));
        }
        for added in message.tools_added.iter().flatten() {
            match self
                .tools
                .iter_mut()
                .find(|tool| tool_name(tool) == tool_name(added))
            {
                Some(tool) => *tool = added.clone(),
                None => self.tools.push(added.clone()),
            }
        }
    }

    /// The whole prompt in force as one system message (pi-ai's `getCurrentSystemMessage`):
    /// the contents joined by blank lines, the sections and tools when there are any, stamped
    /// `timestamp`. Pi 1.5 stores it in a compaction entry as the checkpoint the context
    /// restarts from; `None` when no system message was ever recorded.
    pub fn checkpoint(&self, timestamp: u64) -> Option<Value> {
        if !self.recorded && self.tools.is_empty() {
            return None;
        }
        let mut message = Map::new();
        message.insert("role".into(), Value::String("system".into()));
        message.insert("content".into(), Value::String(self.contents.join("\n\n")));
        if !self.sections.is_empty() {
            message.insert("sections".into(), Value::Object(self.sections.clone()));
        }
        if !self.tools.is_empty() {
            message.insert("toolsAdded".into(), Value::Array(self.tools.clone()));
        }
        message.insert("timestamp".into(), Value::from(timestamp));
        Some(Value::Object(message))
    }

    /// The system prompt the request sends (pi-ai's `getSystemMessageText` of the current
    /// system message: the contents joined by newlines, then the sections, by blank lines).
    pub fn render(&self) -> String {
        let contents = self.contents.join("\n");
        render([contents.as_str()], &self.sections)
    }
}

/// How Pi 1.5.2 words a later system message's changed section for a provider that sends it
/// mid-conversation (`renderSystemMessageUpdate`): the name, then the section's text.
pub const SECTION_UPDATED: (&str, &str) = ("Updated system prompt section \"", "\":\n\n");
/// The same for a removed section: the name between these.
pub const SECTION_REMOVED: (&str, &str) = ("Removed system prompt section \"", "\".");

/// A system message's own prompt text (pi-ai's `getSystemMessageText`): its content, then its
/// sections' texts, the empty ones left out, joined by blank lines.
pub fn message_text(message: &SystemMessage) -> String {
    let content = content_text(&message.content);
    render(
        [content.as_str()],
        message.sections.as_ref().unwrap_or(&Map::new()),
    )
}

/// A later system message as text (pi-ai's `renderSystemMessageUpdate`): its content, then
/// each section it changes or removes, in its order, joined by blank lines.
pub fn update_text(message: &SystemMessage) -> String {
    let mut parts = Vec::new();
    let content = content_text(&message.content);
    if !content.is_empty() {
        parts.push(content);
    }
    for (name, value) in message.sections.iter().flatten() {
        parts.push(match value {
            Value::Null => format!("{}{name}{}", SECTION_REMOVED.0, SECTION_REMOVED.1),
            value => {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                format!("{}{name}{}{text}", SECTION_UPDATED.0, SECTION_UPDATED.1)
            }
        });
    }
    parts.join("\n\n")
}

/// The system messages of `messages` in order, each placed after the model messages the ones
/// before it convert to (`converted_len`; the first message costs nothing). When the hooks
/// convert each message alone (`alone`), a prefix's length is the sum of its parts', so only
/// the stretches between system messages are converted, each once; otherwise each prefix is.
pub fn placed<E>(
    messages: &[AgentMessage],
    alone: bool,
    converted_len: impl Fn(&[AgentMessage]) -> Result<usize, E>,
) -> Result<Vec<PlacedSystemMessage>, E> {
    let mut placed = Vec::new();
    let (mut start, mut at) = (0, 0);
    for (index, message) in messages.iter().enumerate() {
        if let AgentMessage::System(system) = message {
            if index > 0 && alone {
                at += converted_len(&messages[start..index])?;
                start = index;
            } else if index > 0 {
                at = converted_len(&messages[..index])?;
            }
            placed.push(PlacedSystemMessage {
                at,
                message: system.clone(),
            });
        }
    }
    Ok(placed)
}

/// The system prompt the request sends for these contents and sections (pi-ai's
/// `getSystemMessageText`): each content, then each section's text, the empty ones left out,
/// joined by blank lines.
pub fn render<'a>(
    contents: impl IntoIterator<Item = &'a str>,
    sections: &'a Map<String, Value>,
) -> String {
    contents
        .into_iter()
        .chain(sections.values().filter_map(Value::as_str))
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A tool's declaration as a system message records it (pi-ai's `toToolDeclaration`).
pub fn tool_declaration(tool: &ToolSpec) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".into(), Value::String(tool.name.clone()));
    declaration.insert(
        "description".into(),
        Value::String(tool.description.clone()),
    );
    declaration.insert("parameters".into(), tool.parameters.clone());
    if let Some(sampling) = &tool.constrained_sampling {
        declaration.insert("constrainedSampling".into(), sampling.clone());
    }
    Value::Object(declaration)
}

/// The request's tools a system message's declarations name ([`tool_declaration`] read back),
/// for the providers that send tool changes where they happen.
pub fn tool_definitions(declarations: &[Value]) -> Vec<ToolDefinition> {
    declarations
        .iter()
        .map(|tool| ToolDefinition {
            name: tool["name"].as_str().unwrap_or_default().to_owned(),
            description: tool["description"].as_str().unwrap_or_default().to_owned(),
            parameters: tool.get("parameters").cloned().unwrap_or(Value::Null),
            constrained_sampling: tool.get("constrainedSampling").cloned(),
        })
        .collect()
}

/// The sections patch from `previous` to `wanted`: each new or changed section, then `null`
/// for each removed one; `None` when nothing changed.
pub fn diff_sections(
    previous: &Map<String, Value>,
    wanted: &Map<String, Value>,
) -> Option<Map<String, Value>> {
    let mut patch = Map::new();
    for (name, text) in wanted {
        if previous.get(name) != Some(text) {
            patch.insert(name.clone(), text.clone());
        }
    }
    for name in previous.keys() {
        if !wanted.contains_key(name) {
            patch.insert(name.clone(), Value::Null);
        }
    }
    (!patch.is_empty()).then_some(patch)
}

/// Tools added (new or changed declarations) and removed (`{name}` of each gone or changed
/// one) from `previous` to `wanted`.
pub fn tool_changes(previous: &[Value], wanted: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let find = |list: &'_ [Value], name: Option<&str>| -> Option<Value> {
        list.iter().find(|t| tool_name(t) == name).cloned()
    };
    let added = wanted
        .iter()
        .filter(|tool| find(previous, tool_name(tool)).as_ref() != Some(*tool))
        .cloned()
        .collect();
    let removed = previous
        .iter()
        .filter(|tool| find(wanted, tool_name(tool)).as_ref() != Some(*tool))
        .map(|tool| {
            let mut name = Map::new();
            name.insert(
                "name".into(),
                Value::String(tool_name(tool).unwrap_or_default().to_owned()),
            );
            Value::Object(name)
        })
        .collect();
    (added, removed)
}

/// The system message that brings the prompt of `messages` to `sections` and `tools`, stamped
/// `now`; `None` when it already is.
pub fn update(
    messages: &[AgentMessage],
    sections: &Map<String, Value>,
    tools: &[Value],
    now: u64,
) -> Option<SystemMessage> {
    let state = SystemState::of(messages);
    let patch = diff_sections(&state.sections, sections);
    let (added, removed) = tool_changes(&state.tools, tools);
    if patch.is_none() && added.is_empty() && removed.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: UserContent::Text(String::new()),
        sections: patch,
        timestamp: now,
        tools_added: (!added.is_empty()).then_some(added),
        tools_removed: (!removed.is_empty()).then_some(removed),
        extra: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn system(value: Value) -> AgentMessage {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn patches_fold_into_the_prompt_in_force() {
        let messages = [
            system(
                json!({"role":"system","content":"","sections":{"preamble":"P","tools":"<tools>\nT\n</tools>","cwd":"<cwd>\n/a\n</cwd>"},"timestamp":1,"toolsAdded":[{"name":"read"},{"name":"bash"}]}),
            ),
            system(
                json!({"role":"system","content":"","sections":{"tools":null,"cwd":"<cwd>\n/b\n</cwd>","notes":"N"},"timestamp":2,"toolsRemoved":[{"name":"read"}]}),
            ),
        ];
        let state = SystemState::of(&messages);
        assert_eq!(state.render(), "P\n\n<cwd>\n/b\n</cwd>\n\nN");
        assert_eq!(state.tools, vec![json!({"name":"bash"})]);
        let checkpoint = state.checkpoint(9).unwrap();
        assert_eq!(
            crate::json::to_string(&checkpoint).unwrap(),
            r#"{"role":"system","content":"","sections":{"preamble":"P","cwd":"<cwd>\n/b\n</cwd>","notes":"N"},"toolsAdded":[{"name":"bash"}],"timestamp":9}"#,
            "1.5.2's key order: the tools before the time"
        );
        assert_eq!(SystemState::of(&[]).checkpoint(9), None);
    }

    #[test]
    fn an_unchanged_prompt_needs_no_message_and_a_changed_one_only_its_difference() {
        let first = update(
            &[],
            json!({"preamble":"P","cwd":"C"}).as_object().unwrap(),
            &[json!({"name":"read"})],
            5,
        )
        .unwrap();
        let line = crate::json::to_string(&AgentMessage::System(first.clone())).unwrap();
        assert_eq!(
            line,
            r#"{"role":"system","content":"","sections":{"preamble":"P","cwd":"C"},"timestamp":5,"toolsAdded":[{"name":"read"}]}"#
        );
        let transcript = [AgentMessage::System(first)];
        assert_eq!(
            update(
                &transcript,
                json!({"preamble":"P","cwd":"C"}).as_object().unwrap(),
                &[json!({"name":"read"})],
                6
            ),
            None
        );
        let patch = update(
            &transcript,
            json!({"preamble":"P"}).as_object().unwrap(),
            &[json!({"name":"read","x":1})],
            7,
        )
        .unwrap();
        assert_eq!(
            crate::json::to_string(&AgentMessage::System(patch)).unwrap(),
            r#"{"role":"system","content":"","sections":{"cwd":null},"timestamp":7,"toolsAdded":[{"name":"read","x":1}],"toolsRemoved":[{"name":"read"}]}"#
        );
    }
}
