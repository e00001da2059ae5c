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
use crate::js_value::truthy;

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

/// How Pi 1.5.2 words its refusal of a grammar tool (`resolveGrammarConstrainedSampling`,
/// `inferGrammarInputProperty`): the tool's name, then the reason.
const REFUSED_TOOL: &str = "Tool \"{tool}\" cannot use grammar constrained sampling: {reason}.";
const NO_VARIANT: &str = "no supported grammar variant was provided";
const NOT_AN_OBJECT: &str = "grammar constrained sampling requires an object parameter schema";
const NOT_ONE_REQUIRED: &str =
    "grammar constrained sampling requires exactly one required string property";
const UNDECLARED: &str = "grammar constrained sampling requires a properties entry for {property}";
const NOT_A_STRING: &str = "grammar constrained sampling property {property} must have type string";
/// Pi 1.5.2's refusal of a grammar tool's call whose input is not a string
/// (`getGrammarToolInput`).
const CALL_INPUT_NOT_A_STRING: &str =
    "Grammar tool call \"{tool}\" requires argument \"{property}\" to be a string.";

/// The grammar `tool` is sent with: none when it asks for no grammar, the refusal's text (Pi
/// 1.5.2's, which fails the call before it is sent) when it asks for one it cannot have.
pub(crate) fn grammar(tool: &ToolDefinition) -> Result<Option<Grammar>, String> {
    let Some(config) = tool.constrained_sampling.as_ref() else {
        return Ok(None);
    };
    if config.get("type").and_then(Value::as_str) != Some("grammar") {
        return Ok(None);
    }
    let refused = |reason: String| fill(REFUSED_TOOL, &[("tool", &tool.name), ("reason", &reason)]);
    let variant = |name: &str| {
        config
            .pointer(&format!("/variants/{name}"))
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
    };
    let (syntax, definition) = match (variant("openai_lark"), variant("openai_regex")) {
        (Some(lark), _) => ("lark", lark),
        (None, Some(regex)) => ("regex", regex),
        (None, None) => return Err(refused(NO_VARIANT.to_owned())),
    };
    Ok(Some(Grammar {
        syntax,
        definition: definition.to_owned(),
        input_property: input_property(&tool.parameters).map_err(refused)?,
    }))
}

/// The schema's one required property, which must be a declared string (or why not, in Pi
/// 1.5.2's words).
fn input_property(schema: &Value) -> Result<String, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(NOT_AN_OBJECT.to_owned());
    }
    let required = schema.get("required").and_then(Value::as_array);
    let Some([Value::String(name)]) = required.map(Vec::as_slice) else {
        return Err(NOT_ONE_REQUIRED.to_owned());
    };
    // A properties entry counts when JavaScript would call it true.
    let declared = schema
        .get("properties")
        .and_then(|properties| properties.get(name))
        .filter(|entry| truthy(entry))
        .ok_or_else(|| fill(UNDECLARED, &[("property", name)]))?;
    if declared.get("type").and_then(Value::as_str) != Some("string") {
        return Err(fill(NOT_A_STRING, &[("property", name)]));
    }
    Ok(name.clone())
}

/// `template` with each `{name}` of `values` filled in, left to right (a value's own braces are
/// left alone).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let known = after.find('}').and_then(|close| {
            let name = &after[..close];
            let value = values.iter().find(|(key, _)| *key == name)?.1;
            Some((value, close))
        });
        match known {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Each grammar tool's input property by tool name (none when the model takes no grammars);
/// a refused tool has none (its call is never sent, see [`refused_tool`]).
pub(crate) fn input_properties(
    model: &Model,
    tools: &[ToolDefinition],
) -> BTreeMap<String, String> {
    if !supported(model) {
        return BTreeMap::new();
    }
    tools
        .iter()
        .filter_map(|tool| {
            let grammar = grammar(tool).ok().flatten()?;
            Some((tool.name.clone(), grammar.input_property))
        })
        .collect()
}

/// The first of `tools` the model refuses as a grammar tool, as Pi 1.5.2 words it (before any
/// message is converted); none when the model takes no grammars.
pub(crate) fn refused_tool(model: &Model, tools: &[ToolDefinition]) -> Option<String> {
    if !supported(model) {
        return None;
    }
    tools.iter().find_map(|tool| grammar(tool).err())
}

/// A grammar tool call's input: the `property` argument, which must be a string.
pub(crate) fn call_input<'a>(
    tool: &str,
    arguments: &'a Value,
    property: &str,
) -> Result<&'a str, String> {
    arguments
        .get(property)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            fill(
                CALL_INPUT_NOT_A_STRING,
                &[("tool", tool), ("property", property)],
            )
        })
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
