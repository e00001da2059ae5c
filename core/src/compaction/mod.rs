//! Compaction planning (pi-coding-agent `core/compaction/*`): estimating context size, deciding
//! when to compact, choosing what to keep, and building the exact summary requests. The model
//! calls themselves are effects, made by the session runtime.

pub mod branch;
pub mod cut;
pub mod files;
pub mod prepare;
pub mod summary;
pub mod tokens;

/// Compaction settings (`compaction.*` in settings.json).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Room kept free for the answer: compaction starts above `contextWindow - reserveTokens`.
    pub reserve_tokens: u64,
    /// Roughly how much recent conversation survives a compaction.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}
