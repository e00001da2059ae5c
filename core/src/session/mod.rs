//! Pi's sessions: the v3 JSONL lines, the entry tree and its context, ids and timestamps.

pub mod context;
pub mod entry;
pub mod file;
pub mod ids;
pub mod selection;
pub mod time;
pub mod tree;
