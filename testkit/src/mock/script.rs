//! A mock script read into typed steps: one step per model request, in order, with the fields
//! the kit's Python mock understands (`conformance/mock/mock_llm.py`). Reading checks every field,
//! so a wrong script is reported up front, naming the step and field, instead of as a broken reply.

use std::fmt;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::pyjson;

/// What the mock answers, one step per model request; both APIs share the cursor.
#[derive(Debug, Clone)]
pub struct Script {
    steps: Vec<Step>,
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub struct Step {
    /// The step as written minus `raw_sse`: what the request log records as `response`.
    pub logged: Map<String, Value>,
    /// HTTP status; anything but 200 is an error reply with `error_body`.
    pub status: u16,
    /// The JSON body of an error reply, when the script gives one (it may be `null`).
    pub error_body: Option<Value>,
    /// Extra response headers, values spelled as Python's `str()` spells them.
    pub headers: Vec<(String, String)>,
    /// Wait before the response headers.
    pub delay: Duration,
    /// Wait before each SSE chunk.
    pub chunk_delay: Duration,
    /// Wait after the content, before the finishing chunks.
    pub hang: Duration,
    /// After `hang`, wait until this file (relative to the mock's folder) exists, at most 60 s: a
    /// test holds the reply open until it is done talking to the client.
    pub hang_until_file: Option<String>,
    /// Reasoning deltas.
    pub reasoning: Vec<String>,
    /// Text deltas (a string in the script is one delta).
    pub text: Vec<String>,
    /// Tool calls, their arguments streamed in pieces.
    pub tool_calls: Vec<ToolCall>,
    /// The OpenAI finish reason; `None` means `tool_calls` if there are tool calls, else `stop`.
    pub finish_reason: Option<String>,
    /// Prompt tokens reported (default 10).
    pub input_tokens: u64,
    /// Completion tokens reported (default 5).
    pub output_tokens: u64,
    /// Close the connection before the chunk with this index.
    pub drop_after: Option<u64>,
    /// Raw body pieces sent verbatim instead of a generated stream.
    pub raw_sse: Option<Vec<String>>,
}

/// One scripted tool call.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The call id as written (`None`: the mock makes one up from the request number).
    pub id: Option<Value>,
    /// The tool's name.
    pub name: String,
    /// The arguments JSON text, in the pieces it is streamed in.
    pub pieces: Vec<String>,
    /// The whole arguments text, which the Responses done events carry.
    pub arguments: String,
    /// Responses only: a custom tool call's input (a grammar tool's free-form text), streamed in
    /// the script's `chunks`, else in two halves; the other APIs stream the arguments.
    pub input: Option<(String, Vec<String>)>,
    /// `"chunks": []`: over Responses the value comes with the done events only.
    pub no_deltas: bool,
}

/// What is wrong with a script, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The step's index, when the problem is inside one.
    pub step: Option<usize>,
    /// The field path inside the step (e.g. `tool_calls[0].name`).
    pub field: String,
    /// What the field should have been.
    pub problem: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(step) => write!(f, "step {step}, field `{}`: {}", self.field, self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

impl std::error::Error for ScriptError {}

impl Script {
    /// Reads a script: a JSON list of step objects.
    pub fn parse(value: &Value) -> Result<Script, ScriptError> {
        let Some(items) = value.as_array() else {
            return Err(ScriptError {
                step: None,
                field: String::new(),
                problem: "a script must be a JSON list of step objects".into(),
            });
        };
        let steps = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                Step::parse(item).map_err(|(field, problem)| ScriptError {
                    step: Some(i),
                    field,
                    problem,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Script { steps })
    }

    /// The step at `index`, or the "script exhausted" reply past the end.
    pub fn step(&self, index: usize) -> Step {
        self.steps
            .get(index)
            .cloned()
            .unwrap_or_else(Step::exhausted)
    }

    /// How many steps the script has.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the script has no steps (every request gets the exhausted reply).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

type FieldError = (String, String);

fn bad(field: &str, problem: &str) -> FieldError {
    (field.to_string(), problem.to_string())
}

impl Step {
    /// The reply once every step is used: a plain text saying so.
    pub fn exhausted() -> Step {
        let text = "[mock: script exhausted]".to_string();
        let mut logged = Map::new();
        logged.insert("text".into(), json!([text]));
        Step {
            logged,
            status: 200,
            error_body: None,
            headers: Vec::new(),
            delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            hang: Duration::ZERO,
            hang_until_file: None,
            reasoning: Vec::new(),
            text: vec![text],
            tool_calls: Vec::new(),
            finish_reason: None,
            input_tokens: 10,
            output_tokens: 5,
            drop_after: None,
            raw_sse: None,
        }
    }

    fn parse(value: &Value) -> Result<Step, FieldError> {
        let Some(map) = value.as_object() else {
            return Err(bad("", "a step must be a JSON object"));
        };
        let mut logged = map.clone();
        logged.remove("raw_sse");
        let usage = match map.get("usage") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(usage)) => usage.clone(),
            Some(_) => {
                return Err(bad(
                    "usage",
                    "must be an object {\"input\": n, \"output\": n}",
                ))
            }
        };
        Ok(Step {
            logged,
            status: status(map.get("status"))?,
            error_body: map.get("error_body").cloned(),
            headers: headers(map.get("headers"))?,
            delay: millis(map, "delay_ms")?,
            chunk_delay: millis(map, "chunk_delay_ms")?,
            hang: millis(map, "hang_ms")?,
            hang_until_file: match map.get("hang_until_file") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(bad("hang_until_file", "a file name")),
            },
            reasoning: strings(map.get("reasoning"), "reasoning", false)?,
            text: strings(map.get("text"), "text", true)?,
            tool_calls: tool_calls(map.get("tool_calls"))?,
            finish_reason: match map.get("finish_reason") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.is_empty() => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(bad("finish_reason", "must be a string")),
            },
            input_tokens: count(usage.get("input"), "usage.input", 10)?,
            output_tokens: count(usage.get("output"), "usage.output", 5)?,
            drop_after: match map.get("drop_after") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or_else(|| {
                    bad("drop_after", "must be a whole number of chunks (0 or more)")
                })?),
            },
            raw_sse: match map.get("raw_sse") {
                None => None,
                Some(v) => Some(strings(Some(v), "raw_sse", false)?),
            },
        })
    }
}

fn status(value: Option<&Value>) -> Result<u16, FieldError> {
    let code = match value {
        None => return Ok(200),
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(_) => None,
    };
    code.filter(|c| (100..=999).contains(c))
        .and_then(|c| u16::try_from(c).ok())
        .ok_or_else(|| bad("status", "must be an HTTP status code (100-999)"))
}

fn headers(value: Option<&Value>) -> Result<Vec<(String, String)>, FieldError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(bad(
                "headers",
                "must be an object of header names to values",
            ))
        }
    };
    map.iter()
        .map(|(name, value)| match value {
            Value::Array(_) | Value::Object(_) => Err(bad(
                &format!("headers.{name}"),
                "must be a string, number or boolean",
            )),
            scalar => {
                let text = pyjson::str_of(scalar);
                if name.contains([':', '\r', '\n']) || text.contains(['\r', '\n']) {
                    Err(bad(
                        &format!("headers.{name}"),
                        "cannot hold a colon in the name or a line break",
                    ))
                } else {
                    Ok((name.clone(), text))
                }
            }
        })
        .collect()
}

fn millis(map: &Map<String, Value>, field: &str) -> Result<Duration, FieldError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(Duration::ZERO),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|ms| *ms >= 0.0)
            .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
            .ok_or_else(|| bad(field, "must be a number of milliseconds (0 or more)")),
        Some(_) => Err(bad(field, "must be a number of milliseconds")),
    }
}

fn count(value: Option<&Value>, field: &str, default: u64) -> Result<u64, FieldError> {
    match value {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| bad(field, "must be a whole number of tokens")),
    }
}

/// A list of strings; `one_string` also takes a single string as a one-item list.
fn strings(
    value: Option<&Value>,
    field: &str,
    one_string: bool,
) -> Result<Vec<String>, FieldError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) if one_string => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(&format!("{field}[{i}]"), "must be a string"))
            })
            .collect(),
        Some(_) if one_string => Err(bad(field, "must be a string or a list of strings")),
        Some(_) => Err(bad(field, "must be a list of strings")),
    }
}

fn tool_calls(value: Option<&Value>) -> Result<Vec<ToolCall>, FieldError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(bad(
                "tool_calls",
                "must be a list of {\"name\", \"arguments\"} objects",
            ))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let field = |name: &str| format!("tool_calls[{i}]{name}");
            let Some(call) = item.as_object() else {
                return Err(bad(&field(""), "must be an object"));
            };
            let Some(name) = call.get("name").and_then(Value::as_str) else {
                return Err(bad(&field(".name"), "must be a string (the tool's name)"));
            };
            let arguments = match call.get("arguments") {
                None => "{}".to_string(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => pyjson::dumps(other),
            };
            let chunks = strings(call.get("chunks"), &field(".chunks"), false)?;
            let pieces = |text: &str| {
                if chunks.is_empty() {
                    split_in_two(text)
                } else {
                    chunks.clone()
                }
            };
            let input = match call.get("input") {
                None => None,
                Some(Value::String(s)) => Some((s.clone(), pieces(s))),
                Some(_) => {
                    return Err(bad(
                        &field(".input"),
                        "must be a string (a custom call's input)",
                    ))
                }
            };
            Ok(ToolCall {
                id: call.get("id").cloned(),
                name: name.to_string(),
                pieces: pieces(&arguments),
                no_deltas: call
                    .get("chunks")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty),
                arguments,
                input,
            })
        })
        .collect()
}

/// The arguments text in two halves (by characters), or whole when shorter than two.
fn split_in_two(text: &str) -> Vec<String> {
    let chars = text.chars().count();
    if chars < 2 {
        return vec![text.to_string()];
    }
    let mid = text
        .char_indices()
        .nth(chars / 2)
        .map_or(text.len(), |(at, _)| at);
    vec![text[..mid].to_string(), text[mid..].to_string()]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_field() {
        let script = Script::parse(&json!([{
            "status": "429", "headers": {"retry-after": 0}, "delay_ms": 5, "text": "hi",
            "tool_calls": [{"name": "read", "arguments": {"path": "é.txt"}}],
            "usage": {"input": 3}, "drop_after": 0, "raw_sse": ["x"]
        }]))
        .unwrap();
        let step = script.step(0);
        assert_eq!(step.status, 429);
        assert_eq!(
            step.headers,
            vec![("retry-after".to_string(), "0".to_string())]
        );
        assert_eq!(step.delay, Duration::from_millis(5));
        assert_eq!(step.text, vec!["hi"]);
        assert_eq!(
            step.tool_calls[0].pieces,
            vec!["{\"path\": \"\\", "u00e9.txt\"}"],
            "split by characters of Python's spelling"
        );
        assert_eq!((step.input_tokens, step.output_tokens), (3, 5));
        assert_eq!(step.drop_after, Some(0));
        assert!(!step.logged.contains_key("raw_sse"));
        assert_eq!(script.step(1).text, vec!["[mock: script exhausted]"]);
    }

    #[test]
    fn names_the_wrong_field() {
        let err = Script::parse(&json!([{}, {"tool_calls": [{"arguments": {}}]}])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "step 1, field `tool_calls[0].name`: must be a string (the tool's name)"
        );
        assert!(Script::parse(&json!({"script": []})).is_err());
        assert!(Script::parse(&json!([{"status": "soon"}])).is_err());
        assert!(Script::parse(&json!([{"text": 3}])).is_err());
        let err = Script::parse(&json!([{"tool_calls": [{"name": "codemode", "input": {}}]}]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "step 0, field `tool_calls[0].input`: must be a string (a custom call's input)"
        );
    }

    /// A custom call's input streams in its own halves (or the chunks given) over Responses; the
    /// other APIs stream the arguments, and `"chunks": []` is no deltas only over Responses.
    #[test]
    fn a_custom_call_keeps_its_arguments_for_the_other_apis() {
        let script = Script::parse(&json!([{"tool_calls": [
            {"name": "codemode", "input": "abcd"},
            {"name": "read", "arguments": "{}", "chunks": []}]}]))
        .unwrap();
        let calls = script.step(0).tool_calls;
        assert_eq!(
            calls[0].input,
            Some(("abcd".into(), vec!["ab".into(), "cd".into()]))
        );
        assert_eq!(calls[0].pieces, vec!["{", "}"]);
        assert!(!calls[0].no_deltas);
        assert!(calls[1].no_deltas);
        assert_eq!(calls[1].pieces, vec!["{", "}"]);
    }

    #[test]
    fn splits_by_characters() {
        assert_eq!(split_in_two("a"), vec!["a"]);
        assert_eq!(split_in_two("ééé"), vec!["é", "éé"]);
    }
}
