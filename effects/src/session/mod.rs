//! Session files: where they live, how they are named, read, appended, listed and forked, and
//! the claim that keeps a second process from writing one at the same time.

mod fork;
mod list;
mod lock;
mod paths;
mod read;
mod store;

pub use fork::{plan_fork, ForkPlan, ForkPosition, ForkTarget, FORK_UNSAVED, INVALID_FORK_ENTRY};
pub use list::{list_all_sessions, list_sessions, SessionInfo};
pub use lock::{LockError, SessionLock};
pub use paths::{
    agent_dir, agent_dir_from, default_session_dir, expand_tilde, file_name, resolve_session_dir,
    session_dir_name, sessions_root, AGENT_DIR_ENV, SESSION_DIR_ENV,
};
pub use store::{most_recent_session, SessionFile, SessionStore, StoreError};
