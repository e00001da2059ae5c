//! Pi 1.5's boundaries: at a turn's end (`turn_end`) and before a run settles
//! (`agent_before_settle`) the handlers see the turn's persisted entries, its outcome and a
//! preview of the context, and may return entries to append (drafts) and whether the run goes
//! on. Each handler's `entries` replaces the drafts so far and its `continue` the flag (Pi's
//! `emitBoundary`); the session writes the drafts before the loop goes on, announced as
//! `entry_appended` and without message events, a custom message joining the context the next
//! request sends, a context edit or compaction changing it to the session's projection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{AgentMessage, StopReason, UserContent};

/// An entry a boundary handler asks to append (Pi's `SessionBoundaryDraft`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BoundaryDraft {
    /// A `custom` entry, as `pi.appendEntry` writes.
    #[serde(rename_all = "camelCase")]
    Custom {
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// A `custom_message` entry, which the context carries from then on.
    #[serde(rename_all = "camelCase")]
    CustomMessage {
        custom_type: String,
        content: UserContent,
        #[serde(default)]
        display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// A `context_edit`: from here on the model sees `targetId`'s content replaced by
    /// `replacement`'s, or (`null`) not at all.
    #[serde(rename_all = "camelCase")]
    ContextEdit {
        target_id: String,
        #[serde(default)]
        replacement: Option<Value>,
    },
    /// A `compaction` with the handler's summary: what comes before `firstKeptEntryId` (the
    /// entry itself when absent) is replaced by it.
    #[serde(rename_all = "camelCase")]
    Compaction {
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_kept_entry_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
    },
    /// A draft of a type Pi does not know, kept as the handler gave it: Pi writes nothing for
    /// it, and neither does the session.
    #[serde(untagged)]
    Other(Value),
}

impl BoundaryDraft {
    /// Pi's draft `type`.
    pub fn kind(&self) -> &str {
        match self {
            BoundaryDraft::Custom { .. } => "custom",
            BoundaryDraft::CustomMessage { .. } => "custom_message",
            BoundaryDraft::ContextEdit { .. } => "context_edit",
            BoundaryDraft::Compaction { .. } => "compaction",
            BoundaryDraft::Other(value) => value["type"].as_str().unwrap_or("unknown"),
        }
    }
}

/// Pi's `AgentActivityOutcome` of a turn's or a run's last assistant message.
pub fn outcome_of(message: Option<&AgentMessage>) -> &'static str {
    match message {
        Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Aborted => "aborted",
        Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error => "error",
        _ => "completed",
    }
}
