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
}

/// What the command's call gives back: Pi's result (`{cancelled}` for a navigation), or the
/// error the call throws in the handler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandAnswer {
    Result(Value),
    Error(String),
}
