//! What goes into the session machine and what comes out of it.

use crate::agent::{AgentConfig, Effect, Input, StepError};
use crate::compaction::CompactionSettings;
use crate::event::{CompactionResult, Event};
use crate::message::ImageContent;
use crate::model::{Model, ThinkingLevel};
use crate::session::ids::IdGenerator;
use crate::session::tree::SessionTree;

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
    pub retry: RetrySettings,
    pub compaction: CompactionSettings,
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
    /// `AgentSession.abort`: the run, a retry wait and a compaction in progress.
    Abort,
    SetModel(Model),
    SetThinkingLevel(ThinkingLevel),
    /// Manual compaction with optional custom instructions.
    Compact {
        custom_instructions: Option<String>,
    },
    /// An answer to one of the machine's effects (model events, tool updates and results).
    Answer(Input),
    /// The time the machine asked to be woken at has come.
    Wake,
}

impl SessionInput {
    /// A short name for error messages.
    pub fn name(&self) -> String {
        match self {
            SessionInput::Prompt { .. } => "prompt".into(),
            SessionInput::Steer { .. } => "steer".into(),
            SessionInput::FollowUp { .. } => "follow_up".into(),
            SessionInput::Abort => "abort".into(),
            SessionInput::SetModel(_) => "set_model".into(),
            SessionInput::SetThinkingLevel(_) => "set_thinking_level".into(),
            SessionInput::Compact { .. } => "compact".into(),
            SessionInput::Answer(input) => input.name(),
            SessionInput::Wake => "wake".into(),
        }
    }
}

/// The outcome of an operation that finishes later than the step that started it.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A manual compaction ended: its result or the error Pi throws.
    Compacted(Result<CompactionResult, String>),
}

/// The output of one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionStep {
    pub effects: Vec<Effect>,
    pub events: Vec<Event>,
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
}

/// Why a session step was refused; the machine is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Rejected(#[from] SessionRejection),
    #[error(transparent)]
    Agent(#[from] StepError),
}
