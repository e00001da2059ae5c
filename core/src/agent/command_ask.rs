//! What a running extension command asks of the session through its context (Pi 1.5.2's
//! `ctx.navigateTree` in a command's handler), as data. The handler's run stops at the call:
//! the command's hook point is decided with [`CommandAsk`] (the actions asked before it
//! with it), the session carries the ask out as the matching front-end call would (its own hook
//! points nested), and then asks the command to go on
//! ([`HookPayload::CommandResume`](super::hooks::HookPayload::CommandResume)) with Pi's result
//! ([`CommandAnswer`]). Both are hook effects and decisions, so a cassette records them and a
//! replay answers the whole command without the extension.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::UserContent;

/// One call of a command's context that only the session can carry out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum CommandAsk {
    /// `ctx.navigateTree(targetId, options)`: Pi's `navigateTree` with those options.
    #[serde(rename_all = "camelCase")]
    NavigateTree {
        target_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summarize: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replace_instructions: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// `ctx.newSession(options)`: Pi's runtime `newSession`, its `session_before_switch`
    /// (reason `new`) asked first; the front end builds the new session (a child of
    /// `parent_session`, where given) and the command goes on there. `with_session`: a
    /// `withSession` callback waits to run with the new session's context.
    #[serde(rename_all = "camelCase")]
    NewSession {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session: Option<String>,
        #[serde(default)]
        with_session: bool,
    },
    /// `ctx.fork(entryId, options)`: Pi's runtime `fork`, its `session_before_fork` asked
    /// first (`position`: `before` where not given); the front end forks and the command goes
    /// on in the new session.
    #[serde(rename_all = "camelCase")]
    Fork {
        entry_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        position: Option<String>,
        #[serde(default)]
        with_session: bool,
    },
    /// `ctx.switchSession(sessionPath, options)`: Pi's runtime `switchSession`, its
    /// `session_before_switch` (reason `resume`) asked first; the front end opens the file and
    /// the command goes on in that session.
    #[serde(rename_all = "camelCase")]
    SwitchSession {
        session_path: String,
        #[serde(default)]
        with_session: bool,
    },
    /// The replaced session's `ctx.sendUserMessage` (the context `withSession` is given): Pi
    /// prompts the new session and the call returns once that run has settled.
    #[serde(rename_all = "camelCase")]
    SendUserMessage {
        content: UserContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deliver_as: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expand_prompt_templates: Option<bool>,
    },
    /// The replaced session's `ctx.sendMessage` (the context `withSession` is given): Pi's
    /// `sendCustomMessage`, whose call returns once a run it triggers has settled.
    #[serde(rename_all = "camelCase")]
    SendMessage {
        message: super::hooks::InjectedMessage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deliver_as: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger_turn: Option<bool>,
    },
    /// `ctx.reload()`: Pi's `AgentSession.reload` (the extensions hear `session_shutdown` with
    /// reason `reload`, are loaded again, hear `session_start` and `resources_discover` with
    /// reason `reload`; the tools active stay so and the extensions' are active again); the
    /// session and its file go on. The front end carries it out, then the command goes on
    /// with its context stale.
    Reload,
    /// `ctx.newSession({setup})`: what the `setup` callback wrote through the new session's
    /// `SessionManager`, in order; Pi then rebuilds the agent's context from the session
    /// (`refreshContext`) before `withSession` runs.
    SetupSession { appends: Vec<SessionAppend> },
}

/// One write of a `setup` callback through Pi's `SessionManager`: an entry appended at the
/// leaf, announced to no one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub enum SessionAppend {
    /// `appendMessage(message)`.
    AppendMessage {
        message: crate::message::AgentMessage,
    },
    /// `appendCustomEntry(customType, data)`.
    #[serde(rename_all = "camelCase")]
    AppendCustomEntry {
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// `appendCustomMessageEntry(customType, content, display, details)`.
    #[serde(rename_all = "camelCase")]
    AppendCustomMessageEntry {
        custom_type: String,
        content: UserContent,
        display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// `appendSessionInfo(name)`.
    AppendSessionInfo { name: String },
    /// `appendLabelChange(targetId, label)`.
    #[serde(rename_all = "camelCase")]
    AppendLabelChange {
        target_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
}

/// What the command's call gives back: Pi's result (`{cancelled}` for a navigation), or the
/// error the call throws in the handler; `Replaced`: the session was replaced, the handler's
/// context (the old session's) is stale, and its `withSession` runs with the new session's
/// context before the call returns the result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandAnswer {
    Result(Value),
    Error(String),
    Replaced(Value),
}
