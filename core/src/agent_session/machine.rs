//! The session machine: Pi's `AgentSession` around the agent loop. It persists messages as they
//! end, retries transient failures after a backoff, compacts on threshold and on context
//! overflow, keeps the steering and follow-up texts for `queue_update`, and records model and
//! thinking-level changes. Like the agent machine it does no IO: time comes in with every input,
//! timers go out as `wake_at`, and summaries are model calls the interpreter makes.

use std::collections::BTreeMap;

use crate::agent::hooks::{
    HookAction, HookDecision, HookError, HookEvent, HookOutcome, HookPayload,
};
use crate::agent::{AgentMachine, CallId, Change, Input, Prompt, QueueMode, StepError};
use crate::compaction::CompactionSettings;
use crate::event::{AgentEvent, Event, SessionEvent};
use crate::message::{AgentMessage, AssistantMessage, CustomMessage, ImageContent, StopReason};
use crate::model::{clamp_thinking_level, Model, ThinkingLevel};
use crate::resources::Resources;
use crate::session::ids::IdGenerator;
use crate::session::tree::{Persist, SessionTree};

use super::boundary::BeforeSettle;
use super::cache_warm::{CacheWarming, WarmRun};
use super::compaction::{CompactionJob, JobState};
use super::contract::{
    Reply, SessionConfig, SessionError, SessionInput, SessionRejection, SessionStep,
    StreamingBehavior,
};
use super::input::{InputKind, PendingInput, INTERACTIVE_SOURCE};
use super::navigate::{NavigateJob, TreeAsk};
use super::retry::{is_retryable, RetrySettings};

/// What a due `wake_at` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wake {
    /// The retry backoff is over: continue the agent.
    Retry,
    /// 100 ms after a compaction: continue to retry the overflowed call or deliver queued messages.
    AfterCompaction,
    /// A failed summary call's backoff is over: send it again.
    SummaryRetry,
    /// The hook point that sent messages starting a run while idle has gone on: start them.
    IdleRuns,
}

/// Pi's `AgentSession` as a pure state machine.
pub struct SessionMachine {
    pub(super) agent: AgentMachine,
    pub(super) tree: SessionTree,
    pub(super) ids: IdGenerator,
    pub(super) retry: RetrySettings,
    /// The agent's queue modes, kept here to report them (Pi's `steeringMode`, `followUpMode`).
    pub(super) steering_mode: QueueMode,
    pub(super) follow_up_mode: QueueMode,
    pub(super) compaction_settings: CompactionSettings,
    default_thinking_level: Option<ThinkingLevel>,
    model_thinking_levels: BTreeMap<String, ThinkingLevel>,
    pub(super) retry_attempt: u32,
    pub(super) wake: Option<(u64, Wake)>,
    pub(super) overflow_recovery_attempted: bool,
    last_assistant: Option<AssistantMessage>,
    steering_texts: Vec<String>,
    follow_up_texts: Vec<String>,
    pub(super) compaction: Option<CompactionJob>,
    /// Compactions that failed, each held while its `session_compact_failed` handlers run
    /// (another may start meanwhile, as in Pi).
    pub(super) failing: Vec<CompactionJob>,
    /// The `compact`s accepted so far: the number each one's answer carries.
    pub(super) compacts: u64,
    /// A `compact` accepted while an automatic compaction's `session_compact_failed` handlers
    /// run: it starts once they ran and the run they end has settled.
    pub(super) held_compaction: Option<CompactionJob>,
    /// Where asking `agent_before_settle` stands for the run about to settle.
    pub(super) before_settle: BeforeSettle,
    pub(super) navigation: Option<NavigateJob>,
    /// A navigation waiting for its `session_before_tree` handlers.
    pub(super) tree_ask: Option<TreeAsk>,
    /// `!command` results waiting for the next prompt.
    pub(super) pending_bash: Vec<AgentMessage>,
    /// RPC `bash` commands the `user_bash` handlers are asked about, in order: each command
    /// line and its `excludeFromContext` (`user_bash.rs`).
    pub(super) user_bash: std::collections::VecDeque<(String, Option<bool>)>,
    /// The `user_bash` hook point being asked, which RPC `abort_bash` cancels.
    pub(super) user_bash_call: Option<CallId>,
    /// Extensions' messages sent with `deliverAs: "nextTurn"`, which follow the next prompt
    /// (Pi's `_pendingNextTurnMessages`).
    pub(super) pending_next_turn: Vec<CustomMessage>,
    /// Room kept free when summarising a branch (`branchSummary.reserveTokens`).
    pub(super) branch_summary_reserve_tokens: u64,
    /// A prompt held back until the pre-prompt compaction ends.
    pending_prompt: Option<Prompt>,
    /// What `/skill:` and template prompts expand with.
    pub(super) resources: Resources,
    /// Pi's input `source` of this session's front end.
    pub(super) input_source: String,
    /// Texts waiting for the `input` decision, in the order they came.
    pub(super) pending_inputs: Vec<PendingInput>,
    /// A hook point's decision held until the `input` handlers have decided the user messages
    /// its handlers sent.
    pub(super) held_decision: Option<super::extension_actions::HeldDecision>,
    /// Extensions' messages that start a run once their hook point has gone on (`idle_run`).
    pub(super) idle_runs: Vec<super::idle_run::IdleRun>,
    /// The idle runs asked for beside the one started, waiting for its `before_agent_start`.
    pub(super) later_idle_runs: Vec<super::idle_run::IdleRun>,
    /// A command's answer waiting for the `input` decisions of the user messages it sent.
    pub(super) held_reply: Option<super::command::HeldReply>,
    /// The actions a handler asked for after an idle user message, waiting for its `input`
    /// decision (Pi runs its handlers within the call, before the next action).
    pub(super) stashed_actions: Option<(CallId, Vec<HookAction>)>,
    /// An extension's `ctx.compact()` (its custom instructions), waiting for the run it aborted
    /// to settle (`extension_actions`).
    pub(super) asked_compaction: Option<(Option<String>, Option<u64>)>,
    /// The compaction ends whose callbacks the extension host is calling.
    pub(super) compact_callbacks: Vec<CallId>,
    /// Extension commands running (`command.rs`).
    pub(super) pending_commands: Vec<(crate::agent::CallId, String)>,
    /// A command waiting for what its handler asked of the session (`command.rs`).
    pub(super) command_asking: Option<super::command::AskingCommand>,
    /// The replacement that command asked for (`ctx.newSession`), while it is asked.
    pub(super) command_replacement: Option<crate::agent::hooks::CommandAsk>,
    /// The loop's events an extension is being told of, and what waits for its handlers.
    pub(super) notifications: super::notify::Notifications,
    /// Agent model calls held for their provider hooks.
    pub(super) provider_gate: super::provider_hooks::ProviderGate,
    pub(super) provider_notices: super::provider_notices::ProviderNotices,
    /// A prompt's work is in progress, until `agent_settled` (Pi's `_isAgentRunActive`).
    pub(super) run_active: bool,
    /// An abort was asked for while it was (Pi's `_agentRunAbortRequested`).
    pub(super) abort_requested: bool,
    /// How the prompt cache is warmed (none: never).
    pub(super) cache_warming: Option<CacheWarming>,
    /// Every registered tool and the prompt's inputs, for `pi.setActiveTools`.
    pub(super) registry: Option<super::loadout::Registry>,
    /// The `tool_search` calls running, whose results load tools before the agent reads them.
    pub(super) tool_searches: Vec<CallId>,
    /// The warming run, if one is scheduled or in flight.
    pub(super) warm: Option<WarmRun>,
    /// Warm requests cancelled whose answers are still to come (and to be dropped).
    pub(super) warm_orphans: Vec<crate::agent::CallId>,
    pub(super) now: u64,
    pub(super) out: SessionStep,
    /// How many entries the previous hook point's state held: the next one sends those after.
    pub(super) mirrored_entries: usize,
    /// The custom tools whose calls read the session (an extension host's): their `RunTool`
    /// effects carry the state their context reads.
    pub(super) context_tools: Vec<String>,
    /// The prompt's sections as they stand from the second prompt's run on (`later_sections`).
    pub(super) later_sections: Vec<(String, String)>,
    /// The errors the session's start reports (`start_errors`).
    pub(super) start_errors: Vec<super::start_errors::StartError>,
    /// The `session_start` notification whose handlers the start's errors wait for.
    pub(super) start_errors_call: Option<crate::agent::CallId>,
    /// Whether a prompt's run has started in this machine.
    pub(super) prompted: bool,
}

impl std::fmt::Debug for SessionMachine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionMachine")
            .field("agent", &self.agent)
            .field("entries", &self.tree.entries().len())
            .field("retry_attempt", &self.retry_attempt)
            .field("wake", &self.wake)
            .finish_non_exhaustive()
    }
}

impl SessionMachine {
    /// A session whose agent starts from the context of `config.tree`.
    pub fn new(config: SessionConfig) -> Self {
        let mut agent_config = config.agent;
        agent_config.messages = config.tree.context().into_messages();
        agent_config.session_id = Some(config.tree.id().to_owned());
        let (steering_mode, follow_up_mode) =
            (agent_config.steering_mode, agent_config.follow_up_mode);
        SessionMachine {
            agent: AgentMachine::new(agent_config),
            tree: config.tree,
            ids: config.ids,
            retry: config.retry,
            steering_mode,
            follow_up_mode,
            compaction_settings: config.compaction,
            default_thinking_level: config.default_thinking_level,
            model_thinking_levels: config.model_thinking_levels,
            retry_attempt: 0,
            wake: None,
            overflow_recovery_attempted: false,
            last_assistant: None,
            steering_texts: Vec::new(),
            follow_up_texts: Vec::new(),
            compaction: None,
            failing: Vec::new(),
            compacts: 0,
            held_compaction: None,
            before_settle: BeforeSettle::NotAsked,
            navigation: None,
            tree_ask: None,
            pending_bash: Vec::new(),
            user_bash: Default::default(),
            user_bash_call: None,
            pending_next_turn: Vec::new(),
            branch_summary_reserve_tokens: 16_384,
            pending_prompt: None,
            resources: config.resources,
            input_source: INTERACTIVE_SOURCE.to_owned(),
            pending_inputs: Vec::new(),
            held_decision: None,
            idle_runs: Vec::new(),
            later_idle_runs: Vec::new(),
            held_reply: None,
            stashed_actions: None,
            asked_compaction: None,
            compact_callbacks: Vec::new(),
            pending_commands: Vec::new(),
            command_asking: None,
            command_replacement: None,
            notifications: Default::default(),
            provider_gate: Default::default(),
            provider_notices: Default::default(),
            run_active: false,
            abort_requested: false,
            cache_warming: None,
            registry: None,
            tool_searches: Vec::new(),
            warm: None,
            warm_orphans: Vec::new(),
            now: 0,
            out: SessionStep::default(),
            mirrored_entries: 0,
            context_tools: Vec::new(),
            later_sections: Vec::new(),
            start_errors: Vec::new(),
            start_errors_call: None,
            prompted: false,
        }
    }

    /// The agent loop inside.
    pub fn agent(&self) -> &AgentMachine {
        &self.agent
    }

    /// The session's entries.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// Whether anything is in progress: a run, a retry wait, a compaction, a held prompt, an
    /// input waiting for its extensions, an extension command running.
    pub fn is_busy(&self) -> bool {
        self.run_busy()
            || self.inputs_pending()
            || self.commands_pending()
            || !self.compact_callbacks.is_empty()
    }

    /// Pi's `input` source of the texts from now on (`"rpc"` in RPC mode; the default is
    /// [`INTERACTIVE_SOURCE`]).
    pub fn set_input_source(&mut self, source: &str) {
        source.clone_into(&mut self.input_source);
    }

    /// Whether a prompt's work is in progress (what `agent_settled` waits for; a queued text
    /// waiting for its extensions is not part of it, as in Pi).
    fn run_busy(&self) -> bool {
        self.agent.is_streaming()
            || self.notifications.holds()
            || self.wake.is_some()
            || self.compaction.is_some()
            || !self.failing.is_empty()
            || self.navigating()
            || self.pending_prompt.is_some()
            || matches!(self.before_settle, BeforeSettle::Asking(_))
    }

    /// Whether a compaction (manual or automatic) is running: Pi's manual one has ended once
    /// its `session_compact_failed` handlers run, an automatic one not yet.
    pub fn is_compacting(&self) -> bool {
        self.compaction.is_some() || self.automatic_failing()
    }

    /// The retry counter (Pi's `retryAttempt`).
    pub fn retry_attempt(&self) -> u32 {
        self.retry_attempt
    }

    /// Whether a retry is waiting for its backoff.
    pub fn is_retrying(&self) -> bool {
        matches!(self.wake, Some((_, Wake::Retry)))
    }

    /// The queued steering and follow-up texts (Pi's `getSteeringMessages`/`getFollowUpMessages`).
    pub fn queued_texts(&self) -> (&[String], &[String]) {
        (&self.steering_texts, &self.follow_up_texts)
    }

    /// When the machine wants [`SessionInput::Wake`]: a timer of the run, or a cache warm.
    pub fn wake_at(&self) -> Option<u64> {
        let run = self.wake.map(|(at, _)| at);
        match (run, self.warm_wake_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Feeds one input at time `now`. A refused input leaves the machine as it was, except that
    /// an agent refusal after a compaction was started cannot happen (they are checked first).
    pub fn step(&mut self, now: u64, input: SessionInput) -> Result<SessionStep, SessionError> {
        self.now = now.max(self.now);
        self.out = SessionStep::default();
        match input {
            SessionInput::Prompt {
                text,
                images,
                streaming_behavior,
            } => self.user_input(text, images, InputKind::Prompt(streaming_behavior))?,
            SessionInput::PromptWithMessages {
                text,
                images,
                messages,
            } => self.prompt(text, images, messages, None)?,
            SessionInput::Extension(entry) => self.extension_entry(entry)?,
            SessionInput::Steer { text, images } => {
                self.user_input(text, images, InputKind::Queue(StreamingBehavior::Steer))?
            }
            SessionInput::FollowUp { text, images } => {
                self.user_input(text, images, InputKind::Queue(StreamingBehavior::FollowUp))?
            }
            SessionInput::Abort => self.abort()?,
            SessionInput::SetModel(model) => self.set_model(model, None, "set")?,
            SessionInput::SetScopedModel(model, level) => {
                self.set_model(model, Some(level), "cycle")?
            }
            SessionInput::CycleModel(model) => self.set_model(model, None, "cycle")?,
            SessionInput::SetThinkingLevel(level) => self.set_thinking_level(level)?,
            SessionInput::Compact {
                custom_instructions,
            } => self.compact(custom_instructions)?,
            SessionInput::Navigate(request) => self.navigate(request)?,
            SessionInput::BashResult(message) => self.record_bash(message)?,
            SessionInput::UserBash {
                command,
                exclude_from_context,
            } => self.ask_user_bash(command, exclude_from_context),
            SessionInput::AbortUserBash => self.abort_user_bash(),
            SessionInput::SetSteeringMode(mode) => self.set_queue_mode(mode, true)?,
            SessionInput::SetFollowUpMode(mode) => self.set_queue_mode(mode, false)?,
            SessionInput::SetAutoCompaction(enabled) => self.compaction_settings.enabled = enabled,
            SessionInput::SetAutoRetry(enabled) => self.retry.enabled = enabled,
            SessionInput::AbortRetry => self.abort_retry(),
            SessionInput::ClearQueue => self.clear_queue()?,
            SessionInput::SetSessionName(name) => self.set_session_name(&name),
            SessionInput::SetSystem { sections, tools } => self.agent.set_system(sections, tools),
            SessionInput::Answer(input) => self.answer(input)?,
            SessionInput::Wake => {
                self.wake()?;
                self.warm_due();
            }
            SessionInput::Start => {
                self.tell_session(HookPayload::SessionStart {
                    reason: "startup".into(),
                    previous_session_file: None,
                });
                self.start_errors_after_start();
                self.discover_resources("startup");
            }
            SessionInput::Shutdown => self.tell_session(HookPayload::SessionShutdown {
                reason: "quit".into(),
                target_session_file: None,
            }),
            SessionInput::AskReplace(payload) => self.ask_replace(payload),
            SessionInput::ResumeCommand { name, run, answer } => {
                self.resume_carried(name, run, answer)
            }
            SessionInput::Leave {
                reason,
                target_session_file,
            } => self.tell_session(HookPayload::SessionShutdown {
                reason,
                target_session_file,
            }),
            SessionInput::Replaced {
                reason,
                previous_session_file,
            } => {
                self.tell_session(HookPayload::SessionStart {
                    reason,
                    previous_session_file,
                });
                self.discover_resources("startup");
            }
            SessionInput::Reloaded => {
                self.reactivate_registered_tools();
                self.tell_session(HookPayload::SessionStart {
                    reason: "reload".into(),
                    previous_session_file: None,
                });
                self.discover_resources("reload");
            }
        }
        self.after_step()?;
        self.hold_cancels();
        let mut out = std::mem::take(&mut self.out);
        out.wake_at = self.wake_at();
        Ok(out)
    }

    /// Runs what was waiting for the agent to become idle, and settles a prompt whose work is
    /// over.
    fn after_step(&mut self) -> Result<(), SessionError> {
        if self.agent.is_streaming() || self.notifications.holds() {
            return Ok(());
        }
        if let Some(JobState::WaitingForIdle) = self.compaction.as_ref().map(|job| job.state) {
            self.begin_compaction_calls()?;
        }
        if self.compaction.is_none() {
            if let Some(prompt) = self.pending_prompt.take() {
                self.agent_step(Input::Prompt(prompt))?;
            }
        }
        if self.run_active && !self.run_busy() && !self.asks_before_settle() {
            self.run_active = false;
            self.warming_settled();
            let aborted = std::mem::take(&mut self.abort_requested);
            self.settle(aborted);
        }
        if !self.run_active {
            self.start_asked_compaction()?;
        }
        Ok(())
    }

    /// Pi's `prompt`; `added` are the messages extensions added to it (they follow the user's
    /// message in the same run).
    pub(super) fn prompt(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        added: Vec<CustomMessage>,
        behavior: Option<StreamingBehavior>,
    ) -> Result<(), SessionError> {
        if self.agent.is_streaming() {
            let behavior = behavior.ok_or(SessionRejection::NeedsStreamingBehavior)?;
            return self.queue(text, images, behavior);
        }
        if self.prompt_refused_while_busy() {
            return Err(SessionRejection::PromptWhileCompacting.into());
        }
        self.flush_pending_bash()?;
        // Pi puts the messages held for the next turn right after the prompt's own.
        let mut added = added;
        added.splice(0..0, std::mem::take(&mut self.pending_next_turn));
        let prompt = match added.is_empty() {
            true => Prompt::Text { text, images },
            false => {
                let user = crate::message::UserMessage::from_text(text, images, self.now);
                let mut messages = vec![AgentMessage::User(user)];
                messages.extend(added.into_iter().map(AgentMessage::Custom));
                Prompt::Messages(messages)
            }
        };
        let last_assistant = self.agent.messages().iter().rev().find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.clone()),
            _ => None,
        });
        if let Some(assistant) = last_assistant {
            self.check_compaction(&assistant, false)?;
        }
        // The prompt's work starts here (its compaction first, if one is due).
        self.apply_later_sections();
        self.run_active = true;
        self.abort_requested = false;
        if self.compaction.is_some() || self.settling() {
            self.pending_prompt = Some(prompt);
            return Ok(());
        }
        let started = self.agent_step(Input::Prompt(prompt));
        self.run_active = started.is_ok();
        started
    }

    /// Whether a prompt now is refused as during a compaction (Pi's check before its input
    /// handlers run).
    pub(super) fn prompt_refused_while_busy(&self) -> bool {
        self.compaction.is_some()
            || self.automatic_failing()
            || self.pending_prompt.is_some()
            || self.navigating()
    }

    pub(super) fn queue(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        behavior: StreamingBehavior,
    ) -> Result<(), SessionError> {
        let message = AgentMessage::User(crate::message::UserMessage::from_text(
            text.clone(),
            images,
            self.now,
        ));
        match behavior {
            StreamingBehavior::Steer => {
                self.steering_texts.push(text);
                self.emit_queue_update();
                self.agent_step(Input::Steer(message))
            }
            StreamingBehavior::FollowUp => {
                self.follow_up_texts.push(text);
                self.emit_queue_update();
                self.agent_step(Input::FollowUp(message))
            }
        }
    }

    /// Pi's `clearQueue`: both queues emptied, in the agent too, and announced.
    fn clear_queue(&mut self) -> Result<(), SessionError> {
        self.steering_texts.clear();
        self.follow_up_texts.clear();
        let step = self
            .agent
            .step(self.now, Input::Change(Change::ClearAllQueues))?;
        self.route(step)?;
        self.emit_queue_update();
        Ok(())
    }

    fn emit_queue_update(&mut self) {
        self.emit(Event::Session(SessionEvent::QueueUpdate {
            steering: self.steering_texts.clone(),
            follow_up: self.follow_up_texts.clone(),
        }));
    }

    /// Drops a pending continue after a compaction.
    pub(super) fn cancel_continue(&mut self) {
        if matches!(self.wake, Some((_, Wake::AfterCompaction))) {
            self.wake = None;
        }
    }

    pub(super) fn abort(&mut self) -> Result<(), SessionError> {
        if self.run_active {
            self.abort_requested = true;
        }
        self.abort_retry();
        self.cancel_continue();
        self.pending_prompt = None;
        self.abort_compaction()?;
        self.abort_navigation();
        if self.agent.is_streaming() {
            self.agent_step(Input::Abort)?;
        }
        Ok(())
    }

    /// Asks for a wake at once for the held idle runs, unless a timer is set (its wake, or
    /// the run it continues, comes first).
    pub(super) fn wake_for_idle_runs(&mut self) {
        if self.wake.is_none() {
            self.wake = Some((self.now, Wake::IdleRuns));
        }
    }

    fn wake(&mut self) -> Result<(), SessionError> {
        let Some((at, kind)) = self.wake else {
            return Ok(());
        };
        if self.now < at {
            return Ok(());
        }
        self.wake = None;
        if kind == Wake::IdleRuns {
            return self.start_idle_runs();
        }
        if kind == Wake::SummaryRetry {
            self.retry_summary_call()?;
            return self.retry_navigation_call();
        }
        // The transcript is being replaced: continuing it now would race the replacement.
        if self.compaction.is_some() || self.navigating() {
            return Ok(());
        }
        // Pi ignores a failing `continue()` here (e.g. nothing left to continue from).
        match self.agent.step(self.now, Input::Continue) {
            Ok(step) => self.route(step),
            Err(StepError::Rejected(_)) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    pub(super) fn answer(&mut self, input: Input) -> Result<(), SessionError> {
        let Some(input) = self.provider_notice(input) else {
            return Ok(());
        };
        let call = match &input {
            Input::Model { call, .. } | Input::ModelFailed { call, .. } => Some(*call),
            _ => None,
        };
        if let Some(call) = call {
            if self.owns_warm_call(call) {
                self.warm_answer(input);
                return Ok(());
            }
            if self.compaction.as_ref().is_some_and(|job| job.owns(call)) {
                return self.compaction_answer(input);
            }
            if self
                .navigation
                .as_ref()
                .is_some_and(|job| job.call == call && !job.waiting)
            {
                return self.navigation_answer(input);
            }
        }
        if let Input::ToolFinished { call, outcome } = &input {
            self.tool_search_finished(*call, outcome);
        }
        if let Input::ToolActed { action, .. } = &input {
            // Checked by the agent (its call must be running), then applied at once.
            let action = action.clone();
            self.agent_step(input)?;
            self.apply_asked_actions(std::slice::from_ref(&action))?;
            // `ctx.abort()` from the tool is Pi's `AgentSession.abort()`: the run (the tool's
            // own call with it) is aborted at once.
            if action.aborts() {
                self.abort()?;
            }
            return Ok(());
        }
        if let Input::HookDecided { call, outcome } = &input {
            // A command's errors are reported with its answer, under the command's name; an
            // input's and a `user_bash`'s after what its handlers asked for (they ask before
            // they throw).
            if !self.awaits_command(*call)
                && !self.awaits_input(*call, &outcome.decision)
                && !matches!(outcome.decision, HookDecision::UserBash { .. })
            {
                self.report_hook_errors(&outcome.errors);
            }
            if self.owns_warm_call(*call) {
                let (call, outcome) = (*call, outcome.clone());
                self.warm_decided(call, outcome);
                return Ok(());
            }
            if self.awaits_before_settle(*call) {
                return self.before_settle_decided(outcome.clone());
            }
            if self.awaits_notification(*call) {
                let outcome = outcome.clone();
                return self.notified(&outcome);
            }
            if self.awaits_session_notification(*call) {
                let outcome = outcome.clone();
                return self.session_notified(*call, &outcome);
            }
            if self.awaits_tree_hook(*call) {
                return self.tree_hook_decided(outcome.clone());
            }
            if self.owns_compaction_hook(*call) {
                return self.compaction_hook_decided(*call, outcome.clone());
            }
            if self.awaits_callback(*call) {
                let (call, actions) = (*call, outcome.actions.clone());
                return self.called_back(call, &actions);
            }
            if self.awaits_command(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.command_ran(call, outcome);
            }
            if self.awaits_input(*call, &outcome.decision) {
                let (call, outcome) = (*call, outcome.clone());
                return self.input_decided(call, outcome);
            }
            if self.awaits_provider_notice(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.provider_notice_heard(call, &outcome);
            }
            if self.awaits_provider_hook(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.provider_hook_decided(call, outcome);
            }
        }
        // A handler's `ctx.abort()` is Pi's `AgentSession.abort()`: the agent applies it within
        // the decision, before its loop goes on, and the session settles as aborted.
        let aborts = matches!(&input, Input::HookDecided { outcome, .. }
            if outcome.actions.iter().any(HookAction::aborts));
        let mut input = input;
        if let Input::HookDecided { call, outcome } = &input {
            if self.agent.awaits_decision(*call, &outcome.decision) {
                let (call, outcome) = (*call, outcome.clone());
                let before = self.pending_input_calls();
                self.apply_asked_actions(&outcome.actions)?;
                if matches!(outcome.decision, HookDecision::BeforeAgentStart { .. }) {
                    self.apply_later_sections_now();
                    self.settle_later_idle_runs()?;
                }
                // A `turn_end` boundary's drafts are written before the loop goes on; a
                // continuation the context cannot take is refused.
                if let HookDecision::Boundary { entries, .. } = &outcome.decision {
                    self.commit_boundary(HookEvent::TurnEnd, entries)?;
                    if !self.boundary_goes_on(HookEvent::TurnEnd, &outcome.decision) {
                        let outcome = HookOutcome {
                            decision: HookDecision::Done,
                            ..outcome
                        };
                        input = Input::HookDecided { call, outcome };
                    }
                }
                if self.hold_decision(&before, &input, aborts) {
                    return Ok(());
                }
            }
        }
        self.decision_step(input, aborts)
    }

    /// Steps the agent with an answer, then runs the session's abort a handler asked for.
    pub(super) fn decision_step(&mut self, input: Input, aborts: bool) -> Result<(), SessionError> {
        self.agent_step(input)?;
        if aborts {
            self.abort()?;
        }
        Ok(())
    }

    /// Steps the agent and processes what it emitted.
    pub(super) fn agent_step(&mut self, input: Input) -> Result<(), SessionError> {
        let step = self.agent.step(self.now, input)?;
        self.route(step)
    }

    /// Replaces the agent's transcript (between runs).
    pub(super) fn replace_messages(
        &mut self,
        messages: Vec<AgentMessage>,
    ) -> Result<(), SessionError> {
        let step = self
            .agent
            .step(self.now, Input::Change(Change::Messages(messages)))?;
        self.route(step)
    }

    /// Sends an agent step's effects out (the session's requests restart cache warming;
    /// `tool_search` calls get what they search).
    pub(super) fn release(&mut self, effects: Vec<crate::agent::Effect>) {
        // The session's own requests (not summaries, which are sent from here) restart warming.
        for effect in &effects {
            if let crate::agent::Effect::CallModel { request, .. } = effect {
                self.start_warming(request);
            }
        }
        let mut effects = self.gate_provider_calls(effects);
        self.fill_tool_searches(&mut effects);
        self.out.effects.extend(effects);
    }

    pub(super) fn emit(&mut self, event: Event) {
        self.out.events.push(event);
    }

    /// Announces the entry `id` just appended (Pi 1.5's `entry_appended`), carrying it as JSON so
    /// the events stay below the session store. An entry is plain data with string keys, which
    /// always serializes; one that is not in the tree is not announced.
    pub(super) fn emit_entry_appended(&mut self, id: &str) {
        if let Some(entry) = self
            .tree
            .entry(id)
            .and_then(|e| serde_json::to_value(e).ok())
        {
            self.emit(Event::Session(SessionEvent::EntryAppended { entry }));
        }
    }

    pub(super) fn persist(&mut self, decision: Persist) {
        if decision != Persist::Nothing {
            self.out.persist = true;
        }
    }

    /// Pi's `_processAgentEvent`: queue bookkeeping, the event itself, persistence, then retry
    /// and compaction after the run.
    pub(super) fn process(&mut self, event: AgentEvent) -> Result<(), SessionError> {
        self.dequeue_started(&event);
        self.process_told(event)
    }

    /// Pi's bookkeeping before its extensions hear of an event: a user message that starts
    /// leaves the queue it was in, announced.
    pub(super) fn dequeue_started(&mut self, event: &AgentEvent) {
        if self.deaf() {
            return;
        }
        if let AgentEvent::MessageStart {
            message: AgentMessage::User(user),
        } = event
        {
            self.overflow_recovery_attempted = false;
            let text = user.content.text();
            if !text.is_empty() {
                if let Some(i) = self.steering_texts.iter().position(|t| *t == text) {
                    self.steering_texts.remove(i);
                    self.emit_queue_update();
                } else if let Some(i) = self.follow_up_texts.iter().position(|t| *t == text) {
                    self.follow_up_texts.remove(i);
                    self.emit_queue_update();
                }
            }
        }
    }

    /// The rest of [`process`](Self::process), once the extensions have heard of the event.
    pub(super) fn process_told(&mut self, mut event: AgentEvent) -> Result<(), SessionError> {
        if self.deaf() {
            return Ok(());
        }
        if let AgentEvent::AgentEnd {
            messages,
            will_retry,
        } = &mut event
        {
            *will_retry = Some(self.will_retry_after(messages));
        }
        let (ended, run_ended) = match &event {
            AgentEvent::MessageEnd { message } => (Some(message.clone()), false),
            AgentEvent::AgentEnd { .. } => (None, true),
            _ => (None, false),
        };
        self.emit(Event::Agent(event));
        if let Some(message) = ended {
            self.message_ended(message);
        }
        if run_ended {
            if let Some(assistant) = self.last_assistant.take() {
                let context_window = self.agent.model().context_window;
                if is_retryable(&assistant, context_window) && self.schedule_retry(&assistant)? {
                    return Ok(());
                }
                self.check_compaction(&assistant, true)?;
            }
            // The loop drains its queues before `agent_end`: what is queued now an `agent_end`
            // handler queued, and Pi's session continues the run with it.
            if self.compaction.is_none()
                && self.wake.is_none()
                && !self.abort_requested
                && self.agent.has_queued_messages()
            {
                self.agent_step(Input::Continue)?;
            }
        }
        Ok(())
    }

    fn message_ended(&mut self, message: AgentMessage) {
        let decision = match &message {
            AgentMessage::Custom(custom) => {
                let (_, decision) = self.tree.append_custom_message_entry(
                    &custom.custom_type,
                    custom.content.clone(),
                    custom.display,
                    custom.details.clone(),
                    self.now,
                    &mut self.ids,
                );
                decision
            }
            AgentMessage::System(_)
            | AgentMessage::User(_)
            | AgentMessage::Assistant(_)
            | AgentMessage::ToolResult(_) => {
                let (_, decision) =
                    self.tree
                        .append_message(message.clone(), self.now, &mut self.ids);
                decision
            }
            _ => Persist::Nothing,
        };
        self.persist(decision);
        if let AgentMessage::Assistant(assistant) = message {
            if !matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Length
            ) {
                self.overflow_recovery_attempted = false;
            }
            if assistant.stop_reason != StopReason::Error && self.retry_attempt > 0 {
                let attempt = std::mem::take(&mut self.retry_attempt);
                self.emit(Event::Session(SessionEvent::AutoRetryEnd {
                    success: true,
                    attempt,
                    final_error: None,
                }));
            }
            self.last_assistant = Some(assistant);
        }
    }

    /// Removes the last message from the agent's transcript when it is an assistant message
    /// (only an error one when `only_errors`); the session file keeps it.
    pub(super) fn drop_trailing_assistant(
        &mut self,
        only_errors: bool,
    ) -> Result<(), SessionError> {
        let messages = self.agent.messages();
        let drop = match messages.last() {
            Some(AgentMessage::Assistant(a)) => !only_errors || a.stop_reason == StopReason::Error,
            _ => false,
        };
        if drop {
            let kept = messages[..messages.len() - 1].to_vec();
            self.replace_messages(kept)?;
        }
        Ok(())
    }

    /// Continue the agent shortly after a compaction (to retry, or to deliver queued messages).
    pub(super) fn continue_soon(&mut self) {
        self.wake = Some((self.now.saturating_add(100), Wake::AfterCompaction));
    }

    /// Wakes the machine after `delay` ms to send a failed summary call again.
    pub(super) fn retry_summary_soon(&mut self, delay: u64) {
        self.wake = Some((self.now.saturating_add(delay), Wake::SummaryRetry));
    }

    /// Drops a summary call's pending retry; whether there was one.
    pub(super) fn cancel_summary_retry(&mut self) -> bool {
        let pending = matches!(self.wake, Some((_, Wake::SummaryRetry)));
        if pending {
            self.wake = None;
        }
        pending
    }

    /// Pi's `setModel` (`source` `"set"`) and cycling (`"cycle"`): a `model_change`
    /// entry, the thinking level carried over, and `model_select` for the extensions when the
    /// model changed.
    pub(super) fn set_model(
        &mut self,
        model: Model,
        explicit: Option<ThinkingLevel>,
        source: &str,
    ) -> Result<(), SessionError> {
        // Pi 1.5.2's `_getThinkingLevelForModelSwitch`: the scope's level, the model's own
        // setting, the settings' default, else the current level.
        let per_model = self
            .model_thinking_levels
            .get(&format!("{}/{}", model.provider, model.id))
            .copied();
        let carried = explicit
            .or(per_model)
            .or(self.default_thinking_level)
            .unwrap_or_else(|| self.agent.thinking_level());
        let (provider, id) = (model.provider.clone(), model.id.clone());
        let previous = self.agent.model().clone();
        let step = self
            .agent
            .step(self.now, Input::Change(Change::Model(model.clone())))?;
        self.route(step)?;
        let (_, decision) = self
            .tree
            .append_model_change(&provider, &id, self.now, &mut self.ids);
        self.persist(decision);
        self.set_thinking_level(carried)?;
        if (previous.provider.as_str(), previous.id.as_str()) != (provider.as_str(), id.as_str()) {
            self.tell_session(HookPayload::ModelSelect {
                model: Box::new(model),
                previous_model: Some(Box::new(previous)),
                source: source.to_owned(),
            });
        }
        Ok(())
    }

    pub(super) fn set_thinking_level(&mut self, level: ThinkingLevel) -> Result<(), SessionError> {
        let effective = clamp_thinking_level(self.agent.model(), level);
        let previous = self.agent.thinking_level();
        if effective == previous {
            return Ok(());
        }
        let step = self
            .agent
            .step(self.now, Input::Change(Change::ThinkingLevel(effective)))?;
        self.route(step)?;
        let (_, decision) =
            self.tree
                .append_thinking_level_change(effective.as_str(), self.now, &mut self.ids);
        self.persist(decision);
        self.emit(Event::Session(SessionEvent::ThinkingLevelChanged {
            level: effective,
        }));
        self.tell_session(HookPayload::ThinkingLevelSelect {
            level: effective,
            previous_level: previous,
        });
        Ok(())
    }

    /// The handlers that threw at a hook point, reported as Pi's runner does (before what the
    /// decision leads to).
    pub(super) fn report_hook_errors(&mut self, errors: &[HookError]) {
        for error in errors {
            self.emit(Event::Session(SessionEvent::ExtensionError {
                extension_path: error.extension.clone(),
                event: error.event.name().to_owned(),
                error: error.error.clone(),
            }));
        }
    }

    pub(super) fn reply(&mut self, reply: Reply) {
        if let Reply::Navigated(result) = &reply {
            if self.command_navigated(result) {
                return;
            }
        }
        self.out.replies.push(reply);
    }
}
