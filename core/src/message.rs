//! Pi's message and content types (pi-ai `types.ts`, pi-coding-agent `messages.ts`).
//!
//! Field names, field order and omission rules follow what Pi writes: camelCase keys, optional
//! fields left out when absent (never `null`), and fields we do not know kept in `extra` so that a
//! line read from Pi is written back unchanged.

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json_object;
use crate::nullable::Nullable;
use crate::tagged::{deserialize_tagged, Tagged};

pub use crate::extra::Extra;

json_object! {
    /// `text` content block.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct TextContent {
        pub text: String = "text" (req),
        pub text_signature: Option<String> = "textSignature" (opt),
    }
}

json_object! {
    /// `thinking` content block; `redacted` blocks keep the provider's opaque payload in the signature.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct ThinkingContent {
        pub thinking: String = "thinking" (req),
        pub thinking_signature: Option<String> = "thinkingSignature" (opt),
        pub redacted: Option<bool> = "redacted" (opt),
    }
}

json_object! {
    /// `image` content block (base64 data).
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct ImageContent {
        pub data: String = "data" (req),
        pub mime_type: String = "mimeType" (req),
    }
}

json_object! {
    /// `toolCall` content block: the model asks for a tool to run with `arguments`.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct ToolCall {
        pub id: String = "id" (req),
        pub name: String = "name" (req),
        pub arguments: Value = "arguments" (req),
        pub thought_signature: Option<String> = "thoughtSignature" (opt),
    }
}

/// The key under which Pi 1.5.2 keeps, on a tool call, why its streamed arguments did not parse.
const ARGUMENTS_ERROR: &str = "argumentsError";

impl ToolCall {
    /// Why the call's streamed arguments did not parse (Pi 1.5.2's `argumentsError`, written
    /// after the call's other fields), if they did not.
    pub fn arguments_error(&self) -> Option<&str> {
        self.extra.get(ARGUMENTS_ERROR).and_then(Value::as_str)
    }

    /// Records why the call's streamed arguments did not parse.
    pub fn set_arguments_error(&mut self, error: String) {
        self.extra
            .insert(ARGUMENTS_ERROR.to_owned(), Value::String(error));
    }
}

/// One element of a message's `content` array.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    #[serde(rename = "image")]
    Image(ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }
}

impl Tagged for ContentBlock {
    const TAG: &'static str = "type";
    const EXPECTING: &'static str = "a content block";

    fn known(tag: &str) -> bool {
        matches!(tag, "text" | "thinking" | "image" | "toolCall")
    }

    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error> {
        Ok(match tag {
            "text" => ContentBlock::Text(TextContent::deserialize(rest)?),
            "thinking" => ContentBlock::Thinking(ThinkingContent::deserialize(rest)?),
            "image" => ContentBlock::Image(ImageContent::deserialize(rest)?),
            _ => ContentBlock::ToolCall(ToolCall::deserialize(rest)?),
        })
    }

    fn unknown(map: Map<String, Value>) -> Result<Self, String> {
        Err(match map.get("type") {
            Some(kind) => format!("unknown content block type {kind}"),
            None => "content block without a `type`".to_owned(),
        })
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_tagged(deserializer)
    }
}

/// A user message's content: Pi accepts a bare string or an array of text and image blocks.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// The text blocks joined without separator (Pi's `extractUserMessageText`, also how queued
    /// messages are matched).
    pub fn text(&self) -> String {
        match self {
            UserContent::Text(text) => text.clone(),
            UserContent::Blocks(blocks) => text_parts(blocks).collect(),
        }
    }
}

impl<'de> Deserialize<'de> for UserContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = UserContent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<UserContent, E> {
                Ok(UserContent::Text(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<UserContent, E> {
                Ok(UserContent::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UserContent, A::Error> {
                Vec::<ContentBlock>::deserialize(SeqAccessDeserializer::new(seq))
                    .map(UserContent::Blocks)
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

/// The texts of the text blocks, in order (images, thinking and tool calls skipped).
pub fn text_parts(blocks: &[ContentBlock]) -> impl Iterator<Item = &str> {
    blocks.iter().filter_map(|b| match b {
        ContentBlock::Text(t) => Some(t.text.as_str()),
        _ => None,
    })
}

/// Why an assistant message ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    /// Pi 1.5: the message is still streaming (what `message_start` shows); the final message
    /// says why it ended.
    Pending,
    /// Pi 1.5: a reply put off for later (pi-ai's `createDeferredMessage`); read and written
    /// back, never made by this loop.
    Deferred,
}

impl StopReason {
    /// `error` and `aborted` end a run: no tools run and no queue is polled afterwards.
    pub fn ends_run(self) -> bool {
        matches!(self, StopReason::Error | StopReason::Aborted)
    }
}

json_object! {
    /// Cost in dollars, per component (model prices are per million tokens).
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Cost {
        pub input: f64 = "input" (req),
        pub output: f64 = "output" (req),
        pub cache_read: f64 = "cacheRead" (req),
        pub cache_write: f64 = "cacheWrite" (req),
        pub total: f64 = "total" (req),
        /// Pi 1.5: whether `total` is what the provider billed (OpenRouter) rather than computed
        /// from the model's prices; set wherever a cost is computed, absent in older files.
        pub total_from_provider: Option<bool> = "totalFromProvider" (opt),
    }
}

json_object! {
    /// Token usage of one model response.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Usage {
        pub input: u64 = "input" (req),
        pub output: u64 = "output" (req),
        pub cache_read: u64 = "cacheRead" (req),
        pub cache_write: u64 = "cacheWrite" (req),
        /// Pi 1.5: output tokens spent on reasoning, as the provider reports them.
        pub reasoning: Option<u64> = "reasoning" (opt),
        /// Absent in files of Pi's early versions (read as 0, and left out again when written).
        pub total_tokens: u64 = "totalTokens" (def),
        pub cost: Cost = "cost" (req),
        /// Pi 1.5, Anthropic: the part of `cacheWrite` written for an hour (priced at twice the
        /// input price). pi-ai adds it after `cost`, so it is declared after it.
        pub cache_write_1h: Option<u64> = "cacheWrite1h" (opt),
    }
}

json_object! {
    /// `role: "user"`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct UserMessage {
        pub content: UserContent = "content" (req),
        pub timestamp: u64 = "timestamp" (req),
    }
}

json_object! {
    /// `role: "system"` (Pi 1.5): the system prompt as the transcript records it. The first one
    /// holds every section and tool declaration; later ones are patches (a section by name,
    /// `null` removing it; tools added or removed by name). [`crate::agent::system`]
    /// folds them into the prompt in force.
    #[derive(Clone, Debug, PartialEq)]
    pub struct SystemMessage {
        /// An opaque prompt text; empty when the sections carry the prompt.
        pub content: UserContent = "content" (req),
        /// Section name -> text, or `null` to remove the section, in prompt order.
        pub sections: Option<Map<String, Value>> = "sections" (opt),
        /// Absent in some files later Pis wrote by hand (0 then, and left out again).
        pub timestamp: u64 = "timestamp" (def),
        /// Declarations (name, description, parameters, constrainedSampling) of tools added or
        /// changed.
        pub tools_added: Option<Vec<Value>> = "toolsAdded" (opt),
        /// `{name}` of each tool removed or changed.
        pub tools_removed: Option<Vec<Value>> = "toolsRemoved" (opt),
    }
}

impl UserMessage {
    /// The message Pi's `Agent.prompt(text, images)` builds: always array content.
    pub fn from_text(text: impl Into<String>, images: Vec<ImageContent>, timestamp: u64) -> Self {
        let mut blocks = vec![ContentBlock::text(text)];
        blocks.extend(images.into_iter().map(ContentBlock::Image));
        UserMessage {
            content: UserContent::Blocks(blocks),
            timestamp,
            extra: Extra::new(),
        }
    }
}

json_object! {
    /// `role: "assistant"`: one model response.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct AssistantMessage {
        pub content: Vec<ContentBlock> = "content" (req),
        pub api: String = "api" (req),
        pub provider: String = "provider" (req),
        pub model: String = "model" (req),
        pub usage: Usage = "usage" (req),
        pub stop_reason: StopReason = "stopReason" (req),
        pub timestamp: u64 = "timestamp" (req),
        /// Pi 1.5: the effort the request asked for where the model takes effort changes
        /// mid-conversation (`compat.supportsMidConvoEffort`), which later requests of the
        /// conversation send again before this answer. Anthropic's provider adds it here, after
        /// the stream's head; a file that has it elsewhere keeps its place (the read order).
        pub provider_thinking_level: Option<String> = "providerThinkingLevel" (opt),
        /// Where Pi 1.5.2's providers add them before the stream (a refused thread, the
        /// strict-tool limits): before the response's id and anything the stream sets.
        pub diagnostics: Option<Vec<Value>> = "diagnostics" (opt),
        pub response_id: Option<String> = "responseId" (opt),
        pub response_model: Option<String> = "responseModel" (opt),
        /// Pi 1.5: the provider's own finish reason (e.g. `tool_calls`), before mapping. Before
        /// `errorMessage`: every 1.5.2 provider sets it first (a refusal's error text follows).
        pub raw_stop_reason: Option<String> = "rawStopReason" (opt),
        pub error_message: Option<String> = "errorMessage" (opt),
        /// Pi 1.5: from the request to the end of the response, in ms. Here the difference of
        /// the times the loop was given, so a replay reproduces it.
        pub duration_ms: Option<u64> = "durationMs" (opt),
        /// Pi 1.5: the run's thinking level (`off` without reasoning). Kept as text so that a
        /// level a later Pi adds still reads and writes back.
        pub thinking_level: Option<String> = "thinkingLevel" (opt),
    }
}

impl AssistantMessage {
    /// The `toolCall` blocks, in content order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

json_object! {
    /// `role: "toolResult"`: the answer to one tool call.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ToolResultMessage {
        pub tool_call_id: String = "toolCallId" (req),
        pub tool_name: String = "toolName" (req),
        pub content: Vec<ContentBlock> = "content" (req),
        pub details: Option<Value> = "details" (opt),
        /// Pi 1.5: the usage of the model calls the tool made (codemode's `models.*`, the
        /// nested calls' turns), written after `details` as Pi's message holds its place.
        pub usage: Option<Value> = "usage" (opt),
        pub is_error: bool = "isError" (req),
        /// Pi 1.5: how long the tool ran, in ms (absent for a call that never ran, e.g. one
        /// that failed validation). Here the difference of the times the loop was given.
        pub duration_ms: Option<u64> = "durationMs" (opt),
        pub timestamp: u64 = "timestamp" (req),
    }
}

json_object! {
    /// `role: "bashExecution"`: a `!` command run by the user, shown to the model as a user message.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BashExecutionMessage {
        pub command: String = "command" (req),
        pub output: String = "output" (req),
        /// Absent when the process had no exit code; Pi may also write `null` (killed process).
        pub exit_code: Nullable<i64> = "exitCode" (opt),
        pub cancelled: bool = "cancelled" (req),
        pub truncated: bool = "truncated" (req),
        pub full_output_path: Option<String> = "fullOutputPath" (opt),
        pub timestamp: u64 = "timestamp" (req),
        pub exclude_from_context: Option<bool> = "excludeFromContext" (opt),
    }
}

json_object! {
    /// `role: "custom"`: an extension-injected message, sent to the model as a user message.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CustomMessage {
        pub custom_type: String = "customType" (req),
        pub content: UserContent = "content" (req),
        pub display: bool = "display" (req),
        pub details: Option<Value> = "details" (opt),
        pub timestamp: u64 = "timestamp" (req),
    }
}

json_object! {
    /// `role: "branchSummary"`: the summary of an abandoned branch (synthesised from session entries).
    #[derive(Clone, Debug, PartialEq)]
    pub struct BranchSummaryMessage {
        pub summary: String = "summary" (req),
        pub from_id: String = "fromId" (req),
        pub timestamp: u64 = "timestamp" (req),
    }
}

json_object! {
    /// `role: "compactionSummary"`: the summary standing in for compacted history.
    #[derive(Clone, Debug, PartialEq)]
    pub struct CompactionSummaryMessage {
        pub summary: String = "summary" (req),
        pub tokens_before: u64 = "tokensBefore" (req),
        pub timestamp: u64 = "timestamp" (req),
    }
}

/// A message the model can see: what providers encode (pi-ai `Message`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "role")]
pub enum Message {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
}

impl Tagged for Message {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a user, assistant or toolResult message";

    fn known(tag: &str) -> bool {
        matches!(tag, "user" | "assistant" | "toolResult")
    }

    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error> {
        Ok(match tag {
            "user" => Message::User(UserMessage::deserialize(rest)?),
            "assistant" => Message::Assistant(AssistantMessage::deserialize(rest)?),
            _ => Message::ToolResult(ToolResultMessage::deserialize(rest)?),
        })
    }

    fn unknown(map: Map<String, Value>) -> Result<Self, String> {
        Err(match map.get("role") {
            Some(role) => format!("unknown message role {role}"),
            None => "message without a `role`".to_owned(),
        })
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_tagged(deserializer)
    }
}

/// Any message of an agent transcript: the LLM roles, the coding agent's roles, or an
/// application-defined role kept as raw JSON (the agent loop passes it through untouched and
/// `convert_to_llm` decides what the model sees).
#[derive(Clone, Debug, PartialEq)]
pub enum AgentMessage {
    System(SystemMessage),
    User(UserMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
    BashExecution(BashExecutionMessage),
    Custom(CustomMessage),
    BranchSummary(BranchSummaryMessage),
    CompactionSummary(CompactionSummaryMessage),
    /// A role this crate does not know; must be a JSON object with a string `role`.
    Other(Map<String, Value>),
}

impl AgentMessage {
    /// The `role` field as Pi writes it.
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::BashExecution(_) => "bashExecution",
            AgentMessage::Custom(_) => "custom",
            AgentMessage::BranchSummary(_) => "branchSummary",
            AgentMessage::CompactionSummary(_) => "compactionSummary",
            AgentMessage::Other(map) => map.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The message as a pi-ai `Message`, when it has one of the three LLM roles.
    pub fn as_llm(&self) -> Option<Message> {
        match self {
            AgentMessage::User(m) => Some(Message::User(m.clone())),
            AgentMessage::Assistant(m) => Some(Message::Assistant(m.clone())),
            AgentMessage::ToolResult(m) => Some(Message::ToolResult(m.clone())),
            _ => None,
        }
    }
}

impl From<Message> for AgentMessage {
    fn from(message: Message) -> Self {
        match message {
            Message::User(m) => AgentMessage::User(m),
            Message::Assistant(m) => AgentMessage::Assistant(m),
            Message::ToolResult(m) => AgentMessage::ToolResult(m),
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "role")]
enum KnownRoleRef<'a> {
    #[serde(rename = "system")]
    System(&'a SystemMessage),
    #[serde(rename = "user")]
    User(&'a UserMessage),
    #[serde(rename = "assistant")]
    Assistant(&'a AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(&'a ToolResultMessage),
    #[serde(rename = "bashExecution")]
    BashExecution(&'a BashExecutionMessage),
    #[serde(rename = "custom")]
    Custom(&'a CustomMessage),
    #[serde(rename = "branchSummary")]
    BranchSummary(&'a BranchSummaryMessage),
    #[serde(rename = "compactionSummary")]
    CompactionSummary(&'a CompactionSummaryMessage),
}

impl Serialize for AgentMessage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = match self {
            AgentMessage::System(m) => KnownRoleRef::System(m),
            AgentMessage::User(m) => KnownRoleRef::User(m),
            AgentMessage::Assistant(m) => KnownRoleRef::Assistant(m),
            AgentMessage::ToolResult(m) => KnownRoleRef::ToolResult(m),
            AgentMessage::BashExecution(m) => KnownRoleRef::BashExecution(m),
            AgentMessage::Custom(m) => KnownRoleRef::Custom(m),
            AgentMessage::BranchSummary(m) => KnownRoleRef::BranchSummary(m),
            AgentMessage::CompactionSummary(m) => KnownRoleRef::CompactionSummary(m),
            AgentMessage::Other(map) => return map.serialize(serializer),
        };
        known.serialize(serializer)
    }
}

impl Tagged for AgentMessage {
    const TAG: &'static str = "role";
    const EXPECTING: &'static str = "a message";

    fn known(tag: &str) -> bool {
        matches!(
            tag,
            "system"
                | "user"
                | "assistant"
                | "toolResult"
                | "bashExecution"
                | "custom"
                | "branchSummary"
                | "compactionSummary"
        )
    }

    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error> {
        Ok(match tag {
            "system" => AgentMessage::System(SystemMessage::deserialize(rest)?),
            "user" => AgentMessage::User(UserMessage::deserialize(rest)?),
            "assistant" => AgentMessage::Assistant(AssistantMessage::deserialize(rest)?),
            "toolResult" => AgentMessage::ToolResult(ToolResultMessage::deserialize(rest)?),
            "bashExecution" => {
                AgentMessage::BashExecution(BashExecutionMessage::deserialize(rest)?)
            }
            "custom" => AgentMessage::Custom(CustomMessage::deserialize(rest)?),
            "branchSummary" => {
                AgentMessage::BranchSummary(BranchSummaryMessage::deserialize(rest)?)
            }
            _ => AgentMessage::CompactionSummary(CompactionSummaryMessage::deserialize(rest)?),
        })
    }

    fn unknown(map: Map<String, Value>) -> Result<Self, String> {
        match map.get("role") {
            Some(Value::String(_)) => Ok(AgentMessage::Other(map)),
            Some(_) => Err("message `role` is not a string".to_owned()),
            None => Err("missing field `role`".to_owned()),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserialize_tagged(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_roles_and_fields_survive_a_round_trip() {
        let line = r#"{"role":"note","text":"x","n":1.5}"#;
        let msg: AgentMessage = serde_json::from_str(line).unwrap();
        assert_eq!(msg.role(), "note");
        assert_eq!(crate::json::to_string(&msg).unwrap(), line);

        let line = r#"{"role":"user","content":"hi","timestamp":1,"mood":"ok"}"#;
        let msg: AgentMessage = serde_json::from_str(line).unwrap();
        assert!(matches!(msg, AgentMessage::User(_)));
        assert_eq!(crate::json::to_string(&msg).unwrap(), line);
    }

    #[test]
    fn messages_of_either_pi_are_written_back_as_read() {
        // 0.73.1: none of 1.5's fields.
        let old = r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai-completions","provider":"mock","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}"#;
        // 1.5.2 as its Anthropic provider writes usage (cacheWrite1h and reasoning after cost).
        let new = r#"{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":4,"totalTokens":7,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false},"cacheWrite1h":4,"reasoning":1},"stopReason":"deferred","timestamp":1,"responseId":"r","rawStopReason":"end_turn","durationMs":12,"thinkingLevel":"max"}"#;
        let result = r#"{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false,"durationMs":4,"timestamp":1}"#;
        for line in [old, new, result] {
            let msg: AgentMessage = serde_json::from_str(line).unwrap();
            assert_eq!(crate::json::to_string(&msg).unwrap(), line);
        }
        let AgentMessage::Assistant(read) = serde_json::from_str(new).unwrap() else {
            panic!("not an assistant message")
        };
        assert_eq!(read.stop_reason, StopReason::Deferred);
        assert_eq!(read.usage.cache_write_1h, Some(4));
        assert_eq!(read.usage.reasoning, Some(1));
        assert_eq!(read.duration_ms, Some(12));
        assert_eq!(read.thinking_level.as_deref(), Some("max"));
    }

    #[test]
    fn a_known_role_with_a_bad_field_is_an_error_not_a_silent_fallback() {
        let err = serde_json::from_str::<AgentMessage>(r#"{"role":"user","content":"hi"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("timestamp"), "{err}");
    }
}
