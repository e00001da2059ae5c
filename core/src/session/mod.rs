//! Pi's session files: the v3 JSONL header and entries.

pub mod entry;
