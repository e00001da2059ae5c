//! pi-agent-core's `Agent` and its loop (`agentLoop` / `agentLoopContinue`) as a state machine.
//!
//! The original loop is async code with two places where it waits: a model response streaming in,
//! and tools running. Everything between those points is synchronous, so [`AgentMachine::step`]
//! runs the loop from one waiting point to the next and returns the events it emitted and the
//! effects it needs. State changes happen in [`AgentMachine::emit`], from the events themselves,
//! as `Agent.processEvents` does.
//!
//! This file holds the machine's state, its accessors and `step`; the loop's parts are its
//! child modules: `run.rs` (a run's beginning, turns and end), `response.rs` (a streamed
//! response), `llm_view.rs` (the model's view of the transcript), `request.rs`, `context.rs`,
//! `start.rs`, `turn_end.rs`, `tool_batch.rs` and `change.rs`.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use crate::event::AgentEvent;
use crate::message::{AgentMessage, UserMessage};
use crate::model::{Model, ThinkingLevel};

use super::assemble::{Applied, Assembly};
use super::config::{AgentConfig, AgentHooks, QueueMode, ToolExecution, ToolSpec, TurnSummary};
use super::contract::{
    CallId, Change, ContractError, Effect, Input, Patch, PlacedSystemMessage, Prompt, Rejection,
    Step, StepError, StreamEvent, ThreadState,
};
use super::hooks::{HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome};
use super::system;
use super::tools::ToolBatch;

#[path = "change.rs"]
mod change;
#[path = "context.rs"]
mod context;
#[path = "llm_view.rs"]
mod llm_view;
#[path = "loadout.rs"]
mod loadout;
#[path = "request.rs"]
mod request;
#[path = "response.rs"]
mod response;
#[path = "run.rs"]
mod run;
#[path = "start.rs"]
mod start;
#[path = "tool_batch.rs"]
mod tool_batch;
#[path = "turn_end.rs"]
mod turn_end;

use llm_view::LlmView;

/// The text Pi 1.5.2's providers put in a response requested after the run was aborted (or
/// aborted before its response began): `fetch`'s own abort error, as no SDK stands between.
pub const ABORTED_REQUEST: &str = "This operation was aborted";

/// The message being streamed, or the last message started (Pi's `state.streamingMessage`).
#[derive(Clone, Debug)]
pub enum StreamingMessage {
    Message(AgentMessage),
    Partial(crate::partial::PartialMessage),
}

/// What the loop of the current run is waiting for.
#[derive(Debug)]
enum Phase {
    Model {
        call: CallId,
        assembly: Assembly,
    },
    Tools(ToolBatch),
    /// A finished turn waiting for the `turn_end` decision.
    TurnEnd(turn_end::FinishedTurn),
    /// A request waiting for the `context` decision (or, `with_system`, for the
    /// `context_with_system` one).
    Context {
        call: CallId,
        with_system: bool,
    },
    /// A request not made yet: extensions handle `message_end` and may still replace a message
    /// it would send ([`Change::OpenRequestGate`] lets it be made).
    Gated,
    /// Nothing: a decision is being applied.
    Between,
}

/// Settings a run captured when it started (Pi builds its loop config once per run); the
/// thinking level is refreshed before each later turn, as Pi's session refreshes it.
#[derive(Clone)]
struct RunSettings {
    model: Model,
    system_prompt: String,
    tools: Arc<Vec<ToolSpec>>,
    reasoning: Option<ThinkingLevel>,
    tool_execution: ToolExecution,
    session_id: Option<String>,
    /// The prompt a `before_agent_start` handler forced for this run: every request sends it
    /// instead of the transcript's.
    forced_system_prompt: Option<String>,
}

struct Run {
    settings: RunSettings,
    /// Index in the transcript of this run's first new message.
    start: usize,
    /// How much of the transcript the loop's context holds (tool results join after the batch).
    context_len: usize,
    /// A `continue()` from an assistant tail skips the run's first steering poll.
    skip_steering_poll: bool,
    aborted: bool,
    /// The turns ended so far (Pi's `turnIndex` of the next `turn_end`).
    turns: u64,
    /// The messages held for the turn's end ([`Change::AtTurnEnd`]).
    held: Vec<AgentMessage>,
    /// Where in the transcript those went once the turn ended: not the run's own messages.
    appended: Vec<usize>,
    /// The run's own messages from before its transcript was replaced by a projection
    /// ([`Change::Projection`]); those after `start` follow them.
    earlier: Vec<AgentMessage>,
    /// The `context` decision for the request being made: the conversation it sends instead
    /// of the transcript's (`Some(None)`: the transcript's).
    context_decided: Option<Option<Vec<AgentMessage>>>,
    /// The `context_with_system` decision for it: the conversation, system messages and all,
    /// it sends instead (`Some(None)`: the one before the decision).
    system_context_decided: Option<Option<Vec<AgentMessage>>>,
    /// A virtual model's router has decided the request being made, which asks the `context`
    /// hooks now (Pi 1.5.2 routes in `prepareRequest`, before `transformContext`): until then a
    /// virtual model's request goes out without them, to be routed.
    route_stands: bool,
    /// A request was refused before it went out: the run ends with its error response, which
    /// alone is the run's messages (Pi's loop catches the rejection and reports the failure).
    rejected: bool,
    phase: Phase,
}

/// The agent: transcript, queues, and at most one run in progress.
pub struct AgentMachine {
    system_prompt: String,
    system_sections: Option<serde_json::Map<String, serde_json::Value>>,
    model: Model,
    thinking_level: ThinkingLevel,
    tools: Arc<Vec<ToolSpec>>,
    hooks: Arc<dyn AgentHooks>,
    handled_hooks: HandledHooks,
    /// The session let the gated request be made ([`Change::OpenRequestGate`]).
    request_gate_open: bool,
    tool_execution: ToolExecution,
    session_id: Option<String>,
    /// The session's message-thread state as its last threaded call handed it back
    /// ([`Patch::Thread`]), handed to the next request; another session id starts without.
    thread_state: Option<ThreadState>,
    /// The diagnostics of the session's answers so far (see
    /// [`ModelRequest::session_diagnostics`]); another session id starts them again.
    session_diagnostics: Arc<Vec<serde_json::Value>>,
    /// Whether the run's model call in flight is one this machine asked for (its answer's
    /// diagnostics join `session_diagnostics`).
    call_in_flight: bool,
    /// The thinking level a virtual model's router gave the request in flight, which its
    /// response records in place of the run's (Pi stamps the level the request was sent with).
    routed_level: Option<ThinkingLevel>,
    messages: Vec<AgentMessage>,
    /// The model's view of the start of `messages`, when the hooks convert message by message.
    llm_view: LlmView,
    steering: VecDeque<AgentMessage>,
    follow_up: VecDeque<AgentMessage>,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    streaming_message: Option<StreamingMessage>,
    pending_tool_calls: BTreeSet<String>,
    /// The tools a running tool may call (`ctx.executeTool`) besides the active ones: Pi's
    /// `codemode` and `deferred` exposures, as the session registered them.
    nested_tools: Vec<ToolSpec>,
    error_message: Option<String>,
    /// A prompt's run waiting for the `before_agent_start` decision.
    starting: Option<start::Starting>,
    /// What the declared tools' `prepareLoadout` hooks answered, and a turn waiting for them.
    loadout: loadout::Loadout,
    run: Option<Run>,
    next_call: u64,
    now: u64,
    out: Step,
}

impl std::fmt::Debug for AgentMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentMachine")
            .field("state", &self.describe())
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

impl AgentMachine {
    /// An idle agent with `config`'s state.
    pub fn new(config: AgentConfig) -> Self {
        AgentMachine {
            system_prompt: config.system_prompt,
            system_sections: config.system_sections,
            model: config.model,
            thinking_level: config.thinking_level,
            tools: Arc::new(config.tools),
            hooks: config.hooks,
            handled_hooks: config.handled_hooks,
            request_gate_open: false,
            tool_execution: config.tool_execution,
            session_id: config.session_id,
            thread_state: None,
            session_diagnostics: Arc::default(),
            call_in_flight: false,
            routed_level: None,
            messages: config.messages,
            llm_view: LlmView::default(),
            steering: VecDeque::new(),
            follow_up: VecDeque::new(),
            steering_mode: config.steering_mode,
            follow_up_mode: config.follow_up_mode,
            streaming_message: None,
            pending_tool_calls: BTreeSet::new(),
            nested_tools: Vec::new(),
            error_message: None,
            starting: None,
            loadout: loadout::Loadout::default(),
            run: None,
            next_call: 1,
            now: 0,
            out: Step::default(),
        }
    }

    /// A call id for a model call made beside the loop (a session's summary), from the same
    /// sequence as the loop's own, so answers can never be confused.
    pub fn reserve_call(&mut self) -> CallId {
        self.new_call()
    }

    /// A virtual model's router sent the request in flight at `level`: its response records it.
    pub fn routed(&mut self, level: ThinkingLevel) {
        self.routed_level = Some(level);
    }

    /// Whether a request asks extensions' `context` or `context_with_system` handlers: a virtual
    /// model's request is then routed first, and made again once its route stands
    /// ([`Change::RedoRequest`]).
    pub fn asks_context(&self) -> bool {
        self.handled_hooks.contains(HookEvent::Context)
            || self.handled_hooks.contains(HookEvent::ContextWithSystem)
    }

    /// The transcript (Pi's `state.messages`).
    pub fn messages(&self) -> &[AgentMessage] {
        &self.messages
    }

    /// True while a run is in progress (Pi's `state.isStreaming`), or a prompt's run waits for
    /// `before_agent_start` (Pi's session is busy then: what is sent meanwhile joins the run).
    pub fn is_streaming(&self) -> bool {
        self.run.is_some() || self.starting.is_some() || self.loadout_waiting().is_some()
    }

    /// The message being streamed, if any.
    pub fn streaming_message(&self) -> Option<&StreamingMessage> {
        self.streaming_message.as_ref()
    }

    /// Ids of tool calls between `tool_execution_start` and `_end`.
    pub fn pending_tool_calls(&self) -> &BTreeSet<String> {
        &self.pending_tool_calls
    }

    /// The last run's error text.
    pub fn error_message(&self) -> Option<&str> {
        self.error_message.as_deref()
    }

    /// The hook points where the machine, and the session around it, wait for extensions.
    pub fn handled_hooks(&self) -> &HandledHooks {
        &self.handled_hooks
    }

    /// Replaces the hook points the machine waits at (the extensions were loaded again, Pi's
    /// reload): a hook point already being asked is answered as it was asked.
    pub fn set_handled_hooks(&mut self, handled: HandledHooks) {
        self.handled_hooks = handled;
    }

    /// The model used by the next run.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The prompt's sections and the tools from the next turn on, whose start records what
    /// changed as a system message (`declare_system`).
    pub fn set_system(
        &mut self,
        sections: serde_json::Map<String, serde_json::Value>,
        tools: Vec<ToolSpec>,
    ) {
        self.system_sections = Some(sections);
        self.tools = Arc::new(tools);
    }

    /// The prompt's sections the next turn records, by name, when the run keeps them (Pi 1.5).
    pub fn system_sections(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.system_sections.as_ref()
    }

    /// The tools the next request declares.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Sets the tools a running tool may call besides the active ones (Pi's `_getCallableTools`
    /// adds every `codemode` and `deferred` tool): a nested call is validated against them too.
    pub fn set_nested_tools(&mut self, tools: Vec<ToolSpec>) {
        self.nested_tools = tools;
    }

    /// The names of the tools the next request declares (Pi's `getActiveToolNames`).
    pub fn active_tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// The thinking level used by the next run.
    pub fn thinking_level(&self) -> ThinkingLevel {
        self.thinking_level
    }

    /// The system prompt the next request sends: the transcript's, with the wanted sections
    /// and tools a turn would record applied, else the configured text.
    pub fn system_prompt(&self) -> String {
        let tools: Vec<serde_json::Value> =
            self.tools.iter().map(system::tool_declaration).collect();
        let update = self
            .system_sections
            .as_ref()
            .and_then(|sections| system::update(&self.messages, sections, &tools, self.now))
            .map(AgentMessage::System);
        let recorded = system::SystemState::of(self.messages.iter().chain(&update));
        if recorded.recorded {
            recorded.render()
        } else {
            self.system_prompt.clone()
        }
    }

    /// Queued steering messages.
    pub fn steering_queue(&self) -> &VecDeque<AgentMessage> {
        &self.steering
    }

    /// Queued follow-up messages.
    pub fn follow_up_queue(&self) -> &VecDeque<AgentMessage> {
        &self.follow_up
    }

    /// What the loop's next poll would take (Pi's `peekQueuedMessages`): the steering queue's
    /// next (all of it in mode `all`), else the follow-up queue's.
    pub fn peek_queued_messages(&self) -> Vec<AgentMessage> {
        let peek = |queue: &VecDeque<AgentMessage>, mode: QueueMode| -> Vec<AgentMessage> {
            match mode {
                QueueMode::All => queue.iter().cloned().collect(),
                QueueMode::OneAtATime => queue.front().cloned().into_iter().collect(),
            }
        };
        match peek(&self.steering, self.steering_mode) {
            steering if !steering.is_empty() => steering,
            _ => peek(&self.follow_up, self.follow_up_mode),
        }
    }

    /// The messages held for the turn's end ([`Change::AtTurnEnd`]; Pi's pending custom
    /// messages).
    pub fn held_messages(&self) -> &[AgentMessage] {
        self.run.as_ref().map_or(&[][..], |run| run.held.as_slice())
    }

    /// Whether either queue holds messages.
    pub fn has_queued_messages(&self) -> bool {
        !self.steering.is_empty() || !self.follow_up.is_empty()
    }

    /// Feeds one input at time `now` (ms since the epoch) and returns what it caused. On error the
    /// machine is unchanged.
    pub fn step(&mut self, now: u64, input: Input) -> Result<Step, StepError> {
        if now < self.now {
            return Err(self
                .contract(
                    &input,
                    format!("time went backwards ({now} < {})", self.now),
                )
                .into());
        }
        self.check(&input)?;
        self.now = now;
        match input {
            Input::Prompt(prompt) => {
                let messages = match prompt {
                    Prompt::Text { text, images } => {
                        let message = AgentMessage::User(UserMessage::from_text(
                            text.clone(),
                            images.clone(),
                            now,
                        ));
                        if self.ask_before_start(&text, &images, message.clone()) {
                            return Ok(std::mem::take(&mut self.out));
                        }
                        vec![message]
                    }
                    Prompt::Messages(messages) => {
                        if self.ask_before_custom_start(&messages) {
                            return Ok(std::mem::take(&mut self.out));
                        }
                        messages
                    }
                };
                self.begin_run(Some(messages), false);
            }
            Input::Continue => self.continue_run(),
            Input::Steer(message) => self.steering.push_back(message),
            Input::FollowUp(message) => self.follow_up.push_back(message),
            Input::Abort => self.abort(),
            Input::Model { event, .. } => self.on_stream_event(event),
            Input::ModelFailed { error, .. } => self.fail_run(error),
            Input::RequestRejected { error, .. } => self.reject_request(error),
            Input::ToolUpdate { call, partial } => self.on_tool_update(call, partial),
            Input::ToolFinished { call, outcome } => self.on_tool_finished(call, outcome),
            // The session applies a tool's action; the agent only checks its call runs.
            Input::ToolActed { .. } => {}
            Input::ToolNested { call, name, args } => self.on_tool_nested(call, name, args),
            Input::Change(change) => self.apply_change(change),
            Input::HookDecided { call, outcome } => self.on_hook_decided(call, outcome),
        }
        Ok(std::mem::take(&mut self.out))
    }

    /// Whether the run waits to make a request ([`Change::OpenRequestGate`]).
    pub fn request_gated(&self) -> bool {
        matches!(self.run.as_ref().map(|r| &r.phase), Some(Phase::Gated))
    }

    /// Whether a hook point waits for `decision` under `call`: what `Input::HookDecided`
    /// must answer to be taken (a session applies a decision's actions only then).
    pub fn awaits_decision(&self, call: CallId, decision: &HookDecision) -> bool {
        if self.awaits_start(call, decision) {
            return true;
        }
        if self.awaits_turn_end(call) {
            return matches!(decision, HookDecision::Done | HookDecision::Boundary { .. });
        }
        if self.awaits_context(call, decision) || self.awaits_loadout(call, decision) {
            return true;
        }
        matches!(self.run.as_ref().map(|r| &r.phase),
            Some(Phase::Tools(batch)) if batch.gating_index(call, decision).is_some()
                || batch.nested.gating_index(call, decision).is_some())
    }

    /// A short description of what the machine is doing, for errors.
    pub fn describe(&self) -> String {
        if let Some(starting) = &self.starting {
            return format!("waiting for before_agent_start decision {}", starting.call);
        }
        if let Some(call) = self.loadout_waiting() {
            return format!("waiting for prepare_loadout decision {call}");
        }
        match &self.run {
            None => "idle".to_owned(),
            Some(run) => match &run.phase {
                Phase::Model { call, assembly, .. } if assembly.started() => {
                    format!("streaming model call {call}")
                }
                Phase::Model { call, .. } => format!("waiting for model call {call} to start"),
                Phase::TurnEnd(turn) => format!("waiting for turn_end decision {}", turn.call),
                Phase::Context { call, .. } => format!("waiting for context decision {call}"),
                Phase::Gated => "waiting to make a request".to_owned(),
                Phase::Between => "between turns".to_owned(),
                Phase::Tools(batch) => {
                    let running: Vec<String> = batch
                        .running_calls()
                        .iter()
                        .map(ToString::to_string)
                        .collect();
                    format!("running tool calls [{}]", running.join(", "))
                }
            },
        }
    }

    fn contract(&self, input: &Input, reason: impl Into<String>) -> ContractError {
        ContractError {
            input: input.name(),
            state: self.describe(),
            reason: reason.into(),
        }
    }

    /// Refuses inputs that do not fit the current state, before anything changes.
    fn check(&self, input: &Input) -> Result<(), StepError> {
        let running = self.is_streaming();
        match input {
            Input::Prompt(_) if running => Err(Rejection::PromptWhileRunning.into()),
            Input::Continue if running => Err(Rejection::ContinueWhileRunning.into()),
            Input::Continue => match self.messages.last() {
                None => Err(Rejection::NoMessagesToContinue.into()),
                Some(AgentMessage::Assistant(_)) if !self.has_queued_messages() => {
                    Err(Rejection::ContinueFromAssistant.into())
                }
                _ => Ok(()),
            },
            Input::Change(Change::Reset) if running => Err(Rejection::ResetWhileRunning.into()),
            Input::Change(Change::Messages(_)) if running => Err(self
                .contract(input, "the transcript cannot be replaced during a run")
                .into()),
            Input::Model { call, event } => match self.run.as_ref().map(|r| &r.phase) {
                Some(Phase::Model {
                    call: c, assembly, ..
                }) if c == call => assembly
                    .check(event)
                    .map_err(|e| self.contract(input, e).into()),
                _ => Err(self.contract(input, "no such model call is open").into()),
            },
            Input::ModelFailed { call, .. } | Input::RequestRejected { call, .. } => {
                match self.run.as_ref().map(|r| &r.phase) {
                    Some(Phase::Model {
                        call: c, assembly, ..
                    }) if c == call && !assembly.started() => Ok(()),
                    Some(Phase::Model { call: c, .. }) if c == call => Err(self
                        .contract(
                            input,
                            "the stream already started; end it with an error event",
                        )
                        .into()),
                    _ => Err(self.contract(input, "no such model call is open").into()),
                }
            }
            Input::HookDecided { call, outcome }
                if self.awaits_decision(*call, &outcome.decision) =>
            {
                Ok(())
            }
            Input::HookDecided { .. } => Err(self
                .contract(input, "no hook point is waiting for this decision")
                .into()),
            Input::ToolUpdate { call, .. }
            | Input::ToolFinished { call, .. }
            | Input::ToolActed { call, .. }
            | Input::ToolNested { call, .. } => match self.run.as_ref().map(|r| &r.phase) {
                Some(Phase::Tools(batch)) if batch.runs(*call) => Ok(()),
                _ => Err(self.contract(input, "no such tool call is running").into()),
            },
            _ => Ok(()),
        }
    }

    /// Applies an event to the agent state (Pi's `processEvents`), then records it.
    fn emit(&mut self, event: AgentEvent) {
        match &event {
            AgentEvent::MessageStart { message } => {
                self.streaming_message = Some(StreamingMessage::Message(message.clone()));
            }
            AgentEvent::MessageUpdate { message, .. } => {
                self.streaming_message = Some(StreamingMessage::Partial(message.clone()));
            }
            AgentEvent::MessageEnd { message } => {
                self.streaming_message = None;
                self.messages.push(message.clone());
            }
            // A nested call is the session's, not the agent's (Pi's agent never hears of it).
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                parent_tool_call_id: None,
                ..
            } => {
                self.pending_tool_calls.insert(tool_call_id.clone());
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                parent_tool_call_id: None,
                ..
            } => {
                self.pending_tool_calls.remove(tool_call_id);
            }
            AgentEvent::TurnEnd {
                message: AgentMessage::Assistant(assistant),
                ..
            } => {
                if let Some(error) = &assistant.error_message {
                    self.error_message = Some(error.clone());
                }
            }
            AgentEvent::AgentEnd { .. } => self.streaming_message = None,
            _ => {}
        }
        self.out.events.push(event);
    }

    fn effect(&mut self, effect: Effect) {
        self.out.effects.push(effect);
    }

    fn new_call(&mut self) -> CallId {
        let id = CallId(self.next_call);
        self.next_call += 1;
        id
    }

    /// The extensions decided at a hook point the machine waits at. A handler's abort
    /// (`ctx.abort()`, `ctx.compact()`) aborts Pi's signal before the loop looks at it again, so
    /// it is applied before the decision: nothing the decision would start is begun only to be
    /// cancelled.
    fn on_hook_decided(&mut self, call: CallId, outcome: HookOutcome) {
        let aborts = outcome.actions.iter().any(HookAction::aborts);
        if self.awaits_start(call, &outcome.decision) {
            return self.start_decided(outcome.decision, aborts);
        }
        if aborts && self.awaits_decision(call, &outcome.decision) {
            self.abort();
        }
        if self.awaits_turn_end(call) {
            let go_on = matches!(
                outcome.decision,
                HookDecision::Boundary {
                    continue_run: true,
                    ..
                }
            );
            return self.turn_end_decided(go_on);
        }
        if self.awaits_context(call, &outcome.decision) {
            return self.context_decided(outcome.decision);
        }
        if self.awaits_loadout(call, &outcome.decision) {
            return self.loadout_decided(outcome.decision);
        }
        self.tool_call_decided(call, outcome.decision);
    }
}
