//! Builders of crafted trials and results, shared by the unit tests.

use crate::results::{Calls, TrialResult, TrialStatus, Usage};

/// A trial with the given outcome; everything else is plain (one token of each kind, one
/// cent, two turns, 100 ms).
pub(crate) fn trial(
    suite: &str,
    task: &str,
    model: &str,
    trial: u32,
    status: TrialStatus,
    score: f64,
) -> TrialResult {
    TrialResult {
        suite: suite.to_owned(),
        task: task.to_owned(),
        model: model.to_owned(),
        trial,
        seed: u64::from(trial),
        status,
        score,
        checks: Vec::new(),
        usage: Usage {
            input: 1,
            output: 1,
            cache_read: 1,
            cache_write: 1,
            total_tokens: 4,
        },
        cost: 0.01,
        replayed_cost: 0.0,
        calls: Calls {
            live: 1,
            replayed: 0,
        },
        turns: 2,
        wall_ms: 100,
        cassette: None,
        reason: None,
        final_text: String::new(),
        transcript: Vec::new(),
    }
}
