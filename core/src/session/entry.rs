//! The lines of a Pi v3 session file.
//!
//! Line 1 is a [`SessionHeader`], every later line a [`SessionEntry`]. Fields appear in the order
//! Pi writes them (which differs between entry types: `custom` and `custom_message` put their
//! payload before `id`), `parentId` is written as `null` for a root entry, other absent optional
//! fields are left out, and entry types or fields this version does not know are kept as read.

use serde::de::value::MapAccessDeserializer;
use serde::de::MapAccess;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json_object;
use crate::tagged::{deserialize_tagged, Tagged};

use crate::message::{AgentMessage, Usage, UserContent};

/// Current format version written in new headers.
pub const CURRENT_SESSION_VERSION: u32 = 3;

/// The constant `type` of a header line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderType {
    #[default]
    Session,
}

json_object! {
    /// Line 1 of a session file.
    #[derive(Clone, Debug, PartialEq)]
    pub struct SessionHeader {
        pub kind: HeaderType = "type" (fixed),
        /// Absent in v1 files.
        pub version: Option<u32> = "version" (opt),
        pub id: String = "id" (req),
        /// ISO-8601 with milliseconds.
        pub timestamp: String = "timestamp" (req),
        pub cwd: String = "cwd" (req),
        /// The session this one was forked or branched from.
        pub parent_session: Option<String> = "parentSession" (opt),
    }
}

json_object! {
    /// `message`: one message of the transcript.
    #[derive(Clone, Debug, PartialEq)]
    pub struct MessageEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub message: AgentMessage = "message" (req),
    }
}

json_object! {
    /// `thinking_level_change`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ThinkingLevelChangeEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub thinking_level: String = "thinkingLevel" (req),
    }
}

json_object! {
    /// `model_change`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ModelChangeEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub provider: String = "provider" (req),
        pub model_id: String = "modelId" (req),
    }
}

json_object! {
    /// `compaction`: history before `firstKeptEntryId` is replaced by `summary`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CompactionEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub summary: String = "summary" (req),
        pub first_kept_entry_id: String = "firstKeptEntryId" (req),
        pub tokens_before: u64 = "tokensBefore" (req),
        pub details: Option<Value> = "details" (opt),
        /// Pi 1.5: what the summary calls cost (their usages added up).
        pub usage: Option<Value> = "usage" (opt),
        pub from_hook: Option<bool> = "fromHook" (opt),
        /// Pi 1.5: the prompt and tools in force at the boundary, as one `role: "system"`
        /// message; the context after the compaction starts from it.
        pub system_message: Option<Value> = "systemMessage" (opt),
    }
}

json_object! {
    /// `branch_summary`: what happened on a branch the conversation came back from.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BranchSummaryEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub from_id: String = "fromId" (req),
        pub summary: String = "summary" (req),
        pub details: Option<Value> = "details" (opt),
        /// Pi 1.5: what the summary call cost.
        pub usage: Option<Value> = "usage" (opt),
        pub from_hook: Option<bool> = "fromHook" (opt),
    }
}

json_object! {
    /// `custom`: extension state, never sent to the model.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CustomEntry {
        pub custom_type: String = "customType" (req),
        pub data: Option<Value> = "data" (opt),
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
    }
}

json_object! {
    /// `custom_message`: an extension message sent to the model as a user message.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CustomMessageEntry {
        pub custom_type: String = "customType" (req),
        pub content: UserContent = "content" (req),
        pub display: bool = "display" (req),
        pub details: Option<Value> = "details" (opt),
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
    }
}

json_object! {
    /// `label`: sets (or, without `label`, clears) the label of `targetId`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct LabelEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub target_id: String = "targetId" (req),
        pub label: Option<String> = "label" (opt),
    }
}

json_object! {
    /// `session_info`: the session's display name (latest wins; empty clears).
    #[derive(Clone, Debug, PartialEq)]
    pub struct SessionInfoEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub name: Option<String> = "name" (opt),
    }
}

json_object! {
    /// `context_edit` (Pi 1.5): from here on along the branch, the model sees `targetId`'s
    /// message with `replacement`'s content, or (`null`) not at all. The entry it edits stays
    /// in the file as it was; retries and recoveries write one to omit a failed attempt.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ContextEditEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub target_id: String = "targetId" (req),
        /// `null` omits the target; else `{content}` (a string or content blocks).
        pub replacement: Option<Value> = "replacement" (def),
    }
}

json_object! {
    /// `usage` (Pi 1.5): tokens spent outside the conversation (e.g. `kind: "cache_warm"`).
    /// Session statistics count them; the model never sees them.
    #[derive(Clone, Debug, PartialEq)]
    pub struct UsageEntry {
        pub id: String = "id" (req),
        pub parent_id: Option<String> = "parentId" (def),
        pub timestamp: String = "timestamp" (req),
        pub kind: String = "kind" (req),
        pub provider: String = "provider" (req),
        pub model: String = "model" (req),
        pub usage: Usage = "usage" (req),
        pub note: Option<String> = "note" (opt),
    }
}

/// One entry line of a session file.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionEntry {
    Message(MessageEntry),
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    ModelChange(ModelChangeEntry),
    Compaction(CompactionEntry),
    BranchSummary(BranchSummaryEntry),
    Custom(CustomEntry),
    CustomMessage(CustomMessageEntry),
    Label(LabelEntry),
    SessionInfo(SessionInfoEntry),
    ContextEdit(ContextEditEntry),
    Usage(UsageEntry),
    /// An entry type this version does not know, kept as read.
    Other(Map<String, Value>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EntryRef<'a> {
    Message(&'a MessageEntry),
    ThinkingLevelChange(&'a ThinkingLevelChangeEntry),
    ModelChange(&'a ModelChangeEntry),
    Compaction(&'a CompactionEntry),
    BranchSummary(&'a BranchSummaryEntry),
    Custom(&'a CustomEntry),
    CustomMessage(&'a CustomMessageEntry),
    Label(&'a LabelEntry),
    SessionInfo(&'a SessionInfoEntry),
    ContextEdit(&'a ContextEditEntry),
    Usage(&'a UsageEntry),
}

impl Serialize for SessionEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = match self {
            SessionEntry::Message(e) => EntryRef::Message(e),
            SessionEntry::ThinkingLevelChange(e) => EntryRef::ThinkingLevelChange(e),
            SessionEntry::ModelChange(e) => EntryRef::ModelChange(e),
            SessionEntry::Compaction(e) => EntryRef::Compaction(e),
            SessionEntry::BranchSummary(e) => EntryRef::BranchSummary(e),
            SessionEntry::Custom(e) => EntryRef::Custom(e),
            SessionEntry::CustomMessage(e) => EntryRef::CustomMessage(e),
            SessionEntry::Label(e) => EntryRef::Label(e),
            SessionEntry::SessionInfo(e) => EntryRef::SessionInfo(e),
            SessionEntry::ContextEdit(e) => EntryRef::ContextEdit(e),
            SessionEntry::Usage(e) => EntryRef::Usage(e),
            SessionEntry::Other(map) => return map.serialize(serializer),
        };
        known.serialize(serializer)
    }
}

impl Tagged for SessionEntry {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a session entry";

    fn known(tag: &str) -> bool {
        SessionEntry::is_known_kind(tag)
    }

    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error> {
        Ok(match tag {
            "message" => SessionEntry::Message(MessageEntry::deserialize(rest)?),
            "thinking_level_change" => {
                SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry::deserialize(rest)?)
            }
            "model_change" => SessionEntry::ModelChange(ModelChangeEntry::deserialize(rest)?),
            "compaction" => SessionEntry::Compaction(CompactionEntry::deserialize(rest)?),
            "branch_summary" => SessionEntry::BranchSummary(BranchSummaryEntry::deserialize(rest)?),
            "custom" => SessionEntry::Custom(CustomEntry::deserialize(rest)?),
            "custom_message" => SessionEntry::CustomMessage(CustomMessageEntry::deserialize(rest)?),
            "label" => SessionEntry::Label(LabelEntry::deserialize(rest)?),
            "context_edit" => SessionEntry::ContextEdit(ContextEditEntry::deserialize(rest)?),
            "usage" => SessionEntry::Usage(UsageEntry::deserialize(rest)?),
            _ => SessionEntry::SessionInfo(SessionInfoEntry::deserialize(rest)?),
        })
    }

    fn unknown(map: Map<String, Value>) -> Result<Self, String> {
        match map.get("type") {
            Some(Value::String(_)) => Ok(SessionEntry::Other(map)),
            Some(_) => Err("entry `type` is not a string".to_owned()),
            None => Err("missing field `type`".to_owned()),
        }
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_tagged(deserializer)
    }
}

/// Any line of a session file.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SessionLine {
    Header(SessionHeader),
    Entry(SessionEntry),
}

impl Tagged for SessionLine {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a session header or entry";

    fn known(tag: &str) -> bool {
        tag == "session" || SessionEntry::known(tag)
    }

    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error> {
        if tag == "session" {
            SessionHeader::deserialize(rest).map(SessionLine::Header)
        } else {
            SessionEntry::variant(tag, rest).map(SessionLine::Entry)
        }
    }

    fn unknown(map: Map<String, Value>) -> Result<Self, String> {
        SessionEntry::unknown(map).map(SessionLine::Entry)
    }
}

impl<'de> Deserialize<'de> for SessionLine {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_tagged(deserializer)
    }
}

impl SessionEntry {
    /// Whether `kind` is an entry type of this version; other types are kept as read
    /// ([`SessionEntry::Other`]).
    pub fn is_known_kind(kind: &str) -> bool {
        matches!(
            kind,
            "message"
                | "thinking_level_change"
                | "model_change"
                | "compaction"
                | "branch_summary"
                | "custom"
                | "custom_message"
                | "label"
                | "session_info"
                | "context_edit"
                | "usage"
        )
    }

    /// The entry's `type`.
    pub fn kind(&self) -> &str {
        match self {
            SessionEntry::Message(_) => "message",
            SessionEntry::ThinkingLevelChange(_) => "thinking_level_change",
            SessionEntry::ModelChange(_) => "model_change",
            SessionEntry::Compaction(_) => "compaction",
            SessionEntry::BranchSummary(_) => "branch_summary",
            SessionEntry::Custom(_) => "custom",
            SessionEntry::CustomMessage(_) => "custom_message",
            SessionEntry::Label(_) => "label",
            SessionEntry::SessionInfo(_) => "session_info",
            SessionEntry::ContextEdit(_) => "context_edit",
            SessionEntry::Usage(_) => "usage",
            SessionEntry::Other(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The entry's id (empty for an unknown entry type without one).
    pub fn id(&self) -> &str {
        self.common().0
    }

    /// The id of the entry's parent; `None` for a root.
    pub fn parent_id(&self) -> Option<&str> {
        self.common().1
    }

    /// The entry's ISO timestamp.
    pub fn timestamp(&self) -> &str {
        self.common().2
    }

    fn common(&self) -> (&str, Option<&str>, &str) {
        macro_rules! fields {
            ($e:expr) => {
                (
                    $e.id.as_str(),
                    $e.parent_id.as_deref(),
                    $e.timestamp.as_str(),
                )
            };
        }
        match self {
            SessionEntry::Message(e) => fields!(e),
            SessionEntry::ThinkingLevelChange(e) => fields!(e),
            SessionEntry::ModelChange(e) => fields!(e),
            SessionEntry::Compaction(e) => fields!(e),
            SessionEntry::BranchSummary(e) => fields!(e),
            SessionEntry::Custom(e) => fields!(e),
            SessionEntry::CustomMessage(e) => fields!(e),
            SessionEntry::Label(e) => fields!(e),
            SessionEntry::SessionInfo(e) => fields!(e),
            SessionEntry::ContextEdit(e) => fields!(e),
            SessionEntry::Usage(e) => fields!(e),
            SessionEntry::Other(map) => (
                map.get("id").and_then(Value::as_str).unwrap_or(""),
                map.get("parentId").and_then(Value::as_str),
                map.get("timestamp").and_then(Value::as_str).unwrap_or(""),
            ),
        }
    }

    /// The message, for a `message` entry.
    pub fn message(&self) -> Option<&AgentMessage> {
        match self {
            SessionEntry::Message(e) => Some(&e.message),
            _ => None,
        }
    }
}
