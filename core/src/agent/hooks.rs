//! The extension hook contract (Pi 1.5.2's `ExtensionRunner` events), as data.
//!
//! An extension's handlers run outside the machine (they may be async, may run a TypeScript
//! extension in another process, may ask the user). Where a handler is registered for a hook
//! point, the machine suspends with a [`HookPayload`] (Pi's event object) and resumes on the
//! [`HookDecision`] the interpreter composed from every handler's [`HandlerResult`]; the decision
//! is an input, so a cassette records it and a replay answers it without the extension. Events
//! without a handler cost nothing: [`HandledHooks`], part of the run's configuration, says which
//! points suspend.
//!
//! Composition is Pi's: handlers run in load order, then registration order; the [`Composer`]
//! folds their results one at a time (a `tool_call` gate stops at the first block, `tool_result`
//! and `input` transforms chain, a `before_agent_start` system prompt is the last one set, its
//! messages accumulate), and tells what the next handler sees.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use super::boundary::BoundaryDraft;
use crate::message::{AgentMessage, ContentBlock, ImageContent, UserContent};
use crate::model::{Model, ThinkingLevel};

use crate::resources::skills::LoadedSkill;
use crate::resources::templates::PromptTemplate;

pub use super::command_ask::{CommandAnswer, CommandAsk, SessionAppend};
pub use super::hook_payload::{
    HookPayload, InjectedMessage, SuppliedCompaction, SuppliedSummary, TreeAnswer, WarmAction,
};
pub use super::user_bash::{ExecRun, UserBashAnswer, UserBashHandled};

/// Pi's reason for a call a `tool_call` handler blocked without giving one
/// (pi-agent-core's `prepareToolCall`).
pub const TOOL_BLOCKED: &str = "Tool execution was blocked";

/// A hook point where the machine may wait for the extensions' decision. Its JSON is Pi's event
/// `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// A prepared tool call, before it runs: block it or change its arguments.
    ToolCall,
    /// An executed call's result, before it is final: replace content, details, `isError`.
    ToolResult,
    /// A prompt's text before it becomes a message: transform it, or handle it (no run).
    Input,
    /// Before a prompt's run starts: replace the system prompt, add messages.
    BeforeAgentStart,
    /// A turn ended: the extension may abort the run (`ctx.abort()`, Harbor's turn cap).
    TurnEnd,
    /// Before each model request: replace the conversation the request sends.
    Context,
    /// Before each model request, after `context`: replace the conversation with its system
    /// messages (and so the request's system prompt).
    ContextWithSystem,
    /// Before each prompt-cache refresh, with Pi's decision: warm or stop instead.
    CacheWarmingDecision,
    /// A prompt named an extension's command (`/name args`): its handler runs instead of a
    /// prompt. Pi has no event object for it; `command` is the event its errors are reported at.
    Command,
    /// A compaction is planned (manual, threshold or overflow): cancel it, or supply its entry
    /// instead of the model's summary.
    SessionBeforeCompact,
    /// A compaction's entry was written (a notification).
    SessionCompact,
    /// A compaction failed, was aborted or cancelled, after its `compaction_end` (a
    /// notification).
    SessionCompactFailed,
    /// A compaction an extension's `ctx.compact()` asked for with `onComplete`/`onError` ended:
    /// the host calls them. Pi has no event object for it (its callbacks are closures); what they
    /// ask for comes back as the outcome's actions.
    CompactEnd,
    /// The notifications Pi's `AgentSession` passes its extensions as the loop emits its events
    /// (`_emitExtensionEvent`, each awaited before the event goes further): the handlers'
    /// answers are ignored, what they ask for comes back as the outcome's actions.
    AgentStart,
    AgentEnd,
    TurnStart,
    MessageStart,
    MessageUpdate,
    MessageEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolExecutionEnd,
    /// The front end is ready and the extensions bound (Pi's `bindExtensions`): a
    /// notification.
    SessionStart,
    /// The process is about to exit (Pi's runtime `dispose`): a notification.
    SessionShutdown,
    /// The session's model changed (Pi's `setModel`, scoped cycling): a notification.
    ModelSelect,
    /// The session's thinking level changed: a notification (Pi does not wait for it).
    ThinkingLevelSelect,
    /// A run is about to settle (Pi 1.5's boundary before `agent_settled`): entries to append,
    /// and whether the run goes on.
    AgentBeforeSettle,
    /// The session is about to be left for a new one or another file (Pi's `newSession`,
    /// `switchSession`): cancel it.
    SessionBeforeSwitch,
    /// The session is about to be forked or cloned (Pi's `fork`): cancel it.
    SessionBeforeFork,
    /// The session's leaf is about to move (Pi's `navigateTree`): cancel it, supply the
    /// branch summary, change its instructions or label.
    SessionBeforeTree,
    /// The session's leaf moved (a notification).
    SessionTree,
    /// A run settled (Pi awaits the handlers before the session's `agent_settled` event).
    AgentSettled,
    /// The session's name changed (a notification Pi does not wait for).
    SessionInfoChanged,
    /// Right after `session_start`: the extensions name skill, prompt-template and theme
    /// paths of their own, which the session loads after its own.
    ResourcesDiscover,
    /// Before a model request is sent: the headers the provider is given (Pi's
    /// `transformHeaders`), which the handlers may change in place.
    BeforeProviderHeaders,
    /// Before a turn's request is sent: the provider's JSON body (Pi's `onPayload`), which each
    /// handler may replace for the next.
    BeforeProviderRequest,
    /// An RPC `bash` command, before it runs: answer it with a result, run it through the
    /// extension's own `exec`, or leave it to the local shell.
    UserBash,
    /// A dialog opened (Pi's runner tells every extension), and settled. Never a hook point
    /// the machine waits at: the extension host tells them within the hook point whose
    /// handler opened the dialog; named by the errors their handlers throw.
    UiPromptStart,
    UiPromptEnd,
    /// A model request was answered: its status and headers, before the body is read (Pi's
    /// `onResponse`; a notification Pi awaits).
    AfterProviderResponse,
    /// One decoded event of a model response's stream, as the provider's SDK gave it (Pi's
    /// `onProviderStreamEvent`; a notification Pi awaits before the event is processed).
    ProviderStreamEvent,
    /// The set of MCP servers extensions registered changed after the extensions were bound
    /// (Pi's registry fires it on every `pi.registerMcpServer` and `pi.unregisterMcpServer`):
    /// a notification Pi does not wait for. An extension's own handlers are told in the host,
    /// within the handler that changed the set; the machine's hook point is the built-in MCP
    /// extension's, which connects the servers added and withdraws the tools of those removed.
    McpServersChange,
    /// Never a hook point: the event Pi names its error with when an MCP server is registered
    /// and nothing connects it (`--no-mcp`).
    RegisterMcpServer,
    /// A call of an extension's tool with a `prepareArguments` shim, before it is validated:
    /// the extension host runs the shim on the model's arguments. Pi has no event object for it
    /// (its agent calls the shim itself); the hook point makes the shim's answer an input.
    PrepareArguments,
    /// A turn is about to declare a tool whose `prepareLoadout` the extension host runs (Pi's
    /// `_applyToolLoadout`): the declared tools' descriptions it changes. Pi has no event
    /// object for it; the hook point makes the hook's answer an input.
    PrepareLoadout,
    /// A request for a virtual model is about to go out (Pi 1.5.2's `prepareRequest` routing):
    /// the model's router picks the physical model it goes to. Pi has no event object for it;
    /// the hook point makes the router's answer an input.
    RouteModel,
}

impl HookEvent {
    /// Pi's event `type`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::ToolCall => "tool_call",
            HookEvent::ToolResult => "tool_result",
            HookEvent::Input => "input",
            HookEvent::BeforeAgentStart => "before_agent_start",
            HookEvent::TurnEnd => "turn_end",
            HookEvent::Context => "context",
            HookEvent::ContextWithSystem => "context_with_system",
            HookEvent::CacheWarmingDecision => "cache_warming_decision",
            HookEvent::Command => "command",
            HookEvent::SessionBeforeCompact => "session_before_compact",
            HookEvent::SessionCompact => "session_compact",
            HookEvent::SessionCompactFailed => "session_compact_failed",
            HookEvent::CompactEnd => "compact_end",
            HookEvent::AgentStart => "agent_start",
            HookEvent::AgentEnd => "agent_end",
            HookEvent::TurnStart => "turn_start",
            HookEvent::MessageStart => "message_start",
            HookEvent::MessageUpdate => "message_update",
            HookEvent::MessageEnd => "message_end",
            HookEvent::ToolExecutionStart => "tool_execution_start",
            HookEvent::ToolExecutionUpdate => "tool_execution_update",
            HookEvent::ToolExecutionEnd => "tool_execution_end",
            HookEvent::SessionStart => "session_start",
            HookEvent::SessionShutdown => "session_shutdown",
            HookEvent::ModelSelect => "model_select",
            HookEvent::ThinkingLevelSelect => "thinking_level_select",
            HookEvent::AgentBeforeSettle => "agent_before_settle",
            HookEvent::SessionBeforeSwitch => "session_before_switch",
            HookEvent::SessionBeforeFork => "session_before_fork",
            HookEvent::SessionBeforeTree => "session_before_tree",
            HookEvent::SessionTree => "session_tree",
            HookEvent::AgentSettled => "agent_settled",
            HookEvent::SessionInfoChanged => "session_info_changed",
            HookEvent::ResourcesDiscover => "resources_discover",
            HookEvent::BeforeProviderHeaders => "before_provider_headers",
            HookEvent::BeforeProviderRequest => "before_provider_request",
            HookEvent::UserBash => "user_bash",
            HookEvent::UiPromptStart => "ui_prompt_start",
            HookEvent::UiPromptEnd => "ui_prompt_end",
            HookEvent::AfterProviderResponse => "after_provider_response",
            HookEvent::ProviderStreamEvent => "provider_stream_event",
            HookEvent::McpServersChange => "mcp_servers_change",
            HookEvent::RegisterMcpServer => "register_mcp_server",
            HookEvent::PrepareArguments => "prepare_arguments",
            HookEvent::PrepareLoadout => "prepare_loadout",
            HookEvent::RouteModel => "route_model",
        }
    }
}

/// The hook points at least one handler is registered for (Pi's `hasHandlers`). The machine
/// suspends at these and only these; a cassette's header holds the set so a replay suspends where
/// the recording did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HandledHooks(BTreeSet<HookEvent>);

impl HandledHooks {
    /// The set of the given events.
    pub fn of(events: impl IntoIterator<Item = HookEvent>) -> Self {
        HandledHooks(events.into_iter().collect())
    }

    /// Whether a handler waits at `event`.
    pub fn contains(&self, event: HookEvent) -> bool {
        self.0.contains(&event)
    }

    /// Whether no hook point suspends.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The events, in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = HookEvent> + '_ {
        self.0.iter().copied()
    }
}

/// What one handler returned (Pi's `*EventResult` types); `None` from a handler means "nothing".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HandlerResult {
    /// Pi's `ToolCallEventResult`, plus the arguments a handler changed (Pi's handlers mutate
    /// `event.input` in place; a Rust handler returns the new arguments).
    ToolCall {
        #[serde(default)]
        block: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        terminate: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
    },
    /// Pi's `ToolResultEventResult`: each field set replaces the current one.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Vec<ContentBlock>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    /// Pi's `InputEventResult`.
    Input(InputAction),
    /// Pi's `BeforeAgentStartEventResult`; `messages` carries those of an extension's several
    /// handlers (Pi keeps one message per handler that returns one), before `message`.
    #[serde(rename_all = "camelCase")]
    BeforeAgentStart {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        messages: Vec<InjectedMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<InjectedMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
    },
    /// Pi's `ContextEventResult`: the messages to send instead.
    Context {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<Vec<AgentMessage>>,
    },
    /// The headers as a `before_provider_headers` handler left them (Pi's handlers change the
    /// event's object in place).
    BeforeProviderHeaders { headers: Map<String, Value> },
    /// The body a `before_provider_request` handler returned: the next handler sees it, the
    /// last one is sent.
    BeforeProviderRequest { payload: Value },
    /// Pi's `CacheWarmingDecisionEventResult`: the action instead of Pi's.
    CacheWarmingDecision {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action: Option<WarmAction>,
    },
    /// Pi's `SessionBeforeCompactResult` (any object a handler returned: an empty one too
    /// replaces what an earlier handler returned).
    SessionBeforeCompact {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancel: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compaction: Option<SuppliedCompaction>,
    },
    /// Pi's `MessageEndEventResult`: the message in place of the one that ended (of the same
    /// role; Pi reports another role as the handler's error and keeps the message).
    MessageEnd { message: AgentMessage },
    /// Pi's `BoundaryResult` (`turn_end`, `agent_before_settle`): each field given replaces
    /// the one so far.
    Boundary {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        entries: Option<Vec<BoundaryDraft>>,
        #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
        continue_run: Option<bool>,
    },
    /// Pi's `SessionBeforeSwitchResult` and `SessionBeforeForkResult` (any object a handler
    /// returned; Pi reads only its `cancel`).
    SessionBeforeReplace {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancel: bool,
    },
    /// Pi's `SessionBeforeTreeResult` (any object a handler returned).
    SessionBeforeTree(TreeAnswer),
    /// Pi's `ResourcesDiscoverResult` (an extension's several handlers' paths, in order).
    #[serde(rename_all = "camelCase")]
    ResourcesDiscover {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skill_paths: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prompt_paths: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        theme_paths: Vec<String>,
    },
    /// Pi's `UserBashEventResult`: a result of the handler's own, or what its operations'
    /// `exec` gave.
    UserBash(UserBashHandled),
    /// A command's handler called its context for what only the session carries out.
    CommandAsked { run: u64, ask: CommandAsk },
    /// What the tool's `prepareArguments` shim gave.
    PrepareArguments(PreparedArguments),
    /// What the declared tools' `prepareLoadout` hooks changed.
    PrepareLoadout(LoadoutChanges),
    /// What a virtual model's router answered.
    RouteModel(super::model_route::RouteDecision),
}

/// What `prepareLoadout` hooks change in a turn's declarations (Pi's `ToolLoadoutChanges`,
/// merged over the hooks): new descriptions by tool name, and the declarations requests leave
/// out (`hiddenDeclarations`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadoutChanges {
    #[serde(default)]
    pub descriptions: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden_declarations: Vec<String>,
}

/// An `input` handler's answer, and the composed one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum InputAction {
    /// Go on with the text as it is.
    Continue,
    /// Go on with this text (and these images, when given).
    Transform {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        images: Option<Vec<ImageContent>>,
    },
    /// An extension took the input: no message, no run.
    Handled,
}

/// What the extension API asked for while the handlers ran (Pi's `pi.sendMessage`,
/// `pi.sendUserMessage`, `pi.appendEntry`, `pi.setActiveTools`, `pi.setModel`,
/// `pi.setSessionName`, `pi.setLabel`, `pi.setThinkingLevel`, `ctx.abort`, `ctx.compact`). They
/// come back with the decision, in the order asked, and are recorded with it; the session machine
/// applies them (`agent_session/extension_actions.rs`),
/// so a replay applies the same ones at the same point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum HookAction {
    /// `pi.sendMessage`: a custom message, delivered as Pi's `deliverAs` says (`"steer"`,
    /// `"followUp"`, `"nextTurn"`). `triggerTurn` is kept as asked: while the agent streams, Pi
    /// steers with a message whose `triggerTurn` is absent and holds one whose `triggerTurn` is
    /// `false` for the turn's end.
    #[serde(rename_all = "camelCase")]
    SendMessage {
        message: InjectedMessage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deliver_as: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_turn: Option<bool>,
    },
    /// `pi.appendEntry`: a `custom` session entry.
    #[serde(rename_all = "camelCase")]
    AppendEntry {
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// `pi.setActiveTools`.
    SetActiveTools { tools: Vec<String> },
    /// `pi.setModel` that Pi answers `true` (its provider has auth; a refused one is not asked
    /// for): the model as the extension passed it, so that applying it, live or in a replay,
    /// needs no catalog.
    SetModel { model: Box<Model> },
    /// `ctx.abort()`.
    Abort,
    /// `ctx.shutdown()`: the front end ends the run once nothing needs it (RPC mode: no
    /// command being handled, the session idle), as Pi's mode's shutdown handler does; print
    /// mode binds none, so nothing happens there.
    Shutdown,
    /// `pi.sendUserMessage`: a user message that always starts a turn, queued as Pi's
    /// `deliverAs` says (`"steer"`, `"followUp"`) while the agent streams.
    #[serde(rename_all = "camelCase")]
    SendUserMessage {
        content: UserContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deliver_as: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expand_prompt_templates: Option<bool>,
    },
    /// `pi.setSessionName`: the session's display name.
    SetSessionName { name: String },
    /// `pi.setLabel`: a label on entry `entryId`, or none (`label` absent clears it).
    #[serde(rename_all = "camelCase")]
    SetLabel {
        entry_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// `pi.setThinkingLevel`: the level asked for (Pi clamps it to the model's capabilities).
    SetThinkingLevel { level: ThinkingLevel },
    /// `ctx.compact()`; `callback`: the number the extension gave its `onComplete`/`onError`
    /// (absent without them), which the compaction's end names ([`HookPayload::CompactEnd`]).
    #[serde(rename_all = "camelCase")]
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        callback: Option<u64>,
    },
    /// The set of MCP servers extensions registered changed (a `pi.registerMcpServer` or
    /// `pi.unregisterMcpServer` after loading): the servers as they are now. The session tells
    /// the built-in MCP extension (`mcp_servers_change`).
    McpServersChange { servers: Vec<RegisteredMcpServer> },
    /// `pi.registerTool` of an MCP server's `direct` tools once it connected after the start,
    /// active from the next request on, and the tools of servers removed since (`withdrawn`),
    /// which Pi re-registers hidden: no longer active nor searchable.
    #[serde(rename_all = "camelCase")]
    RegisterTools {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<super::custom_tool::CustomToolDefinition>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        withdrawn: Vec<String>,
    },
    /// `pi.registerProvider` (by name, or a provider object) once the extensions have loaded:
    /// the front end applies `registration` (the extension host's plain data, whose config may
    /// hold keys: never written) to its model registry before the decision is recorded, and
    /// fills in `models`, the provider's models as the registry composes them now, and
    /// `available`, whether it has auth. The session refreshes its model from them (Pi's
    /// `_refreshCurrentModelFromRegistry`) and keeps them for the front end's model lists, so a
    /// replay needs neither the extension nor the registry. `keep_model`: the change came
    /// through `ctx.modelRegistry`, which changes Pi's registry without that refresh.
    #[serde(rename_all = "camelCase")]
    RegisterProvider {
        name: String,
        #[serde(default, skip_serializing)]
        registration: Option<Value>,
        #[serde(default)]
        models: Vec<Model>,
        #[serde(default)]
        available: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep_model: bool,
    },
    /// `pi.unregisterProvider` once the extensions have loaded: as [`Self::RegisterProvider`],
    /// `models` the provider's models left once it is gone (a built-in's own come back).
    #[serde(rename_all = "camelCase")]
    UnregisterProvider {
        name: String,
        #[serde(default)]
        models: Vec<Model>,
        #[serde(default)]
        available: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep_model: bool,
    },
    /// `pi.registerVirtualModel` once the extensions have loaded (Pi 1.5.2 adds it to its
    /// model runtime at once, and refreshes the session's model): as
    /// [`Self::RegisterProvider`], the front end's registry takes `definition` (the extension
    /// host's plain data, its router left in the extension) and fills in `models`, the
    /// provider's models then, and `available`; the router is the extension host's.
    #[serde(rename_all = "camelCase")]
    RegisterVirtualModel {
        name: String,
        #[serde(default)]
        definition: Option<Value>,
        #[serde(default)]
        models: Vec<Model>,
        #[serde(default)]
        available: bool,
    },
    /// `pi.registerTool` of tools of `deferred` exposure, as Pi's MCP extension registers a
    /// server's tools once it connected in the background: `tool_search` searches them from
    /// then on. `laterSections` (name, content) replace the prompt's custom sections of their
    /// names from the next prompt's run on, the first one's when it comes before it (the
    /// extension's `mcp_servers` section as the servers make it now); an empty content
    /// removes its section.
    #[serde(rename_all = "camelCase")]
    RegisterDeferredTools {
        tools: Vec<super::custom_tool::SearchableTool>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        later_sections: Vec<(String, String)>,
    },
}

/// An MCP server an extension registered, as a hook point or action names it: its name and
/// the extension that registered it (Pi's `extensionPath`). `config` is the server's
/// configuration as the extension host handed it over, for the built-in MCP extension that
/// connects it; it is never written (its `env` or `headers` may hold keys), so a recording
/// holds the names only and a replay, which connects nothing, needs no more.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredMcpServer {
    pub name: String,
    pub extension_path: String,
    #[serde(default, skip_serializing)]
    pub config: Option<Value>,
}

/// Two are the same server registration whatever configuration either carries (a recorded
/// one carries none).
impl PartialEq for RegisteredMcpServer {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.extension_path == other.extension_path
    }
}

impl HookAction {
    /// Whether the action aborts the run (Pi's `ctx.abort()`, and `ctx.compact()`, which
    /// aborts before it compacts).
    pub fn aborts(&self) -> bool {
        matches!(self, HookAction::Abort | HookAction::Compact { .. })
    }
}

/// A handler that threw, for Pi's `extension_error` report. A throwing `tool_call` handler
/// fails the call instead (Pi does not catch it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookError {
    /// The extension's name (Pi's `extensionPath`).
    pub extension: String,
    pub event: HookEvent,
    pub error: String,
}

/// The composed answer of every handler at one hook point: the input the machine resumes on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HookDecision {
    /// Run the call with `input`, or give it Pi's error result.
    ToolCall(ToolCallVerdict),
    /// The result as the last handler left it (`None`: no handler changed it).
    #[serde(rename_all = "camelCase")]
    ToolResult {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Vec<ContentBlock>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    Input(InputAction),
    #[serde(rename_all = "camelCase")]
    BeforeAgentStart {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        messages: Vec<InjectedMessage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
    },
    /// The conversation the request sends instead of its own (`None`: no handler changed it).
    Context {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<Vec<AgentMessage>>,
    },
    /// The headers the request is sent with (the ones asked about when no handler changed them).
    BeforeProviderHeaders {
        headers: Map<String, Value>,
    },
    /// The body the request is sent with (the one asked about when no handler replaced it).
    BeforeProviderRequest {
        payload: Value,
    },
    /// Whether the due prompt-cache refresh goes out: the last handler's action, else Pi's.
    CacheWarmingDecision {
        action: WarmAction,
    },
    /// What the last handler that returned an object asked of a compaction: cancel it, or
    /// write the compaction it supplied (neither: the model summarises).
    SessionBeforeCompact {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancel: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compaction: Option<SuppliedCompaction>,
    },
    /// The message that ended, as the `message_end` handlers replaced it (none replacing it:
    /// [`HookDecision::Done`]).
    MessageEnd {
        message: AgentMessage,
    },
    /// The entries a boundary's handlers left to append, and whether the run goes on (none of
    /// either: [`HookDecision::Done`]).
    Boundary {
        entries: Vec<BoundaryDraft>,
        #[serde(rename = "continue")]
        continue_run: bool,
    },
    /// Whether the session's replacement (`session_before_switch`, `session_before_fork`) is
    /// cancelled: the last object a handler returned said so.
    SessionBeforeReplace {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancel: bool,
    },
    /// What the last handler that returned an object asked of a navigation (none: Pi's
    /// navigation as asked).
    SessionBeforeTree(TreeAnswer),
    /// The paths the `resources_discover` handlers named, each with its extension, and what
    /// they hold: the skills and templates the interpreter loaded from them before the
    /// decision was recorded, so a replay needs none of the files.
    ResourcesDiscover(Box<DiscoveredResources>),
    /// What the `user_bash` handlers decided; `None`: nobody answered, the local shell runs
    /// the command.
    UserBash {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<UserBashAnswer>,
    },
    /// A command's handler stopped at a call of its context only the session carries out
    /// (`run`: the host's number for the handler's run, which the resumption names).
    CommandAsked {
        run: u64,
        ask: CommandAsk,
    },
    /// What the tool's `prepareArguments` shim gave for the call waiting at its hook point.
    PrepareArguments(PreparedArguments),
    /// How the `prepareLoadout` hooks change the turn's declarations.
    PrepareLoadout(LoadoutChanges),
    /// Where a virtual model's router sends the request waiting at its hook point.
    RouteModel(super::model_route::RouteDecision),
    /// A notification's handlers ran; what they asked for is in the actions.
    Done,
}

/// A path a `resources_discover` handler named, and the extension whose handler named it (Pi's
/// `extensionPath`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredPath {
    pub path: String,
    pub extension: String,
}

/// What the `resources_discover` handlers gave: their paths in Pi's order (load order, then
/// registration order), and the skills and templates loaded from them (each of those only
/// once; the session keeps the first of a name, its own before these).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveredResources {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skill_paths: Vec<DiscoveredPath>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_paths: Vec<DiscoveredPath>,
    /// Theme paths: kept as asked, loaded by nothing (no TUI here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub theme_paths: Vec<DiscoveredPath>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<LoadedSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub templates: Vec<PromptTemplate>,
}

/// The answer at one hook point, as a cassette records it: the composed decision, the actions
/// asked for (in order), and the handlers that threw (Pi's `extension_error` reports).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookOutcome {
    pub decision: HookDecision,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<HookAction>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<HookError>,
}

/// What a tool's `prepareArguments` shim gave for one call (pi-agent-core's
/// `prepareToolCallArguments`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum PreparedArguments {
    /// The arguments to validate (the model's own when the shim returned them unchanged;
    /// absent: it returned `undefined`).
    Prepared {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Value>,
        /// The model's arguments as the shim left them, when it changed them in place: Pi's
        /// call then holds them (later requests send them, `ctx.executeTool` reports them).
        #[serde(
            default,
            rename = "modelArguments",
            skip_serializing_if = "Option::is_none"
        )]
        model_arguments: Option<Value>,
    },
    /// The shim threw: the call's error result is the thrown message.
    Thrown {
        error: String,
        /// The model's arguments as the shim left them before it threw, when it changed them
        /// in place (Pi's call keeps the change, as for [`PreparedArguments::Prepared`]).
        #[serde(
            default,
            rename = "modelArguments",
            skip_serializing_if = "Option::is_none"
        )]
        model_arguments: Option<Value>,
    },
}

/// A `tool_call` gate's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ToolCallVerdict {
    /// Run with these arguments (changed or not).
    Run { input: Value },
    /// Pi's error result with this text (the reason, or [`TOOL_BLOCKED`]).
    Block {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        terminate: Option<bool>,
    },
    /// A handler threw: the call's error result is the thrown message.
    Thrown { error: String },
}

pub use super::compose::Composer;

#[cfg(test)]
#[path = "hooks_tests.rs"]
mod tests;
