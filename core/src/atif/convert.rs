//! A Pi run as an ATIF trajectory: a session file's active branch (the entries from the root
//! to the leaf, following parent ids), or the messages a run ended (an eval trial's
//! transcript).
//!
//! What a session does not hold is rebuilt as this build would send it: the system prompt
//! (Pi's default for the session's working directory, with the tools offered; no
//! context files, skills or custom prompt, which are not recorded) and the tool definitions
//! (Pi's default four, and each other built-in tool the run called; a run's own tools when
//! it says which). The trajectory's `extra.pi` says both were rebuilt.
//!
//! Context edits are kept as the model saw them:
//! - a compaction is a system step holding the summary, marked
//!   `extra.context_management = {type: "compaction", boundary: "replace"}`; the messages the
//!   model still sees after it (from the compaction's first kept entry) follow it again as
//!   steps marked `is_copied_context`, so the context after the boundary is exactly what the
//!   model was sent, and the copies are not counted twice in the final metrics;
//! - a failed or aborted response (a failed attempt Pi retried, or the last one) stays its
//!   own agent step with its usage and cost, its error in `extra.pi`, and
//!   `extra.context_management = {type: "failed_response", boundary: "drop"}`: Pi leaves it
//!   out of every later request, so its content is never merged into the step that succeeded.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{
    Agent, FinalMetrics, Metrics, Observation, ObservationResult, Source, Step, ToolCall,
    Trajectory, SCHEMA_VERSION,
};
use crate::session::file::{parse_session, SessionFileError};
use crate::session::ids::IdGenerator;
use crate::session::time::{iso_from_ms, ms_from_iso};
use crate::session::tree::SessionTree;
use crate::system_prompt::{build_system_prompt, DocPaths, SystemPromptInputs};
use crate::tools::definitions::builtin_tool;
use crate::tools::selection::DEFAULT_TOOL_NAMES as DEFAULT_TOOLS;

/// What the conversion needs from the build: its version and where its documentation is
/// (both are part of the system prompt this build would send).
#[derive(Clone, Debug, Default)]
pub struct Build {
    pub agent_version: String,
    pub docs: DocPaths,
}

/// Why a file is not converted.
#[derive(Debug, thiserror::Error)]
pub enum AtifError {
    #[error("not a session file: {0}")]
    NotASession(#[from] SessionFileError),
}

/// The trajectory of a session file's active branch.
pub fn from_session(text: &str, build: &Build) -> Result<Trajectory, AtifError> {
    let parsed = parse_session(text, &mut IdGenerator::new(0))?;
    let header = parsed.header.clone();
    let tree = SessionTree::from_entries(parsed.header, parsed.entries, true);
    let path: Vec<Value> = tree
        .branch_path(None)
        .into_iter()
        .map(|entry| serde_json::to_value(entry).unwrap_or(Value::Null))
        .collect();
    let messages = path.iter().filter_map(|e| e.get("message"));
    let mut converter = Converter::new(&header.cwd, tool_names(messages), build);
    converter.entries(&path, false);
    let mut pi = Map::new();
    pi.insert("session_version".into(), json!(header.version));
    pi.insert("cwd".into(), json!(header.cwd));
    if let Some(leaf) = tree.leaf_id() {
        pi.insert("leaf_id".into(), json!(leaf));
    }
    if let Some(parent) = &header.parent_session {
        pi.insert("parent_session".into(), json!(parent));
    }
    Ok(converter.finish(Some(header.id), pi))
}

/// What a run's trajectory is built from beside its messages: what a session file's header
/// and entries would hold.
#[derive(Clone, Copy, Debug)]
pub struct RunSetup<'a> {
    /// The working directory the system prompt names, absolute as a session's `cwd` is.
    pub cwd: &'a str,
    /// The tools offered, in order (empty: none); `None`: Pi's default four, and every other
    /// built-in tool the run called.
    pub tools: Option<&'a [String]>,
    /// The compactions of the run's context, in order.
    pub compactions: &'a [RunCompaction],
}

/// A compaction of a run's context, as the agent's `compaction_end` event reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunCompaction {
    /// How many of the run's messages had ended before it.
    pub after_messages: usize,
    /// Why it happened (`manual`, `threshold`, `overflow`).
    pub reason: String,
    pub summary: String,
    pub tokens_before: u64,
    /// The agent's own session entry the kept messages start at.
    pub first_kept_entry_id: String,
}

/// The trajectory of a run's messages, in the order they ended (Pi's message objects, as an
/// eval trial's transcript holds them). `run_id` names the run.
///
/// A compaction is a boundary step between the messages that ended before it and after it.
/// Unlike a session's, the messages it kept are not repeated after it: a run's events name
/// the first kept message by an id of the agent's own session, which its messages do not
/// carry (`extra.pi.kept_messages` says `"not recorded"`).
pub fn from_messages(
    messages: &[Value],
    run_id: &str,
    setup: &RunSetup<'_>,
    build: &Build,
) -> Trajectory {
    let names = match setup.tools {
        Some(tools) => tools.to_vec(),
        None => tool_names(messages.iter()),
    };
    let mut converter = Converter::new(setup.cwd, names, build);
    let mut compactions = setup.compactions.iter().peekable();
    for index in 0..=messages.len() {
        while let Some(compaction) = compactions.next_if(|c| c.after_messages <= index) {
            converter.run_compaction(compaction);
        }
        let Some(message) = messages.get(index) else {
            break;
        };
        let timestamp = message
            .get("timestamp")
            .and_then(Value::as_u64)
            .map(iso_from_ms);
        let next = messages.get(index + 1);
        converter.message(message, timestamp, None, next, false);
    }
    for compaction in compactions {
        converter.run_compaction(compaction);
    }
    let mut pi = Map::new();
    pi.insert("run".into(), json!(run_id));
    pi.insert("cwd".into(), json!(setup.cwd));
    converter.finish(Some(run_id.to_owned()), pi)
}

/// The tools offered: Pi's default four, then every other built-in tool the run called.
fn tool_names<'a>(messages: impl Iterator<Item = &'a Value>) -> Vec<String> {
    let mut names: Vec<String> = DEFAULT_TOOLS.iter().map(|n| (*n).to_owned()).collect();
    for message in messages {
        for block in blocks(message.get("content")) {
            if block.get("type").and_then(Value::as_str) != Some("toolCall") {
                continue;
            }
            let Some(name) = block.get("name").and_then(Value::as_str) else {
                continue;
            };
            if builtin_tool(name).is_some() && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// A valid ISO-8601 timestamp for the step, or none (a hostile or broken one is dropped).
fn normalized(timestamp: Option<&str>) -> Option<String> {
    timestamp
        .and_then(ms_from_iso)
        .and_then(|ms| u64::try_from(ms).ok())
        .map(iso_from_ms)
}

fn blocks(content: Option<&Value>) -> &[Value] {
    content
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A message's text: a string, or its text blocks one per line, images as placeholders (ATIF
/// refers to images by file, and an export writes no files beside the trajectory).
fn text_of(content: Option<&Value>) -> String {
    if let Some(text) = content.and_then(Value::as_str) {
        return text.to_owned();
    }
    let mut parts = Vec::new();
    for block in blocks(content) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(str_of(block, "text").to_owned()),
            Some("image") => parts.push(format!("[image: {}]", str_of(block, "mimeType"))),
            _ => {}
        }
    }
    parts.join("\n")
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn u64_of(value: Option<&Value>, key: &str) -> u64 {
    value
        .and_then(|v| v.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// `extra` with Pi's fields under `pi`, and anything else beside it.
fn extra(pi: Map<String, Value>, more: Option<(&str, Value)>) -> Option<Map<String, Value>> {
    let mut extra = Map::new();
    if let Some((key, value)) = more {
        extra.insert(key.into(), value);
    }
    if !pi.is_empty() {
        extra.insert("pi".into(), Value::Object(pi));
    }
    (!extra.is_empty()).then_some(extra)
}

fn pi_fields<const N: usize>(fields: [(&str, Value); N]) -> Map<String, Value> {
    fields
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// Builds the steps one entry or message at a time.
struct Converter {
    agent_version: String,
    tool_names: Vec<String>,
    steps: Vec<Step>,
    /// The model of the last response or model change, `provider/id`.
    model: Option<String>,
    /// The model of the first response: the trajectory's default.
    first_model: Option<String>,
    /// The thinking level of the last change on the branch.
    thinking_level: Option<String>,
    /// The step holding each tool call, by call id.
    calls: BTreeMap<String, usize>,
}

impl Converter {
    fn new(cwd: &str, tool_names: Vec<String>, build: &Build) -> Self {
        let names: Vec<&str> = tool_names.iter().map(String::as_str).collect();
        let inputs = SystemPromptInputs {
            cwd: cwd.to_owned(),
            docs: build.docs.clone(),
            ..SystemPromptInputs::default()
        }
        .with_builtin_tools(&names);
        // Built-in tools and no custom section: the names are always valid.
        let system_prompt = build_system_prompt(&inputs).unwrap_or_default();
        let mut converter = Converter {
            agent_version: build.agent_version.clone(),
            tool_names,
            steps: Vec::new(),
            model: None,
            first_model: None,
            thinking_level: None,
            calls: BTreeMap::new(),
        };
        converter.push(Source::System, system_prompt, None, |step| {
            step.extra = extra(pi_fields([("kind", json!("system_prompt"))]), None);
        });
        converter
    }

    fn push(
        &mut self,
        source: Source,
        message: String,
        timestamp: Option<String>,
        fill: impl FnOnce(&mut Step),
    ) -> usize {
        let index = self.steps.len();
        let mut step = Step {
            step_id: u32::try_from(index + 1).unwrap_or(u32::MAX),
            timestamp,
            source,
            model_name: None,
            reasoning_effort: None,
            message,
            reasoning_content: None,
            tool_calls: None,
            observation: None,
            metrics: None,
            is_copied_context: None,
            llm_call_count: None,
            extra: None,
        };
        fill(&mut step);
        self.steps.push(step);
        index
    }

    /// The entries of a branch, in order; `copied` repeats them after a compaction.
    fn entries(&mut self, path: &[Value], copied: bool) {
        for (index, entry) in path.iter().enumerate() {
            let timestamp = normalized(entry.get("timestamp").and_then(Value::as_str));
            let id = entry.get("id").and_then(Value::as_str);
            match entry.get("type").and_then(Value::as_str) {
                Some("message") => {
                    let next = path[index + 1..].iter().find_map(|e| e.get("message"));
                    if let Some(message) = entry.get("message") {
                        self.message(message, timestamp, id, next, copied);
                    }
                }
                Some("compaction") if !copied => {
                    self.compaction(entry, timestamp);
                    let first_kept = entry.get("firstKeptEntryId").and_then(Value::as_str);
                    let kept = path[..index]
                        .iter()
                        .position(|e| e.get("id").and_then(Value::as_str) == first_kept);
                    if let Some(start) = kept {
                        self.entries(&path[start..index], true);
                    }
                }
                Some("branch_summary") => {
                    let pi = pi_fields([
                        ("kind", json!("branch_summary")),
                        ("entry_id", json!(id)),
                        (
                            "from_id",
                            entry.get("fromId").cloned().unwrap_or(Value::Null),
                        ),
                    ]);
                    self.push(
                        Source::System,
                        str_of(entry, "summary").into(),
                        timestamp,
                        |s| {
                            s.extra = extra(pi, None);
                            s.is_copied_context = copied.then_some(true);
                        },
                    );
                }
                Some("custom_message") => {
                    let pi = pi_fields([
                        ("kind", json!("custom_message")),
                        ("entry_id", json!(id)),
                        ("custom_type", json!(str_of(entry, "customType"))),
                        (
                            "display",
                            entry.get("display").cloned().unwrap_or(Value::Null),
                        ),
                    ]);
                    let text = text_of(entry.get("content"));
                    self.push(Source::User, text, timestamp, |s| {
                        s.extra = extra(pi, None);
                        s.is_copied_context = copied.then_some(true);
                    });
                }
                Some("thinking_level_change") => {
                    self.thinking_level = entry
                        .get("thinkingLevel")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                Some("model_change") => {
                    self.model = Some(format!(
                        "{}/{}",
                        str_of(entry, "provider"),
                        str_of(entry, "modelId")
                    ));
                }
                _ => {}
            }
        }
    }

    /// A compaction entry's boundary step; its index.
    fn compaction(&mut self, entry: &Value, timestamp: Option<String>) -> usize {
        let pi = pi_fields([
            ("kind", json!("compaction")),
            ("entry_id", entry.get("id").cloned().unwrap_or(Value::Null)),
            (
                "first_kept_entry_id",
                entry
                    .get("firstKeptEntryId")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            (
                "tokens_before",
                entry.get("tokensBefore").cloned().unwrap_or(Value::Null),
            ),
            (
                "from_hook",
                entry.get("fromHook").cloned().unwrap_or(Value::Null),
            ),
        ]);
        let boundary = json!({"type": "compaction", "boundary": "replace"});
        self.push(
            Source::System,
            str_of(entry, "summary").into(),
            timestamp,
            |s| {
                s.extra = extra(pi, Some(("context_management", boundary)));
            },
        )
    }

    /// A run's compaction: the boundary a session's compaction entry gives, its kept
    /// messages not repeated (a run does not say which they are).
    fn run_compaction(&mut self, compaction: &RunCompaction) {
        let entry = json!({
            "summary": compaction.summary,
            "firstKeptEntryId": compaction.first_kept_entry_id,
            "tokensBefore": compaction.tokens_before,
        });
        let index = self.compaction(&entry, None);
        if let Some(pi) = self.steps[index]
            .extra
            .as_mut()
            .and_then(|e| e.get_mut("pi"))
            .and_then(Value::as_object_mut)
        {
            pi.insert("reason".into(), json!(compaction.reason));
            pi.insert("kept_messages".into(), json!("not recorded"));
        }
    }

    /// One message; `next` is the message after it on the branch (a failed response followed
    /// by another response was retried).
    fn message(
        &mut self,
        message: &Value,
        timestamp: Option<String>,
        entry_id: Option<&str>,
        next: Option<&Value>,
        copied: bool,
    ) {
        let copy = copied.then_some(true);
        let role = str_of(message, "role");
        match role {
            // The transcript's record of the prompt (Pi 1.5): the prompt is the first step.
            "system" => {}
            "user" => {
                let pi = pi_fields([("entry_id", json!(entry_id))]);
                self.push(
                    Source::User,
                    text_of(message.get("content")),
                    timestamp,
                    |s| {
                        s.extra = extra(pi, None);
                        s.is_copied_context = copy;
                    },
                );
            }
            "assistant" => self.assistant(message, timestamp, entry_id, next, copied),
            "toolResult" => self.tool_result(message, timestamp, entry_id, copied),
            "bashExecution" => {
                let text = format!(
                    "$ {}\n{}",
                    str_of(message, "command"),
                    str_of(message, "output")
                );
                let pi = pi_fields([
                    ("kind", json!("bash_execution")),
                    ("entry_id", json!(entry_id)),
                    (
                        "exit_code",
                        message.get("exitCode").cloned().unwrap_or(Value::Null),
                    ),
                    (
                        "exclude_from_context",
                        message
                            .get("excludeFromContext")
                            .cloned()
                            .unwrap_or(Value::Null),
                    ),
                ]);
                self.push(Source::User, text, timestamp, |s| {
                    s.extra = extra(pi, None);
                    s.is_copied_context = copy;
                });
            }
            "custom" => {
                let pi = pi_fields([
                    ("kind", json!("custom_message")),
                    ("entry_id", json!(entry_id)),
                    ("custom_type", json!(str_of(message, "customType"))),
                ]);
                self.push(
                    Source::User,
                    text_of(message.get("content")),
                    timestamp,
                    |s| {
                        s.extra = extra(pi, None);
                        s.is_copied_context = copy;
                    },
                );
            }
            other => {
                let text = match message.get("summary").and_then(Value::as_str) {
                    Some(summary) => summary.to_owned(),
                    None => text_of(message.get("content")),
                };
                let pi = pi_fields([("role", json!(other)), ("entry_id", json!(entry_id))]);
                self.push(Source::System, text, timestamp, |s| {
                    s.extra = extra(pi, None);
                    s.is_copied_context = copy;
                });
            }
        }
    }

    fn assistant(
        &mut self,
        message: &Value,
        timestamp: Option<String>,
        entry_id: Option<&str>,
        next: Option<&Value>,
        copied: bool,
    ) {
        let mut texts = Vec::new();
        let mut reasoning = Vec::new();
        let mut calls = Vec::new();
        for block in blocks(message.get("content")) {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => texts.push(str_of(block, "text").to_owned()),
                Some("thinking") => reasoning.push(str_of(block, "thinking").to_owned()),
                Some("toolCall") => calls.push(tool_call(block, self.steps.len(), calls.len())),
                _ => {}
            }
        }
        let model = format!(
            "{}/{}",
            str_of(message, "provider"),
            str_of(message, "model")
        );
        self.first_model.get_or_insert_with(|| model.clone());
        self.model = Some(model.clone());
        let stop = str_of(message, "stopReason");
        let failed = stop == "error" || stop == "aborted";
        let retried = failed && next.is_some_and(|m| str_of(m, "role") == "assistant");
        let mut pi = pi_fields([
            ("entry_id", json!(entry_id)),
            ("api", message.get("api").cloned().unwrap_or(Value::Null)),
            ("stop_reason", json!(stop)),
            (
                "response_id",
                message.get("responseId").cloned().unwrap_or(Value::Null),
            ),
        ]);
        let mut boundary = None;
        if failed {
            let error = match str_of(message, "errorMessage") {
                "" => format!("the response ended: {stop}"),
                text => text.to_owned(),
            };
            pi.insert("error".into(), json!(error));
            pi.insert("retried".into(), json!(retried));
            boundary = Some((
                "context_management",
                json!({"type": "failed_response", "boundary": "drop"}),
            ));
        }
        let metrics = (!copied).then(|| metrics(message.get("usage")));
        let thinking_level = self.thinking_level.clone();
        let ids: Vec<String> = calls.iter().map(|c| c.tool_call_id.clone()).collect();
        let index = self.push(Source::Agent, texts.join("\n"), timestamp, |s| {
            s.model_name = Some(model);
            s.reasoning_effort = thinking_level;
            s.reasoning_content = (!reasoning.is_empty()).then(|| reasoning.join("\n"));
            s.tool_calls = (!calls.is_empty()).then_some(calls);
            s.metrics = metrics;
            s.llm_call_count = (!copied).then_some(1);
            s.is_copied_context = copied.then_some(true);
            s.extra = extra(pi, boundary);
        });
        for id in ids {
            self.calls.insert(id, index);
        }
    }

    fn tool_result(
        &mut self,
        message: &Value,
        timestamp: Option<String>,
        entry_id: Option<&str>,
        copied: bool,
    ) {
        let call_id = str_of(message, "toolCallId");
        let pi = pi_fields([
            ("entry_id", json!(entry_id)),
            ("tool_name", json!(str_of(message, "toolName"))),
            (
                "is_error",
                json!(message.get("isError").and_then(Value::as_bool) == Some(true)),
            ),
            ("timestamp", json!(timestamp)),
        ]);
        let content = Some(text_of(message.get("content")));
        let calling = self.calls.get(call_id).copied().filter(|&i| {
            self.steps[i]
                .tool_calls
                .as_ref()
                .is_some_and(|calls| calls.iter().any(|c| c.tool_call_id == call_id))
        });
        match calling {
            Some(index) => {
                let step = &mut self.steps[index];
                step.observation
                    .get_or_insert_with(Observation::default)
                    .results
                    .push(ObservationResult {
                        source_call_id: Some(call_id.to_owned()),
                        content,
                        extra: extra(pi, None),
                    });
            }
            None => {
                // A result whose call is not on the branch: kept, without a reference.
                let mut pi = pi;
                pi.insert("tool_call_id".into(), json!(call_id));
                self.push(Source::System, String::new(), timestamp, |s| {
                    s.observation = Some(Observation {
                        results: vec![ObservationResult {
                            source_call_id: None,
                            content,
                            extra: None,
                        }],
                    });
                    s.is_copied_context = copied.then_some(true);
                    s.extra = extra(pi, None);
                });
            }
        }
    }

    fn finish(self, session_id: Option<String>, mut pi: Map<String, Value>) -> Trajectory {
        let mut totals = FinalMetrics::default();
        let mut cache_write = 0;
        let mut copies = 0;
        for step in &self.steps {
            if step.is_copied_context == Some(true) {
                copies += 1;
                continue;
            }
            totals.total_steps += 1;
            if let Some(m) = &step.metrics {
                totals.total_prompt_tokens =
                    totals.total_prompt_tokens.saturating_add(m.prompt_tokens);
                totals.total_completion_tokens = totals
                    .total_completion_tokens
                    .saturating_add(m.completion_tokens);
                totals.total_cached_tokens =
                    totals.total_cached_tokens.saturating_add(m.cached_tokens);
                totals.total_cost_usd += m.cost_usd.unwrap_or(0.0);
                let written = m
                    .extra
                    .as_ref()
                    .and_then(|e| e.get("cache_write_tokens"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                cache_write = written.saturating_add(cache_write);
            }
        }
        totals.extra = Some(pi_fields([("cache_write_tokens", json!(cache_write))]));
        pi.insert("system_prompt".into(), json!("rebuilt"));
        pi.insert("tool_definitions".into(), json!("rebuilt"));
        let tool_definitions = self
            .tool_names
            .iter()
            .filter_map(|name| builtin_tool(name))
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                }})
            })
            .collect();
        Trajectory {
            schema_version: SCHEMA_VERSION,
            session_id,
            agent: Agent {
                name: "pi".into(),
                version: self.agent_version,
                model_name: self.first_model.or(self.model),
                tool_definitions: Some(tool_definitions),
                extra: None,
            },
            steps: self.steps,
            notes: (copies > 0).then(|| {
                format!(
                    "{copies} steps after a compaction repeat the messages the model still saw \
                     (is_copied_context); total_steps and the totals leave them out"
                )
            }),
            final_metrics: Some(totals),
            extra: Some(Map::from_iter([("pi".to_owned(), Value::Object(pi))])),
        }
    }
}

/// A tool-call block as an ATIF call: arguments that are not an object are kept in `extra`.
fn tool_call(block: &Value, step: usize, n: usize) -> ToolCall {
    let id = match block.get("id").and_then(Value::as_str) {
        Some(id) => id.to_owned(),
        None => format!("call_{}_{n}", step + 1),
    };
    let (arguments, raw) = match block.get("arguments") {
        Some(Value::Object(map)) => (map.clone(), None),
        Some(other) => (Map::new(), Some(other.clone())),
        None => (Map::new(), None),
    };
    ToolCall {
        tool_call_id: id,
        function_name: str_of(block, "name").to_owned(),
        arguments,
        extra: raw.map(|raw| Map::from_iter([("raw_arguments".to_owned(), raw)])),
    }
}

/// A response's usage: every input token (uncached, cache reads and writes) as the prompt.
fn metrics(usage: Option<&Value>) -> Metrics {
    let input = u64_of(usage, "input");
    let cache_read = u64_of(usage, "cacheRead");
    let cache_write = u64_of(usage, "cacheWrite");
    let cost = usage
        .and_then(|u| u.pointer("/cost/total"))
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite());
    Metrics {
        prompt_tokens: input.saturating_add(cache_read).saturating_add(cache_write),
        completion_tokens: u64_of(usage, "output"),
        cached_tokens: cache_read,
        cost_usd: cost,
        extra: Some(pi_fields([
            ("cache_write_tokens", json!(cache_write)),
            ("total_tokens", json!(u64_of(usage, "totalTokens"))),
        ])),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn session(entries: &[Value]) -> String {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-03-04T05:06:07.000Z","cwd":"/w"}"#,
        );
        text.push('\n');
        let mut parent = Value::Null;
        for (n, entry) in entries.iter().enumerate() {
            let mut entry = entry.clone();
            let id = format!("e{n}");
            entry["id"] = json!(id);
            if entry.get("parentId").is_none() {
                entry["parentId"] = parent;
            }
            entry["timestamp"] = json!(iso_from_ms(1_000 * n as u64));
            parent = json!(id);
            text.push_str(&format!("{entry}\n"));
        }
        text
    }

    fn user(text: &str) -> Value {
        json!({"type": "message", "message": {"role": "user", "content": text, "timestamp": 0}})
    }

    fn assistant(text: &str, stop: &str) -> Value {
        json!({"type": "message", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}], "provider": "p", "model": "m",
            "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
                      "cost": {"total": 0.5}},
            "stopReason": stop, "errorMessage": if stop == "stop" { Value::Null } else { json!("boom") },
            "timestamp": 0}})
    }

    fn messages(t: &Trajectory) -> Vec<(&str, Source, bool)> {
        t.steps[1..]
            .iter()
            .map(|s| {
                (
                    s.message.as_str(),
                    s.source,
                    s.is_copied_context == Some(true),
                )
            })
            .collect()
    }

    fn pi<'a>(step: &'a Step, key: &str) -> &'a Value {
        &step.extra.as_ref().unwrap()["pi"][key]
    }

    #[test]
    fn a_failure_the_user_answered_was_not_retried_and_both_are_paid_for() {
        let text = session(&[
            user("a"),
            assistant("", "error"),
            user("again"),
            assistant("", "aborted"),
            assistant("ok", "stop"),
        ]);
        let t = from_session(&text, &Build::default()).unwrap();
        let failed: Vec<&Step> = t
            .steps
            .iter()
            .filter(|s| {
                s.extra
                    .as_ref()
                    .is_some_and(|e| e.contains_key("context_management"))
            })
            .collect();
        assert_eq!(failed.len(), 2);
        assert_eq!(pi(failed[0], "retried"), false);
        assert_eq!(pi(failed[0], "error"), "boom");
        assert_eq!(pi(failed[1], "retried"), true);
        let totals = t.final_metrics.unwrap();
        assert_eq!(totals.total_prompt_tokens, 30);
        assert_eq!(totals.total_cost_usd, 1.5);
    }

    #[test]
    fn a_second_compaction_repeats_its_own_kept_messages_and_not_the_first_summary() {
        let text = session(&[
            user("one"),
            assistant("1", "stop"),
            user("two"),
            assistant("2", "stop"),
            json!({"type": "compaction", "summary": "S1", "firstKeptEntryId": "e2", "tokensBefore": 5}),
            user("three"),
            assistant("3", "stop"),
            json!({"type": "compaction", "summary": "S2", "firstKeptEntryId": "e4", "tokensBefore": 6}),
            user("four"),
        ]);
        let t = from_session(&text, &Build::default()).unwrap();
        use Source::{Agent, System, User};
        assert_eq!(
            messages(&t),
            [
                ("one", User, false),
                ("1", Agent, false),
                ("two", User, false),
                ("2", Agent, false),
                ("S1", System, false),
                ("two", User, true),
                ("2", Agent, true),
                ("three", User, false),
                ("3", Agent, false),
                ("S2", System, false),
                ("three", User, true),
                ("3", Agent, true),
                ("four", User, false),
            ]
        );
        let totals = t.final_metrics.unwrap();
        assert_eq!(totals.total_steps, 10);
        assert_eq!(
            totals.total_completion_tokens, 6,
            "copies are not counted again"
        );
    }

    #[test]
    fn the_thinking_level_and_model_changes_reach_the_next_responses() {
        let text = session(&[
            json!({"type": "thinking_level_change", "thinkingLevel": "high"}),
            user("a"),
            assistant("b", "stop"),
        ]);
        let t = from_session(&text, &Build::default()).unwrap();
        let answer = t.steps.last().unwrap();
        assert_eq!(answer.reasoning_effort.as_deref(), Some("high"));
        assert_eq!(answer.model_name.as_deref(), Some("p/m"));
        assert_eq!(t.agent.model_name.as_deref(), Some("p/m"));
        let value = serde_json::to_value(&t).unwrap();
        assert!(
            value["steps"][1].get("reasoning_effort").is_none(),
            "only on agent steps"
        );
        assert!(t.steps[0].message.ends_with("<cwd>\n/w\n</cwd>"));
    }
}
