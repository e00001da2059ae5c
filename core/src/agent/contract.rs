//! What goes into the agent machine and what comes out of it.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::event::{AgentEvent, ToolResult};
use crate::message::{
    AgentMessage, AssistantMessage, ImageContent, Message, StopReason, ThinkingContent, ToolCall,
    Usage,
};
use crate::model::{Model, ThinkingLevel};

use super::config::{QueueMode, ToolExecution, ToolSpec};
use super::custom_tool::SearchableTool;
use super::hook_state::HookState;
use super::hooks::{HookOutcome, HookPayload};

/// Identifies one model call or one tool execution; every effect has one and its answers carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CallId(pub u64);

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What starts a run (pi-agent-core `Agent.prompt`).
#[derive(Clone, Debug, PartialEq)]
pub enum Prompt {
    /// Text (and images) become one user message with array content, stamped with `now`.
    Text {
        text: String,
        images: Vec<ImageContent>,
    },
    /// Messages used as they are: one message or a batch.
    Messages(Vec<AgentMessage>),
}

impl Prompt {
    /// A text prompt without images.
    pub fn text(text: impl Into<String>) -> Self {
        Prompt::Text {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// A change that arrives while a stream is open but emits no event of its own: usage, stop
/// reason, ids and signatures that providers report between deltas.
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    Usage(Usage),
    StopReason(StopReason),
    ErrorMessage(String),
    ResponseId(String),
    ResponseModel(String),
    ToolCallId {
        content_index: usize,
        id: String,
    },
    ToolCallName {
        content_index: usize,
        name: String,
    },
    ThoughtSignature {
        content_index: usize,
        signature: String,
    },
    ThinkingSignatureDelta {
        content_index: usize,
        delta: String,
    },
    /// Replaces a thinking block's signature (Gemini resends it whole).
    ThinkingSignature {
        content_index: usize,
        signature: String,
    },
    TextSignature {
        content_index: usize,
        signature: String,
    },
    /// The session's thread state once this call is over (a threaded call sends it before its
    /// final event): the machine hands it to the session's next request. Not part of the
    /// message, and never written anywhere: a replay rebuilds it from the recorded answers.
    Thread(Option<ThreadState>),
    /// The response's status and headers (Node's `Headers` as a record: lower-case names in
    /// order, repeated ones joined), before its body is read. Sent only by a call whose
    /// request asks for it ([`ProviderHooked::response`]): the session tells the extensions'
    /// `after_provider_response` handlers. Not part of the message.
    ProviderResponse {
        status: u16,
        headers: serde_json::Map<String, Value>,
    },
    /// One decoded event of the response stream as the provider's SDK hands it to pi-ai (the
    /// parsed JSON of an SSE event's data), before the events decoded from the same read.
    /// Sent only by a call whose request asks for it ([`ProviderHooked::stream`]): the session
    /// tells the extensions' `provider_stream_event` handlers. Not part of the message.
    ProviderData(Value),
}

/// One event of a model response as a provider decoder produces it: Pi's
/// `AssistantMessageEvent` without the `partial` snapshot (the machine builds the snapshots), with
/// the initial block on the `*_start` events and silent [`Patch`]es in between.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    Start {
        partial: AssistantMessage,
    },
    TextStart {
        content_index: usize,
        block: crate::message::TextContent,
    },
    TextDelta {
        content_index: usize,
        delta: String,
    },
    TextEnd {
        content_index: usize,
        content: String,
    },
    ThinkingStart {
        content_index: usize,
        block: ThinkingContent,
    },
    ThinkingDelta {
        content_index: usize,
        delta: String,
    },
    ThinkingEnd {
        content_index: usize,
        content: String,
    },
    ToolCallStart {
        content_index: usize,
        block: ToolCall,
    },
    ToolCallDelta {
        content_index: usize,
        delta: String,
    },
    ToolCallEnd {
        content_index: usize,
        tool_call: ToolCall,
    },
    Patch(Patch),
    Done {
        reason: StopReason,
        message: AssistantMessage,
    },
    Error {
        reason: StopReason,
        error: AssistantMessage,
    },
}

impl StreamEvent {
    /// A short name for error messages.
    pub fn name(&self) -> &'static str {
        match self {
            StreamEvent::Start { .. } => "start",
            StreamEvent::TextStart { .. } => "text_start",
            StreamEvent::TextDelta { .. } => "text_delta",
            StreamEvent::TextEnd { .. } => "text_end",
            StreamEvent::ThinkingStart { .. } => "thinking_start",
            StreamEvent::ThinkingDelta { .. } => "thinking_delta",
            StreamEvent::ThinkingEnd { .. } => "thinking_end",
            StreamEvent::ToolCallStart { .. } => "toolcall_start",
            StreamEvent::ToolCallDelta { .. } => "toolcall_delta",
            StreamEvent::ToolCallEnd { .. } => "toolcall_end",
            StreamEvent::Patch(_) => "patch",
            StreamEvent::Done { .. } => "done",
            StreamEvent::Error { .. } => "error",
        }
    }
}

/// How a tool execution ended: a result, or the error it threw (Pi turns that into an error result).
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    Ok(ToolResult),
    Thrown(String),
}

/// Changes to the agent's state (the `Agent` mutators). A run in progress keeps the model,
/// prompt, tools and execution mode it started with, as Pi's loop does.
#[derive(Clone, Debug)]
pub enum Change {
    SystemPrompt(String),
    Model(Model),
    ThinkingLevel(ThinkingLevel),
    Tools(Vec<ToolSpec>),
    /// Replaces the transcript; refused while a run is active.
    Messages(Vec<AgentMessage>),
    /// A message held for the turn's end (Pi's `sendMessage` with `triggerTurn: false` while
    /// the agent streams, flushed once `turn_end` is out): then announced (`message_start`,
    /// `message_end`) and appended to the transcript, so the run's next request carries it
    /// (Pi's next turn reads its context from the session), while the run's own messages
    /// (`agent_end`'s) leave it out. With no run, at once.
    AtTurnEnd(AgentMessage),
    /// A message a boundary's handlers wrote (a custom message entry): appended to the
    /// transcript without events, so the next request carries it, and left out of the run's
    /// own messages.
    AppendContext(AgentMessage),
    /// The session's projection after a boundary's `context_edit` or `compaction` drafts (Pi's
    /// `_refreshFinalizedContext`): the transcript becomes it, run in progress or not, so the
    /// next request sends it; a run's own messages (`agent_end`'s) are kept as they were.
    Projection(Vec<AgentMessage>),
    /// Puts `message` in the place of the transcript's last message equal to `original` (Pi's
    /// `message_end` handlers replace a message in place, run in progress or not): what is
    /// read of the transcript from then on has it.
    ReplaceMessage {
        original: AgentMessage,
        message: AgentMessage,
    },
    /// Makes the request a run waits to make (where extensions handle `message_end`, the
    /// loop makes no request until the session has heard their answers out).
    OpenRequestGate,
    /// Makes the request in flight again, from the transcript as it is now: the session held
    /// it unsent and compacted first (Pi 1.5.2 compacts before a routed request that exceeds
    /// the routed model's threshold, then prepares the request again), or routed it before the
    /// `context` hooks, which the request made again asks. Ignored once the request's answer
    /// has begun.
    RedoRequest,
    SteeringMode(QueueMode),
    FollowUpMode(QueueMode),
    ToolExecution(ToolExecution),
    SessionId(Option<String>),
    ClearSteeringQueue,
    ClearFollowUpQueue,
    ClearAllQueues,
    /// Clears transcript, error and queues; refused while a run is active.
    Reset,
}

/// Everything the world can tell the agent machine.
#[derive(Clone, Debug)]
pub enum Input {
    Prompt(Prompt),
    Continue,
    Steer(AgentMessage),
    FollowUp(AgentMessage),
    Abort,
    Model {
        call: CallId,
        event: StreamEvent,
    },
    /// The model call could not even be made (Pi: the stream function threw, e.g. `No API key
    /// for provider: <p>`); the run fails with Pi's synthetic error message.
    ModelFailed {
        call: CallId,
        error: String,
    },
    /// The request was refused before it went out (Pi's `prepareRequest` rejected: a virtual
    /// model's routing failed): the turn ends with Pi's error response, `error` its message.
    RequestRejected {
        call: CallId,
        error: String,
    },
    ToolUpdate {
        call: CallId,
        partial: ToolResult,
    },
    ToolFinished {
        call: CallId,
        outcome: ToolOutcome,
    },
    /// What a running tool's context asked of the session (an extension's registered tool
    /// calling `pi.appendEntry`, `pi.sendMessage` ... from its `execute`): the session applies
    /// it at once, as Pi's does, before the tool's result. Checked as a `ToolUpdate` is.
    ToolActed {
        call: CallId,
        action: super::hooks::HookAction,
    },
    /// A running tool asked to run the tool `name` with `args` (Pi 1.5's `ctx.executeTool`):
    /// the batch runs it as a call of its own and answers with [`Effect::AnswerNested`].
    /// Checked as a `ToolUpdate` is.
    ToolNested {
        call: CallId,
        name: String,
        args: Value,
    },
    Change(Change),
    /// The extensions' answer at a hook point the machine waits at ([`Effect::Hook`]).
    HookDecided {
        call: CallId,
        outcome: HookOutcome,
    },
}

impl Input {
    /// A short name for error messages.
    pub fn name(&self) -> String {
        match self {
            Input::Prompt(_) => "prompt".into(),
            Input::Continue => "continue".into(),
            Input::Steer(_) => "steer".into(),
            Input::FollowUp(_) => "follow_up".into(),
            Input::Abort => "abort".into(),
            Input::Model { call, event } => format!("model {} for call {call}", event.name()),
            Input::ModelFailed { call, .. } => format!("model failure for call {call}"),
            Input::RequestRejected { call, .. } => format!("request refusal for call {call}"),
            Input::ToolUpdate { call, .. } => format!("tool update for call {call}"),
            Input::ToolFinished { call, .. } => format!("tool result for call {call}"),
            Input::ToolActed { call, .. } => format!("tool action for call {call}"),
            Input::ToolNested { call, name, .. } => {
                format!("nested call of {name} for call {call}")
            }
            Input::Change(_) => "change".into(),
            Input::HookDecided { call, .. } => format!("hook decision for call {call}"),
        }
    }
}

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// Pi 1.5's `constrainedSampling` (`{type: "json_schema", strict: "prefer"}`): whether a
    /// provider that can constrain sampling to the schema should (`strict` in the request).
    #[serde(
        rename = "constrainedSampling",
        skip_serializing_if = "Option::is_none"
    )]
    pub constrained_sampling: Option<Value>,
}

impl From<&ToolSpec> for ToolDefinition {
    /// What a request declares for a tool the loop knows (its scheduling and argument
    /// preparation stay the loop's).
    fn from(spec: &ToolSpec) -> Self {
        ToolDefinition {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            constrained_sampling: spec.constrained_sampling.clone(),
        }
    }
}

/// Everything a provider needs for one model call (the `Context` plus stream options).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    pub model: Model,
    pub system_prompt: String,
    /// The conversation as the model sees it. Shared: the machine converts each message of its
    /// transcript once and hands every request the same list, grown by the new messages.
    pub messages: Arc<Vec<Message>>,
    pub tools: Vec<ToolDefinition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ThinkingLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// A cap on the response (summaries set it; agent turns leave it to the provider's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// How many times the provider's SDK may send this request again after a failure, in place
    /// of the setting `retry.provider.maxRetries` (Pi 1.5.2's `options.maxRetries ??` the
    /// setting): a cache warm says 0; the agent's turns and summaries leave it to the setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// The session's message-thread state as the session's last threaded call left it (Pi
    /// 1.5.2's Anthropic provider keeps it per session in memory and only threaded calls change
    /// it). The machine keeps what each call hands back ([`Patch::Thread`]), so a replay hands
    /// every request the same one; it is not part of the request's JSON, as the body it shapes is
    /// what a recording compares.
    #[serde(skip)]
    pub thread: Option<ThreadState>,
    /// The diagnostics of the session's earlier answers, failed ones included, in order. Pi
    /// 1.5.2's providers keep state per session that such an answer announces and later calls
    /// obey (Anthropic turns message threads off for a session whose thread was refused as
    /// unsupported); the machine keeps them, so a replay hands every request the same ones.
    /// Like `thread`, not part of the request's JSON.
    #[serde(skip)]
    pub session_diagnostics: Arc<Vec<serde_json::Value>>,
    /// The transcript's system messages (Pi 1.5's prompt and its later patches), each with the
    /// number of `messages` before it. `system_prompt` and `tools` are these folded, which is
    /// what most providers send; one that sends later changes in conversation order (Pi 1.5.2's
    /// `resolveTranscript` with `supportsMidConvoSystemMessages`) reads them here instead.
    /// Empty when the transcript records none or a `context` handler chose the conversation
    /// (Pi then puts only the current prompt back at the head). Like `thread`, not part of the
    /// request's JSON.
    #[serde(skip)]
    pub system_messages: Arc<Vec<PlacedSystemMessage>>,
    /// What the extensions' `before_provider_headers` and `before_provider_request` handlers
    /// decided for this request, sent instead of what it encodes to (none where no extension
    /// handles them). Like `thread`, not part of the request's JSON: the decisions are inputs
    /// a cassette records, and the body they give is what a replay compares.
    #[serde(skip)]
    pub provider_hooked: Option<Box<ProviderHooked>>,
}

/// The provider hooks' decisions for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProviderHooked {
    /// The provider's headers as the `before_provider_headers` handlers left them.
    pub headers: Option<serde_json::Map<String, Value>>,
    /// The body the last `before_provider_request` handler returned.
    pub payload: Option<Value>,
    /// An extension handles `after_provider_response`: the call reports its response head
    /// ([`Patch::ProviderResponse`]).
    pub response: bool,
    /// An extension handles `provider_stream_event`: the call reports each decoded stream
    /// event's data ([`Patch::ProviderData`]).
    pub stream: bool,
}

/// A system message of the conversation and where it stands: after `at` of the request's
/// messages.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedSystemMessage {
    pub at: usize,
    pub message: crate::message::SystemMessage,
}

/// Pi 1.5.2's per-session state of Anthropic message threads (`threadState`): what a later
/// request of the session continues, or that threads are off for it. No state (`None` where
/// it is held) makes the next threaded request create a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThreadState {
    /// Anthropic refused threads as unsupported: the session's requests go without one.
    Off,
    /// The last recorded reply (`recordThreadReply`): how many messages its request and it
    /// make, the short hash of those messages and the settings they went with, and its id. A
    /// request that starts with the same messages under the same settings continues its thread.
    Reply {
        prefix_count: usize,
        prefix_hash: String,
        reply_id: String,
    },
}

/// What the machine asks the world to do; each is answered by inputs carrying its [`CallId`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Stream a model response; answer with `Input::Model` events ending in `Done` or `Error`.
    CallModel { call: CallId, request: ModelRequest },
    /// Run a tool with validated arguments; answer with `ToolUpdate`s and one `ToolFinished`.
    /// `search` is what a `tool_search` call searches (the `deferred` tools not active now),
    /// filled in by the session machine when it registered the tool; like a hook's state it
    /// is derived, not recorded: a replay answers the call from the recording.
    RunTool {
        call: CallId,
        tool_call_id: String,
        tool: String,
        args: Value,
        #[serde(skip)]
        search: Option<Box<Vec<SearchableTool>>>,
        /// What the tool's context reads (Pi gives a registered extension tool its runner's
        /// whole context): filled in by the session machine for the tools it was told read
        /// the session ([`crate::agent_session::SessionMachine::set_context_tools`]), none for
        /// any other; derived, not recorded, as a hook's state.
        #[serde(skip)]
        state: Option<Box<HookState>>,
    },
    /// Stop the call as soon as possible; it must still be answered (an aborted stream ends with
    /// an `Error` event, an aborted tool with its error result).
    Cancel { call: CallId },
    /// Hand the running tool `call` the outcome of the nested call `tool_call_id` it asked for
    /// ([`Input::ToolNested`]): Pi's `ToolCallOutcome` (`toolCall`, `result`, `isError`,
    /// `durationMs`?), what its `ctx.executeTool` resolves to. Nothing answers it.
    AnswerNested {
        call: CallId,
        tool_call_id: String,
        outcome: Value,
    },
    /// Ask the extensions handling this hook point (Pi's event object); answer with one
    /// `Input::HookDecided`. Emitted only for hook points in `AgentConfig::handled_hooks`.
    /// `state` is what the handlers' getters read there, filled in by the session machine
    /// (none from an agent machine alone); it is derived, not recorded (see
    /// [`super::hook_state`]).
    Hook {
        call: CallId,
        payload: HookPayload,
        #[serde(skip)]
        state: Option<Box<HookState>>,
    },
}

/// The output of one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    pub effects: Vec<Effect>,
    pub events: Vec<AgentEvent>,
}

/// Errors Pi throws to the caller of `prompt()` / `continue()` / `reset()`, with Pi's texts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion.")]
    PromptWhileRunning,
    #[error("Agent is already processing. Wait for completion before continuing.")]
    ContinueWhileRunning,
    #[error("Agent is already processing. Wait for completion before resetting.")]
    ResetWhileRunning,
    #[error("No messages to continue from")]
    NoMessagesToContinue,
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
}

/// The driver broke the protocol: an answer nobody asked for, time going backwards, a malformed
/// stream. Names the input and the machine's state; the machine is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input} refused while {state}: {reason}")]
pub struct ContractError {
    pub input: String,
    pub state: String,
    pub reason: String,
}

/// Why a step was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error(transparent)]
    Contract(#[from] ContractError),
}
