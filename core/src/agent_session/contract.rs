//! What goes into the session machine and what comes out of it.

use std::collections::BTreeMap;

use crate::agent::hooks::HookPayload;
use crate::agent::{AgentConfig, Effect, Input, QueueMode, StepError, ToolSpec};
use crate::compaction::CompactionSettings;
use crate::event::{CompactionResult, Event};
use crate::message::{BashExecutionMessage, CustomMessage, ImageContent};
use crate::model::{Model, ThinkingLevel};
use crate::resources::Resources;
use crate::session::ids::IdGenerator;
use crate::session::tree::SessionTree;
use serde_json::{Map, Value};

use super::retry::RetrySettings;

/// How a prompt sent while the agent is streaming is delivered (Pi's `streamingBehavior`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamingBehavior {
    /// Delivered after the current tool calls, before the next model call.
    Steer,
    /// Delivered when the agent would otherwise stop.
    FollowUp,
}

/// Everything a session starts from.
#[derive(Debug)]
pub struct SessionConfig {
    /// The agent's model, thinking level, tools, system prompt and hooks. Its messages are
    /// replaced by the session's context.
    pub agent: AgentConfig,
    /// The session's entries (new or opened).
    pub tree: SessionTree,
    /// Entry ids; seeded, so a run replays exactly.
    pub ids: IdGenerator,
    /// Automatic retry of transient failures.
    pub retry: RetrySettings,
    /// When and how much to compact.
    pub compaction: CompactionSettings,
    /// The settings' `defaultThinkingLevel`: what a model switch asks for (the current level
    /// when unset). Pi 1.5.2 changes it only when told to persist, which no front end here does.
    pub default_thinking_level: Option<ThinkingLevel>,
    /// The settings' `modelThinkingLevels` (`"provider/id"` → level): the level a switch to that
    /// model asks for before the default.
    pub model_thinking_levels: BTreeMap<String, ThinkingLevel>,
    /// The skills and templates `/skill:name` and `/template` prompts expand with, after the
    /// `input` handlers (Pi expands what they leave).
    pub resources: Resources,
}

/// Everything the world can tell the session machine.
#[derive(Clone, Debug)]
pub enum SessionInput {
    /// `AgentSession.prompt`: a user message, or a queued one while streaming.
    Prompt {
        text: String,
        images: Vec<ImageContent>,
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        text: String,
        images: Vec<ImageContent>,
    },
    FollowUp {
        text: String,
        images: Vec<ImageContent>,
    },
    /// A prompt followed, in the same run, by the messages extensions added to it (Pi's
    /// `before_agent_start` results). This loop runs no extensions: a replay of a session Pi
    /// wrote gives them back with the prompt.
    PromptWithMessages {
        text: String,
        images: Vec<ImageContent>,
        messages: Vec<CustomMessage>,
    },
    /// An entry an extension wrote while the session was idle, given back by a replay of a
    /// session Pi wrote (as [`SessionInput::PromptWithMessages`]).
    Extension(ExtensionEntry),
    /// `AgentSession.abort`: the run, a retry wait and a compaction in progress.
    Abort,
    SetModel(Model),
    /// Switch to a model of the `--models` scope with the thinking level its pattern named
    /// (Pi's scoped cycling: an explicit level replaces the carried one).
    SetScopedModel(Model, ThinkingLevel),
    /// Switch to the next available model (Pi's cycling without a scope): a [`Self::SetModel`]
    /// the extensions hear of as a cycle (`model_select`'s `source`).
    CycleModel(Model),
    SetThinkingLevel(ThinkingLevel),
    /// Manual compaction with optional custom instructions.
    Compact {
        custom_instructions: Option<String>,
    },
    /// Move the leaf to another entry (Pi's `navigateTree`).
    Navigate(NavigateRequest),
    /// The result of a `!command` run by the user (Pi's `recordBashResult`).
    BashResult(BashExecutionMessage),
    /// An RPC `bash` command, asked of the `user_bash` handlers before anything runs (Pi's
    /// `emitUserBash`); answered with [`Reply::UserBash`], a result of theirs recorded as
    /// [`SessionInput::BashResult`] records one. Sent only when an extension handles it.
    UserBash {
        command: String,
        exclude_from_context: Option<bool>,
    },
    /// RPC `abort_bash`: the `user_bash` hook point being asked, if any, is cancelled (the
    /// signal of the `exec` a handler's operations run fires).
    AbortUserBash,
    /// How queued steering messages are delivered from now on (Pi's `setSteeringMode`).
    SetSteeringMode(QueueMode),
    /// How queued follow-up messages are delivered from now on (Pi's `setFollowUpMode`).
    SetFollowUpMode(QueueMode),
    /// Switches automatic compaction on or off (Pi's `setAutoCompactionEnabled`).
    SetAutoCompaction(bool),
    /// Switches automatic retry on or off (Pi's `setAutoRetryEnabled`).
    SetAutoRetry(bool),
    /// Cancels a retry waiting for its backoff (Pi's `abortRetry`); the run is left alone.
    AbortRetry,
    /// Empties both queues (Pi 1.5.2's `clearQueue`); queued messages are never delivered.
    ClearQueue,
    /// Names the session: a `session_info` entry and `session_info_changed` (Pi's
    /// `setSessionName`; the caller refuses an empty name as Pi's front ends do).
    SetSessionName(String),
    /// The system prompt's sections and the tools from the next turn on (Pi 1.5 resumed with
    /// other flags or context files): that turn records the difference as a system message. A
    /// replay of a session Pi wrote gives it back where the file's patch stands.
    SetSystem {
        sections: Map<String, Value>,
        tools: Vec<ToolSpec>,
    },
    /// An answer to one of the machine's effects (model events, tool updates and results).
    Answer(Input),
    /// The time the machine asked to be woken at has come.
    Wake,
    /// The front end is ready (Pi's `bindExtensions`, before the first prompt): the extensions
    /// that handle `session_start` hear it (reason `startup`). Sent only when one does.
    Start,
    /// The process is about to exit (Pi's runtime `dispose`, after the last run): the
    /// extensions that handle `session_shutdown` hear it (reason `quit`). Sent only when one
    /// does.
    Shutdown,
    /// The front end is about to replace the session (Pi's `AgentSessionRuntime`): the
    /// extensions that handle `payload`'s event (`session_before_switch`,
    /// `session_before_fork`) may cancel it; answered with [`Reply::Replacing`]. Sent only
    /// when one does.
    AskReplace(HookPayload),
    /// The session is being replaced by the one in `target_session_file` (in memory: none):
    /// the extensions that handle `session_shutdown` hear it with `reason` (`new`, `resume`,
    /// `fork`). Sent only when one does.
    Leave {
        reason: String,
        target_session_file: Option<String>,
    },
    /// A command whose handler waited in the session this one replaced
    /// ([`Reply::CommandReplacing`]) goes on here with `answer`.
    ResumeCommand {
        name: String,
        run: u64,
        answer: crate::agent::hooks::CommandAnswer,
    },
    /// The extensions were loaded again (Pi's `reload`, a command's `ctx.reload()`, after
    /// [`SessionInput::Leave`] with reason `reload`): the tools active stay so and the
    /// registered ones registration activates are active again, then the extensions hear
    /// `session_start` and `resources_discover` with reason `reload`. What the new load
    /// registered comes with it (hook points, tools, commands), taken in place of the
    /// previous load's before the tools are activated; `None` keeps them as they were (a
    /// recording made before reloads said it, or a replay's front end, whose recording has it).
    Reloaded(Option<Box<super::Reload>>),
    /// The session replaced the one in `previous_session_file`: the extensions that handle
    /// `session_start` hear it with `reason` (`new`, `resume`, `fork`). Sent only when one
    /// does. `loaded`: what the extensions, loaded again for the new session (Pi builds its
    /// runtime again), registered, taken as a reload's is before they hear it; `None` keeps
    /// what the session was built with (a recording made before replacements said it, or a
    /// replay's front end, whose recording has it).
    Replaced {
        reason: String,
        previous_session_file: Option<String>,
        loaded: Option<Box<super::Reload>>,
    },
}

/// The reason the extensions hear when a reload ends their load (`session_shutdown`) and
/// starts the next (`session_start`, `resources_discover`).
pub const RELOAD_REASON: &str = "reload";

impl SessionInput {
    /// The `session_shutdown` a reload begins with ([`SessionInput::Reloaded`] follows it).
    pub fn leave_for_reload() -> Self {
        SessionInput::Leave {
            reason: RELOAD_REASON.into(),
            target_session_file: None,
        }
    }

    /// Whether this is the `session_shutdown` a reload begins with.
    pub fn leaves_for_reload(&self) -> bool {
        matches!(self, SessionInput::Leave { reason, .. } if reason == RELOAD_REASON)
    }

    /// A short name for error messages.
    pub fn name(&self) -> String {
        match self {
            SessionInput::Prompt { .. } => "prompt".into(),
            SessionInput::PromptWithMessages { .. } => "prompt_with_messages".into(),
            SessionInput::Extension(_) => "extension_entry".into(),
            SessionInput::Steer { .. } => "steer".into(),
            SessionInput::FollowUp { .. } => "follow_up".into(),
            SessionInput::Abort => "abort".into(),
            SessionInput::SetModel(_) => "set_model".into(),
            SessionInput::SetScopedModel(..) => "set_scoped_model".into(),
            SessionInput::CycleModel(_) => "cycle_model".into(),
            SessionInput::SetThinkingLevel(_) => "set_thinking_level".into(),
            SessionInput::Compact { .. } => "compact".into(),
            SessionInput::Navigate(_) => "navigate".into(),
            SessionInput::BashResult(_) => "bash_result".into(),
            SessionInput::UserBash { .. } => "user_bash".into(),
            SessionInput::AbortUserBash => "abort_user_bash".into(),
            SessionInput::SetSteeringMode(_) => "set_steering_mode".into(),
            SessionInput::SetFollowUpMode(_) => "set_follow_up_mode".into(),
            SessionInput::SetAutoCompaction(_) => "set_auto_compaction".into(),
            SessionInput::SetAutoRetry(_) => "set_auto_retry".into(),
            SessionInput::SetSystem { .. } => "set_system".into(),
            SessionInput::AbortRetry => "abort_retry".into(),
            SessionInput::ClearQueue => "clear_queue".into(),
            SessionInput::SetSessionName(_) => "set_session_name".into(),
            SessionInput::Answer(input) => input.name(),
            SessionInput::Wake => "wake".into(),
            SessionInput::Start => "start".into(),
            SessionInput::Shutdown => "shutdown".into(),
            SessionInput::AskReplace(_) => "ask_replace".into(),
            SessionInput::Leave { .. } => "leave".into(),
            SessionInput::Replaced { .. } => "replaced".into(),
            SessionInput::Reloaded(_) => "reloaded".into(),
            SessionInput::ResumeCommand { .. } => "resume_command".into(),
        }
    }
}

/// An entry an extension writes (Pi's `appendEntry`, `sendMessage` without a turn,
/// `setLabel`).
#[derive(Clone, Debug, PartialEq)]
pub enum ExtensionEntry {
    /// A `custom` entry: extension state, not part of the conversation.
    Custom {
        custom_type: String,
        data: Option<Value>,
    },
    /// A `custom_message` entry: a message the model sees from then on.
    Message(CustomMessage),
    /// A `label` entry: a name for an entry (none clears it).
    Label {
        target_id: String,
        label: Option<String>,
    },
}

/// The outcome of an operation that finishes later than the step that started it.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A manual compaction ended: the number of its `compact` (the count of those accepted
    /// when it was, see `SessionMachine::compacts_accepted`; one that failed is answered once
    /// its `session_compact_failed` handlers ran, so possibly after a later one), and its
    /// result or the error Pi throws.
    Compacted(u64, Result<CompactionResult, String>),
    /// A navigation ended: where the editor goes, or the error Pi throws.
    Navigated(Result<Navigated, String>),
    /// An extension command's run ended and what it asked for was applied (the prompt that
    /// named it was handled); `errors`: what its handler threw, as Pi reports it.
    CommandRan {
        errors: Vec<crate::agent::hooks::HookError>,
    },
    /// A prompt sent while the agent streams without a behaviour had its `input` decision:
    /// handled by a handler, started (the run had ended by then), or Pi's refusal (the text
    /// was neither prompted nor queued).
    BusyPrompt(Result<BusyAnswer, String>),
    /// The extensions asked by [`SessionInput::AskReplace`] were heard: whether one cancelled
    /// the replacement.
    Replacing { cancelled: bool },
    /// The `user_bash` handlers asked by [`SessionInput::UserBash`] decided (in the order the
    /// commands came): `None` leaves the command to the local shell; a result was recorded
    /// already.
    UserBash(Option<crate::agent::user_bash::UserBashAnswer>),
    /// A running command asked for the session to be replaced (`ctx.newSession`) and no
    /// `session_before_switch` handler cancelled it: the front end replaces the session and
    /// resumes the command in the new one ([`SessionInput::ResumeCommand`]); or asked for a
    /// reload (`ctx.reload()`): the front end reloads the extensions in this session and
    /// resumes the command here.
    CommandReplacing(super::command::CarriedCommand),
    /// An extension asked the run to end (`ctx.shutdown()`): the front end ends it once
    /// nothing needs it, or not at all where its mode listens to no such request.
    ShutdownAsked,
}

/// How a prompt sent while the agent streams without a behaviour was taken, once its `input`
/// handlers decided (Pi 1.5.2 checks for a run only then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusyAnswer {
    /// A handler handled it: no message, no run.
    Handled,
    /// The run had ended meanwhile: it starts a run, in the step after the answer.
    Started,
}

/// Where to navigate and how (Pi's `navigateTree` options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NavigateRequest {
    /// The entry to go to.
    pub target_id: String,
    /// Summarise the branch being left.
    pub summarize: bool,
    /// Added to Pi's summary prompt (or replacing it, see `replace_instructions`).
    pub custom_instructions: Option<String>,
    /// Use `custom_instructions` instead of Pi's prompt rather than in addition to it.
    pub replace_instructions: bool,
    /// A label for the summary entry (or the target, without a summary).
    pub label: Option<String>,
}

/// The outcome of a navigation (Pi's `{editorText, cancelled, aborted, summaryEntry}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Navigated {
    /// The text of the user message navigated to, for the editor.
    pub editor_text: Option<String>,
    /// Nothing changed: an extension's `session_before_tree` cancelled it, or the summary was
    /// aborted.
    pub cancelled: bool,
    /// The summary was aborted.
    pub aborted: bool,
    /// The branch summary entry written, if any.
    pub summary_entry_id: Option<String>,
}

/// The output of one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionStep {
    /// What the interpreter must start (model calls, tools, cancels).
    pub effects: Vec<Effect>,
    /// Pi's events, in order.
    pub events: Vec<Event>,
    /// Results of operations that finished in this step.
    pub replies: Vec<Reply>,
    /// New entries were added that the session file must receive (Pi's lazy-flush rule applied).
    pub persist: bool,
    /// When to send [`SessionInput::Wake`] (a retry backoff or a post-compaction continue).
    pub wake_at: Option<u64>,
}

/// Errors thrown to the caller, with Pi's texts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionRejection {
    #[error("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")]
    NeedsStreamingBehavior,
    #[error("Compaction already in progress")]
    CompactionInProgress,
    /// Pi 1.5.2 refuses a prompt while a compaction or a branch summary runs.
    #[error("Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.")]
    PromptWhileCompacting,
    #[error("Wait for the current response to finish before navigating the session tree.")]
    NavigateWhileAnswering,
    #[error("Wait for the current compaction or tree navigation to finish before navigating the session tree.")]
    NavigateWhileCompacting,
    #[error("Branch navigation in progress")]
    NavigationInProgress,
    #[error("{0}")]
    Entry(String),
    /// Pi 1.5.2 refuses to queue a text that names an extension command.
    #[error("Extension command \"/{0}\" cannot be queued. Use prompt() or execute the command when not streaming.")]
    CommandQueued(String),
    /// A command resumed that is not the one this session left to the front end to carry
    /// out what it asked (a reload): a front end's mistake, or a recording tampered with.
    #[error("No command waits to resume as {0}")]
    NotCarried(String),
}

/// Why a session step was refused; the machine is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Rejected(#[from] SessionRejection),
    #[error(transparent)]
    Agent(#[from] StepError),
}
