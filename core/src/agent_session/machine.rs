//! The session machine: Pi's `AgentSession` around the agent loop. It persists messages as they
//! end, retries transient failures after a backoff, compacts on threshold and on context
//! overflow, keeps the steering and follow-up texts for `queue_update`, and records model and
//! thinking-level changes. Like the agent machine it does no IO: time comes in with every input,
//! timers go out as `wake_at`, and summaries are model calls the interpreter makes.
//!
//! This file holds the machine's state, its accessors and `step`; what a step does is in the
//! sibling modules: `prompt.rs` (prompts, queues, abort), `answer.rs` (the interpreter's
//! answers routed), `process.rs` (the agent's events handled and persisted), `wake.rs` (the
//! timers), `model_change.rs` (model and thinking-level changes), and the others `mod.rs` lists.

use std::collections::BTreeMap;

use crate::agent::hooks::{HookAction, HookPayload};
use crate::agent::{AgentMachine, CallId, Input, Prompt, QueueMode};
use crate::compaction::CompactionSettings;
use crate::message::{AgentMessage, AssistantMessage, CustomMessage};
use crate::model::ThinkingLevel;
use crate::resources::Resources;
use crate::session::ids::IdGenerator;
use crate::session::tree::SessionTree;

use super::boundary::BeforeSettle;
use super::cache_warm::{CacheWarming, WarmRun};
use super::compaction::{CompactionJob, JobState};
use super::contract::{SessionConfig, SessionError, SessionInput, SessionStep, StreamingBehavior};
use super::input::{InputKind, PendingInput, INTERACTIVE_SOURCE};
use super::navigate::{NavigateJob, TreeAsk};
use super::retry::RetrySettings;
use super::wake::Wake;

/// An extension's `ctx.compact()` waiting for its turn: its custom instructions, the number
/// of its `onComplete`/`onError`, and whether it was asked while a run was active (it then
/// waits for the run to settle, `agent_settled` and all).
#[derive(Clone, Debug)]
pub(super) struct AskedCompaction {
    pub(super) custom_instructions: Option<String>,
    pub(super) callback: Option<u64>,
    pub(super) after_settle: bool,
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
    pub(super) default_thinking_level: Option<ThinkingLevel>,
    pub(super) model_thinking_levels: BTreeMap<String, ThinkingLevel>,
    pub(super) retry_attempt: u32,
    pub(super) wake: Option<(u64, Wake)>,
    pub(super) overflow_recovery_attempted: bool,
    pub(super) last_assistant: Option<AssistantMessage>,
    pub(super) steering_texts: Vec<String>,
    pub(super) follow_up_texts: Vec<String>,
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
    pub(super) pending_prompt: Option<Prompt>,
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
    /// The extensions' `ctx.compact()` calls waiting for the session to be idle, in the order
    /// they start (`extension_actions`).
    pub(super) asked_compaction: std::collections::VecDeque<AskedCompaction>,
    /// The compaction ends whose callbacks the extension host is calling.
    pub(super) compact_callbacks: Vec<CallId>,
    /// Extension commands running (`command.rs`).
    pub(super) pending_commands: Vec<(crate::agent::CallId, String)>,
    /// A command waiting for what its handler asked of the session (`command.rs`).
    pub(super) command_asking: Option<super::command::AskingCommand>,
    /// The replacement that command asked for (`ctx.newSession`), while it is asked.
    pub(super) command_replacement: Option<crate::agent::hooks::CommandAsk>,
    /// The command (name and run) this session left to the front end to carry out what it
    /// asked, until it resumes here (a reload's).
    pub(super) command_carried: Option<(String, u64)>,
    /// The loop's events an extension is being told of, and what waits for its handlers.
    pub(super) notifications: super::notify::Notifications,
    /// Agent model calls held for their provider hooks.
    pub(super) provider_gate: super::provider_hooks::ProviderGate,
    /// The model calls for a virtual model held for their routers.
    pub(super) route_gate: super::model_route::RouteGate,
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
    /// The declarations the last `prepareLoadout` answer hides (Pi's `_hiddenDeclarations`):
    /// left out of the prompt's tools and rules while a tool that prepares the loadout is
    /// active. The agent keeps the answer too, for the requests it builds; the session needs
    /// its own copy because the prompt is rebuilt before the agent takes the answer (its
    /// turn starts as it takes it).
    pub(super) hidden_declarations: Vec<String>,
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
    /// The providers registered or unregistered after loading, in order.
    pub(super) provider_changes: Vec<super::runtime_providers::ProviderChange>,
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
            asked_compaction: Default::default(),
            compact_callbacks: Vec::new(),
            pending_commands: Vec::new(),
            command_asking: None,
            command_replacement: None,
            command_carried: None,
            notifications: Default::default(),
            provider_gate: Default::default(),
            route_gate: Default::default(),
            provider_notices: Default::default(),
            run_active: false,
            abort_requested: false,
            cache_warming: None,
            registry: None,
            tool_searches: Vec::new(),
            hidden_declarations: Vec::new(),
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
            provider_changes: Vec::new(),
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
                self.resume_carried(name, run, answer)?
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
                loaded,
            } => {
                let mut servers = None;
                if let Some(mut loaded) = loaded {
                    servers = loaded.mcp_servers.take();
                    let added = self.apply_reload(*loaded)?;
                    self.reactivate_registered_tools(&added);
                }
                self.tell_session(HookPayload::SessionStart {
                    reason,
                    previous_session_file,
                });
                // Pi's new runner reports the servers nothing connects (`--no-mcp`).
                self.start_errors_after_start();
                if let Some(servers) = servers {
                    // Pi's MCP extension connects them at the session's start.
                    self.tell_session(HookPayload::McpServersChange { servers });
                }
                self.discover_resources("startup");
            }
            SessionInput::Reloaded(reload) => {
                let mut servers = None;
                let added = match reload {
                    Some(mut reload) => {
                        servers = reload.mcp_servers.take();
                        self.apply_reload(*reload)?
                    }
                    None => Vec::new(),
                };
                self.reactivate_registered_tools(&added);
                self.tell_session(HookPayload::SessionStart {
                    reason: super::contract::RELOAD_REASON.into(),
                    previous_session_file: None,
                });
                if let Some(servers) = servers {
                    // Pi's MCP extension, rebuilt with the runtime, connects the new load's
                    // servers at the reload's start and drops the previous load's.
                    self.tell_session(HookPayload::McpServersChange { servers });
                }
                self.start_errors_after_start();
                self.discover_resources(super::contract::RELOAD_REASON);
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
        self.release_routed_request()?;
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
}
