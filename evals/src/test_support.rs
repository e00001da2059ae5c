//! Builders of crafted trials and results, shared by the unit tests.

use crate::results::{Calls, EvalResults, SuiteRef, TrialResult, TrialStatus, Usage};
use crate::score::summarize;

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
        judge: Default::default(),
        turns: 2,
        wall_ms: 100,
        cassette: None,
        reason: None,
        final_text: String::new(),
        transcript: Vec::new(),
        attempts: 1,
        earlier_errors: Vec::new(),
        tags: Vec::new(),
        metadata: serde_json::Map::new(),
        context: Default::default(),
    }
}

/// `passed` passing trials then `failed` failing ones of one task (scores 1 and 0), numbered
/// from 0.
pub(crate) fn outcomes(
    suite: &str,
    task: &str,
    model: &str,
    passed: u32,
    failed: u32,
) -> Vec<TrialResult> {
    (0..passed + failed)
        .map(|i| {
            if i < passed {
                trial(suite, task, model, i, TrialStatus::Passed, 1.0)
            } else {
                trial(suite, task, model, i, TrialStatus::Failed, 0.0)
            }
        })
        .collect()
}

/// A whole run of suite `s` (digest `d1`), mode `replay`, holding `trials` with summaries.
pub(crate) fn results(mut trials: Vec<TrialResult>) -> EvalResults {
    trials.sort_by(|a, b| {
        (&a.suite, &a.task, &a.model, a.trial).cmp(&(&b.suite, &b.task, &b.model, b.trial))
    });
    let (tasks, models) = summarize(&trials);
    EvalResults {
        schema_version: crate::results::SCHEMA_VERSION,
        harness: "0.1.0".to_owned(),
        suites: vec![SuiteRef {
            name: "s".to_owned(),
            path: "suites/s.toml".to_owned(),
            digest: "d1".to_owned(),
        }],
        mode: "replay".to_owned(),
        isolation: "none".to_owned(),
        shards: None,
        trials,
        tasks,
        models,
        progress: Default::default(),
    }
}
