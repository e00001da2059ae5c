//! What the handlers of one hook point see ([`HookPayload`], Pi's event object) and the parts
//! it carries: a compaction or summary a handler supplies, a tree answer, a message to inject.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::command_ask::CommandAnswer;
use super::contract::ModelRequest;
use super::hooks::{HookEvent, RegisteredMcpServer};
use crate::event::{AssistantMessageEvent, CompactionReason, CompactionResult, ToolResult};
use crate::message::{AgentMessage, ContentBlock, CustomMessage, ImageContent, UserContent};
use crate::model::{Model, ThinkingLevel};
use crate::partial::PartialMessage;

/// What the handlers of one hook point see: Pi's event object, with Pi's JSON (`type` first,
/// camelCase fields), so an out-of-process extension receives it as Pi would pass it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HookPayload {
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_name: String,
        tool_call_id: String,
        /// Pi 1.5: the calling tool's id, for a call a tool made (`ctx.executeTool`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
        /// The validated arguments (`event.input`).
        input: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_name: String,
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
        input: Value,
        content: Vec<ContentBlock>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        is_error: bool,
    },
    #[serde(rename_all = "camelCase")]
    Input {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageContent>,
        /// Where the text came from (`"interactive"`, `"rpc"`, `"extension"`).
        source: String,
        /// How the text is queued when it came while the agent was streaming (`"steer"`,
        /// `"followUp"`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        streaming_behavior: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    BeforeAgentStart {
        /// What starts the run: `"user"`, a prompt, or `"custom"`, an extension's message
        /// sent with `triggerTurn: true` while idle.
        message_type: String,
        /// The prompt's text (a `"user"` trigger).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// The message that starts the run (a `"custom"` trigger).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Box<AgentMessage>>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageContent>,
        /// The prompt in force, the last handler's override included (Pi's getter).
        system_prompt: String,
    },
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        turn_index: u64,
        /// The turn's assistant message, with its `role` as Pi's event has it.
        message: AgentMessage,
        tool_results: Vec<AgentMessage>,
    },
    /// The conversation a request is about to send, its system messages left out (Pi shows
    /// them to `context_with_system` handlers only).
    Context {
        messages: Vec<AgentMessage>,
    },
    /// The conversation a request is about to send after the `context` handlers, its system
    /// messages in place (one merged at the head where a `context` handler chose the rest).
    ContextWithSystem {
        messages: Vec<AgentMessage>,
    },
    /// A prompt-cache refresh is due: Pi's cost estimates (dollars) and its decision. Every
    /// handler sees Pi's decision, whatever an earlier one returned.
    #[serde(rename_all = "camelCase")]
    CacheWarmingDecision {
        warm_cost: f64,
        miss_cost: f64,
        continuation_probability: f64,
        action: WarmAction,
    },
    /// An extension command's run (`pi.registerCommand`'s handler with the text after its name);
    /// what the handler asks for comes back as the outcome's actions. `idle`: whether the agent
    /// was idle when it ran (the command context's `isIdle()`: commands run while it streams too).
    Command {
        name: String,
        args: String,
        idle: bool,
    },
    /// A command whose handler asked the session for something (a [`CommandAsk`](super::command_ask::CommandAsk)) goes on with
    /// the answer: `run` is the host's number for the handler's run, from the decision that asked.
    CommandResume {
        name: String,
        run: u64,
        answer: CommandAnswer,
    },
    /// A compaction about to summarise, after its `compaction_start`: Pi's preparation
    /// (`firstKeptEntryId`, `messagesToSummarize`, `turnPrefixMessages`, `isSplitTurn`,
    /// `tokensBefore`, `previousSummary`, `fileOps` with its sets as arrays, `settings`), the
    /// branch's entries, as Pi's JSON. Pi's `signal` is the host's to make.
    #[serde(rename_all = "camelCase")]
    SessionBeforeCompact {
        preparation: Value,
        branch_entries: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
        reason: CompactionReason,
        will_retry: bool,
    },
    /// A compaction's entry was written, before its `compaction_end`: the entry (Pi's JSON),
    /// and whether an extension supplied it.
    #[serde(rename_all = "camelCase")]
    SessionCompact {
        compaction_entry: Value,
        from_extension: bool,
        reason: CompactionReason,
        will_retry: bool,
    },
    /// A compaction ended without an entry, after its `compaction_end`: Pi's error text (none
    /// when aborted or cancelled), and whether an extension had supplied the compaction.
    #[serde(rename_all = "camelCase")]
    SessionCompactFailed {
        reason: CompactionReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
        aborted: bool,
        will_retry: bool,
        from_extension: bool,
    },
    /// The end of the compaction `ctx.compact()` asked for with callbacks numbered `callback`
    /// (the action's): its result (`onComplete`) or the error's message (`onError`).
    CompactEnd {
        callback: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<CompactionResult>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A run started.
    AgentStart,
    /// A run ended: the messages it created (Pi's event has no `willRetry`).
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
    /// A turn started: its index in the run (from 0) and when, as Pi's session stamps it.
    #[serde(rename_all = "camelCase")]
    TurnStart {
        turn_index: u64,
        timestamp: u64,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// A streamed response's update: the message so far and the provider's event (Pi's event
    /// carries the message again as the event's `partial`; the extension host adds it).
    #[serde(rename_all = "camelCase")]
    MessageUpdate {
        message: PartialMessage,
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: ToolResult,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolResult,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
    },
    /// The session started (`reason`: `"startup"` for the process's first; `"new"`,
    /// `"resume"` or `"fork"` for one that replaced another, whose file is
    /// `previousSessionFile`).
    #[serde(rename_all = "camelCase")]
    SessionStart {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_session_file: Option<String>,
    },
    /// The session ends (`reason`: `"quit"` when the process exits; `"new"`, `"resume"` or
    /// `"fork"` when it is replaced by the session in `targetSessionFile`).
    #[serde(rename_all = "camelCase")]
    SessionShutdown {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_session_file: Option<String>,
    },
    /// The session is about to be replaced (`reason`: `"new"`, or `"resume"` for the file
    /// `targetSessionFile`).
    #[serde(rename_all = "camelCase")]
    SessionBeforeSwitch {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_session_file: Option<String>,
    },
    /// The session is about to be forked at entry `entryId` (`position`: `"before"` for a
    /// fork, `"at"` for a clone).
    #[serde(rename_all = "camelCase")]
    SessionBeforeFork {
        entry_id: String,
        position: String,
    },
    /// The session's leaf is about to move: Pi's `TreePreparation` (`targetId`, `oldLeafId`,
    /// `commonAncestorId`, `entriesToSummarize`, `userWantsSummary`, and the
    /// `customInstructions`, `replaceInstructions`, `label` asked for), as Pi's JSON. Pi's
    /// `signal` is the host's to make.
    SessionBeforeTree {
        preparation: Value,
    },
    /// The session's leaf moved from `oldLeafId` to `newLeafId` (either `null`: the root),
    /// with the branch summary written, if any, and whether an extension supplied it.
    #[serde(rename_all = "camelCase")]
    SessionTree {
        new_leaf_id: Option<String>,
        old_leaf_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary_entry: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_extension: Option<bool>,
    },
    /// The model the session changed to and the one before, and how (`"set"`, `"cycle"`).
    #[serde(rename_all = "camelCase")]
    ModelSelect {
        model: Box<Model>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_model: Option<Box<Model>>,
        source: String,
    },
    /// The thinking level in force now and the one before.
    #[serde(rename_all = "camelCase")]
    ThinkingLevelSelect {
        level: ThinkingLevel,
        previous_level: ThinkingLevel,
    },
    /// The run is about to settle, with Pi's outcome of its last activity (`completed`,
    /// `aborted`, `error`).
    AgentBeforeSettle {
        outcome: String,
    },
    /// A run settled: whether an abort was asked for during it.
    AgentSettled {
        aborted: bool,
    },
    /// The session's name now.
    SessionInfoChanged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The MCP servers extensions registered, as they are after a change (Pi's
    /// `mcp_servers_change`), in registration order.
    McpServersChange {
        servers: Vec<RegisteredMcpServer>,
    },
    /// A call of a tool whose `prepareArguments` shim the extension host runs, with the
    /// arguments as the model sent them.
    #[serde(rename_all = "camelCase")]
    PrepareArguments {
        tool_name: String,
        tool_call_id: String,
        /// The calling tool's id, for a call a tool made (`ctx.executeTool`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<String>,
        arguments: Value,
    },
    /// The tools a turn declares (`declared`, by name, in order) and every registered tool as
    /// `pi.getAllTools()` describes it (`registered`, in registry order), for the declared
    /// tools' `prepareLoadout` hooks.
    PrepareLoadout {
        declared: Vec<String>,
        registered: Vec<Value>,
    },
    /// A request for a virtual model, for its router.
    RouteModel(super::model_route::RouteQuestion),
    /// The session asks for the extensions' resources: its working directory and why
    /// (`"startup"`).
    ResourcesDiscover {
        cwd: String,
        reason: String,
    },
    /// The headers the provider is given for `request` (Pi merges the provider's configured
    /// headers and the request's own; not the SDK's). The machine cannot build them (they are
    /// the registry's): it asks with none, and the interpreter fills them in from `request`
    /// before the handlers see them. What a cassette records is the machine's question.
    BeforeProviderHeaders {
        headers: Map<String, Value>,
        #[serde(skip)]
        request: Option<Box<ModelRequest>>,
    },
    /// The provider's JSON body for `request`, filled in by the interpreter as the headers are
    /// (the providers build it, below the machine).
    BeforeProviderRequest {
        payload: Value,
        #[serde(skip)]
        request: Option<Box<ModelRequest>>,
    },
    /// An RPC `bash` command: its command line, `excludeFromContext` as sent (`false` when
    /// not) and the session's working directory.
    #[serde(rename_all = "camelCase")]
    UserBash {
        command: String,
        exclude_from_context: bool,
        cwd: String,
    },
    /// A model request's answer: its status and its headers as Pi gives them (lower-case
    /// names), before the body is read.
    AfterProviderResponse {
        status: u16,
        headers: Map<String, Value>,
    },
    /// One decoded event of a model response's stream (`data`, as the provider's SDK parsed
    /// it) and the model answering.
    ProviderStreamEvent {
        data: Value,
        provider: String,
        api: String,
        model: String,
    },
}

/// A compaction a `session_before_compact` handler supplies instead of the model's summary
/// (Pi's `CompactionResult`): the entry is written from it as given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuppliedCompaction {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// A branch summary a `session_before_tree` handler supplies instead of the model's (Pi's
/// `{summary, details, usage}`): the summary entry is written from it as given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuppliedSummary {
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// What a `session_before_tree` handler returned (Pi's `SessionBeforeTreeResult`), and the
/// composed answer: the last object returned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TreeAnswer {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SuppliedSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_instructions: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Whether a due prompt-cache refresh goes out (`warm`) or ends the warming run (`stop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WarmAction {
    Warm,
    Stop,
}

impl HookPayload {
    /// The hook point this payload is for.
    pub fn event(&self) -> HookEvent {
        match self {
            HookPayload::ToolCall { .. } => HookEvent::ToolCall,
            HookPayload::ToolResult { .. } => HookEvent::ToolResult,
            HookPayload::Input { .. } => HookEvent::Input,
            HookPayload::BeforeAgentStart { .. } => HookEvent::BeforeAgentStart,
            HookPayload::TurnEnd { .. } => HookEvent::TurnEnd,
            HookPayload::Context { .. } => HookEvent::Context,
            HookPayload::ContextWithSystem { .. } => HookEvent::ContextWithSystem,
            HookPayload::CacheWarmingDecision { .. } => HookEvent::CacheWarmingDecision,
            HookPayload::Command { .. } | HookPayload::CommandResume { .. } => HookEvent::Command,
            HookPayload::SessionBeforeCompact { .. } => HookEvent::SessionBeforeCompact,
            HookPayload::SessionCompact { .. } => HookEvent::SessionCompact,
            HookPayload::SessionCompactFailed { .. } => HookEvent::SessionCompactFailed,
            HookPayload::CompactEnd { .. } => HookEvent::CompactEnd,
            HookPayload::AgentStart => HookEvent::AgentStart,
            HookPayload::AgentEnd { .. } => HookEvent::AgentEnd,
            HookPayload::TurnStart { .. } => HookEvent::TurnStart,
            HookPayload::MessageStart { .. } => HookEvent::MessageStart,
            HookPayload::MessageUpdate { .. } => HookEvent::MessageUpdate,
            HookPayload::MessageEnd { .. } => HookEvent::MessageEnd,
            HookPayload::ToolExecutionStart { .. } => HookEvent::ToolExecutionStart,
            HookPayload::ToolExecutionUpdate { .. } => HookEvent::ToolExecutionUpdate,
            HookPayload::ToolExecutionEnd { .. } => HookEvent::ToolExecutionEnd,
            HookPayload::SessionStart { .. } => HookEvent::SessionStart,
            HookPayload::SessionShutdown { .. } => HookEvent::SessionShutdown,
            HookPayload::ModelSelect { .. } => HookEvent::ModelSelect,
            HookPayload::ThinkingLevelSelect { .. } => HookEvent::ThinkingLevelSelect,
            HookPayload::AgentBeforeSettle { .. } => HookEvent::AgentBeforeSettle,
            HookPayload::SessionBeforeSwitch { .. } => HookEvent::SessionBeforeSwitch,
            HookPayload::SessionBeforeFork { .. } => HookEvent::SessionBeforeFork,
            HookPayload::SessionBeforeTree { .. } => HookEvent::SessionBeforeTree,
            HookPayload::SessionTree { .. } => HookEvent::SessionTree,
            HookPayload::AgentSettled { .. } => HookEvent::AgentSettled,
            HookPayload::SessionInfoChanged { .. } => HookEvent::SessionInfoChanged,
            HookPayload::ResourcesDiscover { .. } => HookEvent::ResourcesDiscover,
            HookPayload::BeforeProviderHeaders { .. } => HookEvent::BeforeProviderHeaders,
            HookPayload::BeforeProviderRequest { .. } => HookEvent::BeforeProviderRequest,
            HookPayload::UserBash { .. } => HookEvent::UserBash,
            HookPayload::AfterProviderResponse { .. } => HookEvent::AfterProviderResponse,
            HookPayload::ProviderStreamEvent { .. } => HookEvent::ProviderStreamEvent,
            HookPayload::McpServersChange { .. } => HookEvent::McpServersChange,
            HookPayload::PrepareArguments { .. } => HookEvent::PrepareArguments,
            HookPayload::PrepareLoadout { .. } => HookEvent::PrepareLoadout,
            HookPayload::RouteModel(_) => HookEvent::RouteModel,
        }
    }
}

/// A message a `before_agent_start` handler adds (Pi's `Pick<CustomMessage, "customType" |
/// "content" | "display" | "details">`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InjectedMessage {
    pub custom_type: String,
    pub content: Value,
    #[serde(default)]
    pub display: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl InjectedMessage {
    /// The message as the transcript records it at `now` (Pi normalises missing content to
    /// none).
    pub fn into_custom(self, now: u64) -> CustomMessage {
        let content = serde_json::from_value::<UserContent>(self.content)
            .unwrap_or(UserContent::Blocks(Vec::new()));
        CustomMessage {
            custom_type: self.custom_type,
            content,
            display: self.display,
            details: self.details,
            timestamp: now,
            extra: Default::default(),
        }
    }
}
