//! The events Pi emits, in Pi's JSON shape: a model response's stream
//! ([`AssistantMessageEvent`]), the agent loop's ([`AgentEvent`]) and the session's
//! ([`SessionEvent`]). `--mode json` and `--mode rpc` print exactly these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, Extra, StopReason, ToolCall, Usage,
};
use crate::model::ThinkingLevel;
use crate::partial::PartialMessage;

/// One event of a streamed model response; every event but the last two carries the message as
/// it is after that event (`partial`). Pi 1.5 writes these delta-only: the `partial` is kept for
/// the loop's own state and never written (nor expected when read).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AssistantMessageEvent {
    Start {
        #[serde(skip)]
        partial: PartialMessage,
    },
    TextStart {
        content_index: usize,
        #[serde(skip)]
        partial: PartialMessage,
    },
    TextDelta {
        content_index: usize,
        delta: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    TextEnd {
        content_index: usize,
        content: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    ThinkingStart {
        content_index: usize,
        #[serde(skip)]
        partial: PartialMessage,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    #[serde(rename = "toolcall_start")]
    ToolCallStart {
        content_index: usize,
        /// Pi 1.5: the call's id and name as the block held them when it started.
        id: String,
        tool_name: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    #[serde(rename = "toolcall_delta")]
    ToolCallDelta {
        content_index: usize,
        delta: String,
        #[serde(skip)]
        partial: PartialMessage,
    },
    #[serde(rename = "toolcall_end")]
    ToolCallEnd {
        content_index: usize,
        #[serde(with = "tool_call_block")]
        tool_call: ToolCall,
        #[serde(skip)]
        partial: PartialMessage,
    },
    Done {
        reason: StopReason,
        message: AssistantMessage,
    },
    Error {
        reason: StopReason,
        error: AssistantMessage,
    },
}

/// A tool call written as the content block it is (`"type": "toolCall"` first), as Pi writes
/// the `toolCall` of a `toolcall_end` event.
mod tool_call_block {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::message::{ContentBlock, ToolCall};

    pub(super) fn serialize<S: Serializer>(
        call: &ToolCall,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            call: &'a ToolCall,
        }
        Tagged {
            kind: "toolCall",
            call,
        }
        .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<ToolCall, D::Error> {
        match ContentBlock::deserialize(deserializer)? {
            ContentBlock::ToolCall(call) => Ok(call),
            _ => Err(serde::de::Error::custom("expected a toolCall block")),
        }
    }
}

/// What a tool returns (pi-agent-core `AgentToolResult`): content for the model, details for
/// people and programs, and whether the run may end after this batch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminate: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResult {
    /// The result Pi builds for a failure: one text block and `details: {}`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(message)],
            details: Some(Value::Object(serde_json::Map::new())),
            terminate: None,
            extra: Extra::new(),
        }
    }
}

/// The agent loop's events (pi-agent-core `AgentEvent`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    AgentStart,
    /// The messages created during this run, in the order they were emitted.
    AgentEnd {
        messages: Vec<AgentMessage>,
        /// Pi 1.5: whether the session will retry this run's failure. The loop does not know;
        /// the session machine fills it in before the event goes out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        will_retry: Option<bool>,
    },
    TurnStart,
    TurnEnd {
        message: AgentMessage,
        tool_results: Vec<AgentMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// Pi 1.5 writes `{type, usage, assistantMessageEvent}`: the usage as of this event (Pi
    /// writes a live object, whose values depend on when it is printed; this is the
    /// deterministic choice) and the delta. The snapshot is the loop's state, never written.
    MessageUpdate {
        usage: Usage,
        assistant_message_event: AssistantMessageEvent,
        #[serde(skip)]
        message: PartialMessage,
    },
    MessageEnd {
        message: AgentMessage,
    },
    /// `parent_tool_call_id` (Pi 1.5): set for a call another tool made
    /// (`ctx.executeTool`), absent for the model's.
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: ToolResult,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResult,
        is_error: bool,
        /// Pi 1.5: how long the tool ran (absent for a call that never ran).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    Manual,
    Threshold,
    Overflow,
}

/// What a compaction produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// Pi 1.5: an estimate of the context the compaction left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_tokens_after: Option<u64>,
    /// Pi 1.5: what the summary calls cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which summary a `summarization_retry_attempt_start` retries (Pi 1.5's `source`, with the
/// compaction's reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SummarySource {
    Compaction,
    BranchSummary,
}

/// Events the coding agent's session adds on top of [`AgentEvent`] (0.73.1 names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEvent {
    /// The queued steering and follow-up texts after every change.
    QueueUpdate {
        steering: Vec<String>,
        follow_up: Vec<String>,
    },
    CompactionStart {
        reason: CompactionReason,
    },
    CompactionEnd {
        reason: CompactionReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<CompactionResult>,
        aborted: bool,
        will_retry: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        final_error: Option<String>,
    },
    SessionInfoChanged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Pi 1.5: a failed summary call is retried after `delay_ms`.
    SummarizationRetryScheduled {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    /// Pi 1.5: the retried summary call goes out.
    SummarizationRetryAttemptStart {
        source: SummarySource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<CompactionReason>,
    },
    /// Pi 1.5: a summary call that was retried ended (answered, failed or aborted).
    SummarizationRetryFinished,
    ThinkingLevelChanged {
        level: ThinkingLevel,
    },
    /// Pi 1.5: an entry the session wrote outside the conversation's own messages (a
    /// `context_edit` omitting a failed attempt), as the file holds it. A JSON value, not the
    /// session's entry type, so that events stay below the session store.
    EntryAppended {
        entry: Value,
    },
    /// Pi 1.5: a prompt's work is over (after its last `agent_end`, retries and compactions
    /// included); `aborted` when an abort was asked for during it.
    AgentSettled {
        aborted: bool,
    },
    /// An extension's handler threw at a hook point and the others ran on (Pi's runner reports
    /// it through `onError`: RPC writes this line, print mode a line on stderr).
    ExtensionError {
        extension_path: String,
        /// The hook point's event name (`turn_end`, ...).
        event: String,
        error: String,
    },
}

/// Everything a session emits: the loop's events and the session's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Event {
    Agent(AgentEvent),
    Session(SessionEvent),
}
