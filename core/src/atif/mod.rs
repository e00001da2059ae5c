//! ATIF, the Agent Trajectory Interchange Format (Harbor's RFC 0001): a run as a list of steps
//! other tools can read, train on and grade. These types are the format's objects with its
//! field names; optional fields are omitted when absent, because the format's validator
//! refuses unknown fields and many readers treat `null` differently from absence. Pi's own
//! data (entry ids, stop reasons, errors) goes in each object's `extra`. `convert` builds a
//! trajectory from a session file's active branch or from a run's messages.

pub mod convert;

use serde::Serialize;
use serde_json::{Map, Value};

/// The schema version written: the newest the reference models accept.
pub const SCHEMA_VERSION: &str = "ATIF-v1.8";

/// A whole trajectory: the root object of an ATIF file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trajectory {
    pub schema_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub agent: Agent,
    pub steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_metrics: Option<FinalMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// The agent that ran: name, version, its default model and the tools it offered the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agent {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// OpenAI's function-calling shape: `{type: "function", function: {name, description,
    /// parameters}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_definitions: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// Who a step comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    System,
    User,
    Agent,
}

/// One step: a system text, a user message, or one model response with the observations of
/// its tool calls.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// 1, 2, 3, … in order.
    pub step_id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    pub source: Source,
    /// Agent steps only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// Agent steps only: Pi's thinking level when the response was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    pub message: String,
    /// Agent steps only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Agent steps only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Agent steps only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// A step repeated for context (after a compaction, the messages the model still sees):
    /// not counted again in the final metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_copied_context: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_call_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// A tool call of an agent step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub function_name: String,
    /// Always an object (the format requires one).
    pub arguments: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// What the environment answered a step's tool calls with.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Observation {
    pub results: Vec<ObservationResult>,
}

/// One tool result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObservationResult {
    /// The call answered; it is one of the same step's `tool_calls`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// One model call's tokens and cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Every input token: uncached, read from the cache and written to it.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The part of `prompt_tokens` read from the cache.
    pub cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}

/// The sums over the steps that are not copies.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FinalMetrics {
    pub total_prompt_tokens: u64,
    pub total_completion_tokens: u64,
    pub total_cached_tokens: u64,
    pub total_cost_usd: f64,
    /// Steps that are not copies (`notes` says so when copies exist).
    pub total_steps: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Map<String, Value>>,
}
