//! How an agent is set up: its tools, its queue and tool-execution modes, and the hook points an
//! application uses to shape the loop (pi-agent-core `AgentLoopConfig` / `AgentOptions`).
//!
//! Hooks are plain synchronous functions of their arguments: the machine calls them inside `step`,
//! so for a run to replay exactly they must be deterministic too.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::hooks::{HandledHooks, TOOL_BLOCKED};
use crate::event::ToolResult;
use crate::message::{AgentMessage, AssistantMessage, ContentBlock, Message, ToolCall};
use crate::model::{Model, ThinkingLevel};

/// How queued steering or follow-up messages are taken: one per poll, or all at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    #[default]
    OneAtATime,
    All,
}

/// Loop-wide tool scheduling; a batch runs sequentially if any of its tools asks for it. Its
/// JSON is Pi's `ToolExecutionMode` (`"parallel"`, `"sequential"`), as a custom tool declares it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolExecution {
    #[default]
    Parallel,
    Sequential,
}

/// How the model reaches a tool (Pi 1.5's `ToolExposure`): whether activating it declares it to
/// the model, and whether a running tool may call it (`ctx.executeTool`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolExposure {
    /// Declared while active, callable while active.
    #[default]
    Direct,
    /// Declared while active, never callable (orchestrating tools).
    ModelOnly,
    /// Callable whenever registered; declared only when activated by name.
    Codemode,
    /// Callable whenever registered; `tool_search` finds it.
    Deferred,
    /// Registered, and unreachable: activating it changes nothing.
    Hidden,
}

impl ToolExposure {
    /// Pi's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolExposure::Direct => "direct",
            ToolExposure::ModelOnly => "model-only",
            ToolExposure::Codemode => "codemode",
            ToolExposure::Deferred => "deferred",
            ToolExposure::Hidden => "hidden",
        }
    }

    /// Whether activating it declares it to the model (Pi's `_isDeclarable`).
    pub fn declarable(self) -> bool {
        matches!(self, ToolExposure::Direct | ToolExposure::ModelOnly)
    }

    /// Whether a running tool may call it while it is active (Pi's `_getCallableTools`: an
    /// active `direct` tool, or any `codemode` or `deferred` one).
    pub fn callable_when_active(self) -> bool {
        matches!(
            self,
            ToolExposure::Direct | ToolExposure::Codemode | ToolExposure::Deferred
        )
    }

    /// Whether registering a tool of this exposure activates it (Pi's
    /// `_isActivatedOnRegistration`): a declarable one not registered with `defaultActive: false`.
    pub fn activated_on_registration(self, default_active: Option<bool>) -> bool {
        self.declarable() && default_active != Some(false)
    }

    /// Whether a running tool may call it while it is not active.
    pub fn callable_when_inactive(self) -> bool {
        matches!(self, ToolExposure::Codemode | ToolExposure::Deferred)
    }
}

/// The group a tool belongs to (an MCP server): its name, and the server's configured
/// description and instructions, which the ranker reads as one field.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolNamespace {
    pub name: String,
    /// Other names of the group (an MCP server's own name); the ranker does not read them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Rewrites raw model arguments before validation (e.g. the edit tool folding legacy fields).
pub type PrepareArguments = Arc<dyn Fn(&Value) -> Result<Value, String> + Send + Sync>;

/// A tool as the loop knows it: what the model is told, and how calls to it are scheduled.
/// Running it is the interpreter's job.
#[derive(Clone)]
pub struct ToolSpec {
    pub name: String,
    pub label: String,
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
    /// `Some(Sequential)` makes every batch containing this tool run sequentially.
    pub execution_mode: Option<ToolExecution>,
    pub prepare_arguments: Option<PrepareArguments>,
    /// Its `prepareArguments` runs outside the machine (an extension's tool): each call asks
    /// for it at a `prepare_arguments` hook point before it is validated.
    pub prepared_by_hook: bool,
    /// Declaring it asks the extension that registered it how the declared tools change
    /// (Pi 1.5.2's `prepareLoadout`), at a `prepare_loadout` hook point.
    pub prepares_loadout: bool,
    /// Pi 1.5's `constrainedSampling` of the declaration, when the tool has one.
    pub constrained_sampling: Option<Value>,
    /// How the model reaches it: whether a running tool may call it (nested calls), and
    /// whether activating it declares it.
    pub exposure: ToolExposure,
    /// `Some(false)`: registering it does not activate it (a session's reload reads it).
    pub default_active: Option<bool>,
    /// The group it belongs to, as `pi.getAllTools()` reports it.
    pub namespace: Option<ToolNamespace>,
    /// Its author's hints (MCP's annotations), as `pi.getAllTools()` reports them.
    pub annotations: Option<Value>,
    /// Where a tool defined outside the harness came from, as `pi.getAllTools()` reports it.
    pub source_info: Option<Value>,
    /// Pi's `outputSchema` of a tool defined outside the harness, for the extension host's
    /// codemode.
    pub output_schema: Option<Value>,
}

impl ToolSpec {
    /// A tool with the given schema and default scheduling.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let name = name.into();
        ToolSpec {
            label: name.clone(),
            name,
            description: description.into(),
            parameters,
            execution_mode: None,
            prepare_arguments: None,
            prepared_by_hook: false,
            prepares_loadout: false,
            constrained_sampling: None,
            exposure: ToolExposure::Direct,
            default_active: None,
            namespace: None,
            annotations: None,
            source_info: None,
            output_schema: None,
        }
    }
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("execution_mode", &self.execution_mode)
            .field("prepare_arguments", &self.prepare_arguments.is_some())
            .field("prepared_by_hook", &self.prepared_by_hook)
            .field("exposure", &self.exposure)
            .finish_non_exhaustive()
    }
}

/// What `before_tool_call` sees.
#[derive(Debug)]
pub struct BeforeToolCall<'a> {
    pub assistant_message: &'a AssistantMessage,
    pub tool_call: &'a ToolCall,
    /// The validated (coerced) arguments.
    pub args: &'a Value,
    pub context: &'a [AgentMessage],
}

/// `before_tool_call`'s verdict: block the call with a reason (Pi's default reason otherwise),
/// and, with `terminate`, end the run after the batch as a terminating result does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub reason: Option<String>,
    pub terminate: Option<bool>,
}

impl Block {
    /// The blocked call's error result, as the extensions' `tool_call` gate gives it too: an
    /// empty or missing reason is [`TOOL_BLOCKED`] (Pi's `reason || ...`).
    pub fn into_result(self) -> ToolResult {
        let reason = self.reason.filter(|r| !r.is_empty());
        let mut result = ToolResult::error(reason.unwrap_or_else(|| TOOL_BLOCKED.to_owned()));
        result.terminate = self.terminate.filter(|t| *t);
        result
    }
}

/// What `after_tool_call` sees.
#[derive(Debug)]
pub struct AfterToolCall<'a> {
    pub assistant_message: &'a AssistantMessage,
    pub tool_call: &'a ToolCall,
    pub args: &'a Value,
    pub result: &'a ToolResult,
    pub is_error: bool,
    pub context: &'a [AgentMessage],
}

/// Field-by-field overrides from `after_tool_call`; `None` keeps the executed value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResultOverride {
    pub content: Option<Vec<ContentBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
    pub terminate: Option<bool>,
}

/// What `should_stop_after_turn` sees.
#[derive(Debug)]
pub struct TurnSummary<'a> {
    pub message: &'a AssistantMessage,
    pub tool_results: &'a [AgentMessage],
    pub context: &'a [AgentMessage],
    pub new_messages: &'a [AgentMessage],
}

/// The loop's hook points. An `Err` is a thrown error: from `transform_context`,
/// `convert_to_llm` or `should_stop_after_turn` it fails the run (the synthetic error message);
/// from the tool hooks it becomes an error result for that call.
pub trait AgentHooks: Send + Sync {
    /// Reshapes the transcript before each model call (`None`: unchanged).
    fn transform_context(
        &self,
        messages: &[AgentMessage],
    ) -> Result<Option<Vec<AgentMessage>>, String> {
        let _ = messages;
        Ok(None)
    }

    /// Decides what the model sees; by default the three LLM roles, other roles dropped.
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        Ok(messages.iter().filter_map(AgentMessage::as_llm).collect())
    }

    /// Whether [`AgentHooks::convert_to_llm`] converts each message on its own: what a message
    /// becomes depends on nothing around it. The machine then converts only the messages added
    /// since the last model call, instead of the whole transcript at every turn.
    fn converts_each_message_alone(&self) -> bool {
        false
    }

    /// May block a prepared call before it runs.
    fn before_tool_call(&self, call: &BeforeToolCall<'_>) -> Result<Option<Block>, String> {
        let _ = call;
        Ok(None)
    }

    /// May override an executed call's result.
    fn after_tool_call(
        &self,
        call: &AfterToolCall<'_>,
    ) -> Result<Option<ToolResultOverride>, String> {
        let _ = call;
        Ok(None)
    }

    /// Ends the run after this turn when true.
    fn should_stop_after_turn(&self, turn: &TurnSummary<'_>) -> Result<bool, String> {
        let _ = turn;
        Ok(false)
    }
}

/// pi-agent-core's defaults: no transformation, LLM roles only, no tool hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultHooks;

impl AgentHooks for DefaultHooks {
    fn converts_each_message_alone(&self) -> bool {
        true
    }
}

/// Everything an agent starts with (pi-agent-core `AgentOptions.initialState` plus options).
#[derive(Clone)]
pub struct AgentConfig {
    /// Sent when the transcript records no prompt (no `role: "system"` message).
    pub system_prompt: String,
    /// The prompt wanted, by section (Pi 1.5): when set, every turn first records how it and the
    /// tools' declarations differ from the transcript's prompt as a system message; a request
    /// sends the transcript's prompt.
    pub system_sections: Option<Map<String, Value>>,
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<ToolSpec>,
    pub messages: Vec<AgentMessage>,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub tool_execution: ToolExecution,
    pub session_id: Option<String>,
    pub hooks: Arc<dyn AgentHooks>,
    /// The extension hook points with a handler: the machine waits for a decision
    /// ([`super::Effect::Hook`]) at these only.
    pub handled_hooks: HandledHooks,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            system_prompt: String::new(),
            system_sections: None,
            model: Model::unknown(),
            thinking_level: ThinkingLevel::Off,
            tools: Vec::new(),
            messages: Vec::new(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            tool_execution: ToolExecution::Parallel,
            session_id: None,
            hooks: Arc::new(DefaultHooks),
            handled_hooks: HandledHooks::default(),
        }
    }
}

impl fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentConfig")
            .field("model", &self.model.id)
            .field("thinking_level", &self.thinking_level)
            .field("tools", &self.tools)
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}
