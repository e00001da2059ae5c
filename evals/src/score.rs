//! The estimators a run is summarised with: pass@k (can the model solve the task in k tries),
//! pass^k (does it solve it every time in k tries), and the mean score with its standard error;
//! and [`summarize`], which turns trials into the per-task and per-model summaries of
//! `results.json`. Errors and divergences are not verdicts on the model, so they are left out
//! of the estimators (but their tokens and dollars are still counted).

use std::collections::BTreeMap;

use crate::results::{AtK, JudgeSpend, ModelSummary, TaskSummary, TrialResult, TrialStatus, Usage};

/// Unbiased pass@k (Chen et al. 2021): the chance that at least one of k trials drawn without
/// replacement from `n` trials, `c` of them passed, passed: `1 - C(n-c,k)/C(n,k)`.
///
/// Computed as `1 - prod_{i=n-c+1..=n} (1 - k/i)`, which never forms a binomial coefficient,
/// so it is exact enough for any `n`. Out-of-range inputs are clamped rather than refused, so
/// a summary never panics: `c > n` is read as `c = n`, `k > n` as `k = n`; with no trials, no
/// passes or `k = 0` the value is 0.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    let c = c.min(n);
    let k = k.min(n);
    if n == 0 || c == 0 || k == 0 {
        return 0.0;
    }
    if n - c < k {
        return 1.0;
    }
    let k = f64::from(k);
    let all_fail: f64 = (n - c + 1..=n).map(|i| 1.0 - k / f64::from(i)).product();
    (1.0 - all_fail).clamp(0.0, 1.0)
}

/// pass^k (tau-bench): the chance that all of k trials drawn without replacement passed,
/// `C(c,k)/C(n,k)`; it measures reliability where pass@k measures capability.
///
/// Computed as `prod_{i=0..k} (c-i)/(n-i)`. Inputs are clamped as in [`pass_at_k`]; with no
/// trials the value is 0, and `k = 0` (no draws, so nothing failed) gives 1.
pub fn pass_hat_k(n: u32, c: u32, k: u32) -> f64 {
    let c = c.min(n);
    let k = k.min(n);
    if n == 0 {
        return 0.0;
    }
    if k > c {
        return 0.0;
    }
    (0..k)
        .map(|i| f64::from(c - i) / f64::from(n - i))
        .product::<f64>()
        .clamp(0.0, 1.0)
}

/// The mean of `values` and its standard error (the sample standard deviation, n-1 in the
/// denominator, over the square root of n): how far the mean would move were the trials run
/// again. The error is 0 with fewer than two values, where it cannot be estimated; an empty
/// slice gives (0, 0).
pub fn mean_and_stderr(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (variance / n).sqrt())
}

/// Summarises trials per (suite, task, model) and per model, both sorted.
///
/// A task's estimators use only the trials that are a verdict on the model
/// ([`TrialStatus::is_verdict`]); usage, dollars, turns and wall time cover every trial, since
/// they were spent all the same. A model's pass@1, score and standard error are taken over its
/// tasks with at least one counted trial, each task weighing the same however many trials it
/// ran; a task where every trial errored says nothing about the model.
pub fn summarize(trials: &[TrialResult]) -> (Vec<TaskSummary>, Vec<ModelSummary>) {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&TrialResult>> = BTreeMap::new();
    for trial in trials {
        groups
            .entry((&trial.suite, &trial.task, &trial.model))
            .or_default()
            .push(trial);
    }
    let tasks: Vec<TaskSummary> = groups
        .into_iter()
        .map(|((suite, task, model), group)| summarize_task(suite, task, model, &group))
        .collect();

    let mut by_model: BTreeMap<&str, Vec<&TaskSummary>> = BTreeMap::new();
    for task in &tasks {
        by_model.entry(&task.model).or_default().push(task);
    }
    let models = by_model
        .into_iter()
        .map(|(model, group)| summarize_model(model, &group))
        .collect();
    (tasks, models)
}

fn summarize_task(suite: &str, task: &str, model: &str, trials: &[&TrialResult]) -> TaskSummary {
    let count = |status: TrialStatus| trials.iter().filter(|t| t.status == status).count();
    let counted_scores: Vec<f64> = trials
        .iter()
        .filter(|t| t.status.is_verdict())
        .map(|t| t.score)
        .collect();
    let n = to_u32(counted_scores.len());
    let c = to_u32(trials.iter().filter(|t| t.status.is_pass()).count());
    let (mean_score, stderr) = mean_and_stderr(&counted_scores);
    let mut usage = Usage::default();
    for trial in trials {
        usage.add(&trial.usage);
    }
    let all = trials.len().max(1) as f64;
    TaskSummary {
        suite: suite.to_owned(),
        task: task.to_owned(),
        model: model.to_owned(),
        trials: to_u32(trials.len()),
        counted: n,
        passed: c,
        errors: to_u32(count(TrialStatus::Error)),
        diverged: to_u32(count(TrialStatus::Diverged)),
        pass_at_k: (1..=n)
            .map(|k| AtK {
                k,
                value: pass_at_k(n, c, k),
            })
            .collect(),
        pass_hat_k: (1..=n)
            .map(|k| AtK {
                k,
                value: pass_hat_k(n, c, k),
            })
            .collect(),
        mean_score,
        stderr,
        usage,
        cost: trials.iter().map(|t| t.cost).sum(),
        replayed_cost: trials.iter().map(|t| t.replayed_cost).sum(),
        judge: trials.iter().fold(JudgeSpend::default(), |mut sum, t| {
            sum.add(&t.judge);
            sum
        }),
        mean_turns: trials.iter().map(|t| f64::from(t.turns)).sum::<f64>() / all,
        mean_wall_ms: trials.iter().map(|t| t.wall_ms as f64).sum::<f64>() / all,
    }
}

fn summarize_model(model: &str, tasks: &[&TaskSummary]) -> ModelSummary {
    let verdicts: Vec<&&TaskSummary> = tasks.iter().filter(|t| t.counted > 0).collect();
    let pass_at_1: Vec<f64> = verdicts
        .iter()
        .map(|t| pass_at_k(t.counted, t.passed, 1))
        .collect();
    let scores: Vec<f64> = verdicts.iter().map(|t| t.mean_score).collect();
    let (score, stderr) = mean_and_stderr(&scores);
    let mut usage = Usage::default();
    for task in tasks {
        usage.add(&task.usage);
    }
    ModelSummary {
        model: model.to_owned(),
        tasks: to_u32(tasks.len()),
        trials: tasks.iter().map(|t| t.trials).sum(),
        passed: tasks.iter().map(|t| t.passed).sum(),
        errors: tasks.iter().map(|t| t.errors).sum(),
        diverged: tasks.iter().map(|t| t.diverged).sum(),
        pass_at_1: mean_and_stderr(&pass_at_1).0,
        score,
        stderr,
        usage,
        cost: tasks.iter().map(|t| t.cost).sum(),
        replayed_cost: tasks.iter().map(|t| t.replayed_cost).sum(),
        judge: tasks.iter().fold(JudgeSpend::default(), |mut sum, t| {
            sum.add(&t.judge);
            sum
        }),
    }
}

/// Counts past `u32::MAX` (four billion trials) saturate rather than wrap.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "score_tests.rs"]
mod tests;
