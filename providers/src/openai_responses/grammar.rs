//! Grammar (custom) tools over the Responses API, as Pi 1.5.2 has them
//! (`resolveGrammarConstrainedSampling`, `appendGrammarToolInputJsonDelta`,
//! `closeGrammarToolInputJson`).
//!
//! With `compat.supportsOpenAIGrammarTools`, a tool whose `constrainedSampling` is a grammar
//! (`openai_lark`, else `openai_regex`) over an object schema with exactly one required string
//! property goes out as a `custom` tool; the model's free-form input comes back as that
//! property's value, and streams to the client as the JSON text of `{"<property>":"<input>"}`.

use std::collections::BTreeMap;

use pi_core::agent::ToolDefinition;
use pi_core::model::Model;
use serde_json::Value;

use crate::compat_flag;

/// A tool's grammar: its syntax (`lark` or `regex`), definition and input property.
pub(crate) struct Grammar {
    pub syntax: &'static str,
    pub definition: String,
    pub input_property: String,
}

/// Whether the model's endpoint takes grammar tools.
pub(crate) fn supported(model: &Model) -> bool {
    compat_flag(model, "supportsOpenAIGrammarTools", false)
}

/// The grammar `tool` is sent with, when it has a usable one.
pub(crate) fn grammar(tool: &ToolDefinition) -> Option<Grammar> {
    let config = tool.constrained_sampling.as_ref()?;
    if config.get("type").and_then(Value::as_str) != Some("grammar") {
        return None;
    }
    let variant = |name: &str| {
        config
            .pointer(&format!("/variants/{name}"))
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
    };
    let (syntax, definition) = match (variant("openai_lark"), variant("openai_regex")) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => return None,
    };
    Some(Grammar {
        syntax,
        definition: definition.to_owned(),
        input_property: input_property(&tool.parameters)?,
    })
}

/// The schema's one required property, which must be a declared string.
fn input_property(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let [Value::String(name)] = schema.get("required")?.as_array()?.as_slice() else {
        return None;
    };
    let declared = schema.get("properties")?.get(name)?;
    (declared.get("type").and_then(Value::as_str) == Some("string")).then(|| name.clone())
}

/// Each grammar tool's input property by tool name (none when the model takes no grammars).
pub(crate) fn input_properties(
    model: &Model,
    tools: &[ToolDefinition],
) -> BTreeMap<String, String> {
    if !supported(model) {
        return BTreeMap::new();
    }
    tools
        .iter()
        .filter_map(|tool| grammar(tool).map(|g| (tool.name.clone(), g.input_property)))
        .collect()
}

/// A custom tool call's input as it streams: the text so far, and the JSON text sent for it.
#[derive(Debug, Default)]
pub(crate) struct InputBuffer {
    pub property: String,
    pub input: String,
    started: bool,
    closed: bool,
    /// JSON text made before the call's first delta was sent (the item's initial input).
    unsent: String,
}

impl InputBuffer {
    /// A buffer for `property`, holding the item's `initial` input.
    pub fn new(property: String, initial: &str) -> Self {
        let mut buffer = InputBuffer {
            property,
            ..InputBuffer::default()
        };
        buffer.unsent = buffer.push(initial).unwrap_or_default();
        buffer
    }

    /// Adds `delta`: the JSON text to send, if any.
    pub fn append(&mut self, delta: &str) -> Result<Option<String>, String> {
        let json = self.append_json(delta)?;
        Ok(self.with_unsent(json))
    }

    /// Ends the input (`final_input` replacing what streamed when it extends it).
    pub fn close(&mut self, final_input: Option<&str>) -> Result<Option<String>, String> {
        let json = self.close_json(final_input)?;
        Ok(self.with_unsent(json))
    }

    fn with_unsent(&mut self, json: Option<String>) -> Option<String> {
        if self.unsent.is_empty() {
            return json;
        }
        let sent = std::mem::take(&mut self.unsent) + json.as_deref().unwrap_or("");
        Some(sent)
    }

    fn changed_after_close(&self) -> String {
        format!(
            "grammar tool input for property \"{}\" changed after it was closed",
            self.property
        )
    }

    fn append_json(&mut self, delta: &str) -> Result<Option<String>, String> {
        if self.closed {
            return Err(self.changed_after_close());
        }
        Ok(self.push(delta))
    }

    /// Adds `delta` to an open input: the JSON text made for it, if any.
    fn push(&mut self, delta: &str) -> Option<String> {
        if delta.is_empty() {
            return None;
        }
        self.input.push_str(delta);
        Some(self.start() + &escaped(delta))
    }

    fn close_json(&mut self, final_input: Option<&str>) -> Result<Option<String>, String> {
        if self.closed {
            return match final_input {
                None => Ok(None),
                Some(text) if text == self.input => Ok(None),
                Some(_) => Err(self.changed_after_close()),
            };
        }
        let rest = match final_input {
            None => String::new(),
            Some(text) => match text.strip_prefix(self.input.as_str()) {
                Some(rest) => rest.to_owned(),
                None => {
                    return Err(format!(
                        "grammar tool input for property \"{}\" changed non-monotonically",
                        self.property
                    ))
                }
            },
        };
        if let Some(text) = final_input {
            self.input = text.to_owned();
        }
        self.closed = true;
        Ok(Some(format!("{}{}\"}}", self.start(), escaped(&rest))))
    }

    fn start(&mut self) -> String {
        if self.started {
            return String::new();
        }
        self.started = true;
        format!("{{{}:\"", quoted(&self.property))
    }
}

/// `JSON.stringify(text)`.
fn quoted(text: &str) -> String {
    pi_core::json::to_string(&Value::String(text.to_owned())).unwrap_or_default()
}

/// `JSON.stringify(text).slice(1, -1)`.
fn escaped(text: &str) -> String {
    let q = quoted(text);
    q.get(1..q.len().saturating_sub(1)).unwrap_or("").to_owned()
}
