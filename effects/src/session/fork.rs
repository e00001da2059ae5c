//! Where a fork of a session goes (Pi 1.5.2's `AgentSessionRuntime.fork`), decided once for
//! every front end (the SDK's `Session::fork`, RPC `fork` and `clone`): the entry to branch
//! at, the text of the user message forked before, and whether the new session is a new file,
//! a branch of the file, or, for a session kept in memory, a branch kept in memory.

use std::path::{Path, PathBuf};

use pi_core::message::AgentMessage;
use pi_core::session::entry::SessionEntry;
use pi_core::session::tree::SessionTree;

/// Pi's text for a fork from an entry that does not exist or (before it) is not a user message.
pub const INVALID_FORK_ENTRY: &str = "Invalid entry ID for forking";
/// Pi's text for a fork of a session to be written whose file is not written yet.
pub const FORK_UNSAVED: &str =
    "This session has not been saved yet. Send a message before cloning or forking it.";

/// Where the fork starts relative to the chosen entry (Pi's `position`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkPosition {
    /// The branch up to just before a user message, whose text is handed back (`fork`).
    Before,
    /// The branch up to and including the entry (`clone` of the current leaf).
    At,
}

/// The session a fork continues in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForkTarget {
    /// A new, empty session whose header names `parent` (the forked session's file, if any): a
    /// fork before the first message. Kept in memory when the forked session is.
    New { parent: Option<String> },
    /// A new file holding the branch of the file `from` that ends at `leaf`.
    Branch { from: PathBuf, leaf: String },
    /// A session kept in memory holding the branch of the forked one (kept in memory too) that
    /// ends at `leaf` (Pi's `createBranchedSession` on an in-memory manager).
    BranchInMemory { leaf: String },
}

/// A fork as decided: the target and the text of the user message forked before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForkPlan {
    pub target: ForkTarget,
    pub text: Option<String>,
}

/// Decides the fork of the session holding `tree`, whose file is `file` (`None` for one kept in
/// memory; a replay's is the recorded run's path), at `entry_id`; `saved`: whether that file is
/// on disk yet (a replay's own copy of it: a replay never looks at the recorded run's files).
/// Refused with Pi's texts ([`INVALID_FORK_ENTRY`], [`FORK_UNSAVED`]).
pub fn plan_fork(
    tree: &SessionTree,
    file: Option<&Path>,
    saved: bool,
    entry_id: &str,
    position: ForkPosition,
) -> Result<ForkPlan, &'static str> {
    let entry = tree.entry(entry_id).ok_or(INVALID_FORK_ENTRY)?;
    let (leaf, text) = match position {
        ForkPosition::At => (Some(entry.id().to_owned()), None),
        ForkPosition::Before => match entry {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(user) => (m.parent_id.clone(), Some(user.content.text())),
                _ => return Err(INVALID_FORK_ENTRY),
            },
            _ => return Err(INVALID_FORK_ENTRY),
        },
    };
    let target = match (leaf, file) {
        (None, file) => ForkTarget::New {
            parent: file.map(|f| f.to_string_lossy().into_owned()),
        },
        (Some(leaf), None) => ForkTarget::BranchInMemory { leaf },
        (Some(_), Some(_)) if !saved => return Err(FORK_UNSAVED),
        (Some(leaf), Some(from)) => ForkTarget::Branch {
            from: from.to_path_buf(),
            leaf,
        },
    };
    Ok(ForkPlan { target, text })
}
