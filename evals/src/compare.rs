//! Run comparison: is candidate run B worse than baseline run A, task by task and model by
//! model, beyond what trial-to-trial noise explains?
//!
//! Two tests answer two questions. Per (suite, task, model) row, one-sided Fisher exact tests
//! on the passes of both runs handle trial noise: 1/1 -> 0/1 is a coin toss, 10/10 -> 0/10 is
//! not. Per model, over the tasks both runs counted, one-sided exact sign tests on the per-task
//! mean score deltas handle "many small drops": twenty tasks each a little worse is a
//! regression even though no single task's drop is significant. Each verdict's direction is the
//! direction its test found, never the sign of a mean.
//!
//! Many rows are many chances of a false alarm: with 50 tasks and no real change, uncorrected
//! tests at 0.05 call something a regression most of the time. So the p-values of each family
//! (the rows; the models) are adjusted by Holm's method, and alpha is split between the two
//! families (alpha / 2 each): the chance that a comparison of two runs of the same model
//! reports any regression at all stays at most alpha (see `docs/evals.md`).
//!
//! Summaries are recomputed from the trials with [`crate::score::summarize`], so both runs are
//! judged by this build's estimators whatever wrote their files.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::results::{EvalResults, TaskSummary};
use crate::score::{mean_and_stderr, pass_at_k, summarize};
use crate::significance::{fisher_one_sided, holm, rate_difference, sign_test_worse, Effect};

/// How sure a comparison must be before it calls a change a regression or an improvement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompareOptions {
    /// The significance level: a change is reported when its p-value is below this.
    pub alpha: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { alpha: 0.05 }
    }
}

/// What a row or a model did between A and B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// B is worse and the test says it is not noise.
    Regressed,
    /// B is better and the test says it is not noise.
    Improved,
    /// B differs, but no more than noise would explain.
    Changed,
    /// No difference.
    Same,
    /// Only A ran it.
    OnlyInA,
    /// Only B ran it.
    OnlyInB,
    /// A side has no counted trials (every trial errored or diverged): nothing to compare.
    NotComparable,
}

/// One side of a row: a task's outcome in one run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    pub trials: u32,
    /// Trials that are a verdict on the model: the denominator of the pass rate.
    pub counted: u32,
    pub passed: u32,
    pub mean_score: f64,
}

impl Side {
    fn of(summary: &TaskSummary) -> Self {
        Side {
            trials: summary.trials,
            counted: summary.counted,
            passed: summary.passed,
            mean_score: summary.mean_score,
        }
    }
}

/// One (suite, task, model) row.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowComparison {
    pub suite: String,
    pub task: String,
    pub model: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Side>,
    /// One-sided Fisher p-value for "B passes less often than A" (when both sides counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_worse: Option<f64>,
    /// One-sided Fisher p-value for "B passes more often than A".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_better: Option<f64>,
    /// `p_worse` and `p_better` adjusted by Holm's method over the rows: what the verdict uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_worse_adjusted: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_better_adjusted: Option<f64>,
    /// B's pass rate minus A's, with Newcombe's 95% hybrid score interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    pub verdict: Difference,
}

/// One model, over the tasks both runs counted.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelComparison {
    pub model: String,
    /// Tasks both runs counted: the pairs of the test.
    pub tasks: u32,
    /// Mean over the paired tasks of pass@1, in A and in B.
    pub pass_at_1_a: f64,
    pub pass_at_1_b: f64,
    /// Mean over the paired tasks of the mean score, in A and in B.
    pub score_a: f64,
    pub score_b: f64,
    /// Mean of the per-task score deltas (B - A) and its paired standard error.
    pub mean_delta: f64,
    pub stderr: f64,
    /// Tasks whose score rose, and fell (ties are left out of the sign test).
    pub rises: u32,
    pub drops: u32,
    /// Exact one-sided sign test p-values: for "B is worse" (this many drops or more) and
    /// "B is better".
    pub p_worse: f64,
    pub p_better: f64,
    /// Both adjusted by Holm's method over the models: what the verdict uses.
    pub p_worse_adjusted: f64,
    pub p_better_adjusted: f64,
    /// The mean over the paired tasks of B's pass rate minus A's, with a 95% interval (Zou and
    /// Donner's MOVER from Wilson intervals; Newcombe's for one task). Absent without a paired
    /// task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    pub verdict: Difference,
}

/// Something that makes the comparison less than like for like.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The suite's file differs between the runs: the tasks or checks may have changed.
    SuiteChanged {
        suite: String,
        digest_a: String,
        digest_b: String,
    },
    /// Model calls were answered differently (live against replayed, say).
    ModeDiffers { a: String, b: String },
    /// Commands were confined differently.
    IsolationDiffers { a: String, b: String },
    /// A run holds only some shards: rows missing from it were not run, not lost.
    Partial {
        run: String,
        held: Vec<u32>,
        count: u32,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::SuiteChanged {
                suite,
                digest_a,
                digest_b,
            } => write!(
                f,
                "suite {suite}: digest differs (A {}, B {}): the suite text changed",
                short(digest_a),
                short(digest_b)
            ),
            Warning::ModeDiffers { a, b } => {
                write!(f, "mode differs: A ran {a}, B ran {b}")
            }
            Warning::IsolationDiffers { a, b } => {
                write!(f, "isolation differs: A ran {a}, B ran {b}")
            }
            Warning::Partial { run, held, count } => {
                let held: Vec<String> = held.iter().map(u32::to_string).collect();
                write!(f, "{run} holds shards {} of {count} only", held.join(", "))
            }
        }
    }
}

/// The comparison of candidate run B with baseline run A.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The chance of any false regression (or improvement) the comparison allows.
    pub alpha: f64,
    /// How p-values are adjusted within a family: `holm`.
    pub correction: &'static str,
    /// The level each family's adjusted p-values are held to: alpha / 2 for the rows and
    /// alpha / 2 for the models.
    pub row_alpha: f64,
    pub model_alpha: f64,
    /// Every row of either run, sorted by suite, task and model.
    pub rows: Vec<RowComparison>,
    /// Every model of either run, sorted.
    pub models: Vec<ModelComparison>,
    pub warnings: Vec<Warning>,
}

/// Compares candidate run `b` with baseline run `a`.
pub fn compare(a: &EvalResults, b: &EvalResults, options: &CompareOptions) -> Comparison {
    let alpha = options.alpha;
    let (row_alpha, model_alpha) = (alpha / 2.0, alpha / 2.0);
    let (tasks_a, _) = summarize(&a.trials);
    let (tasks_b, _) = summarize(&b.trials);
    let key = |t: &TaskSummary| (t.suite.clone(), t.task.clone(), t.model.clone());
    let by_key_a: BTreeMap<_, _> = tasks_a.iter().map(|t| (key(t), t)).collect();
    let by_key_b: BTreeMap<_, _> = tasks_b.iter().map(|t| (key(t), t)).collect();
    let keys: BTreeSet<_> = by_key_a.keys().chain(by_key_b.keys()).cloned().collect();

    let mut rows: Vec<RowComparison> = keys
        .into_iter()
        .map(|key| {
            let a = by_key_a.get(&key).map(|t| Side::of(t));
            let b = by_key_b.get(&key).map(|t| Side::of(t));
            let (suite, task, model) = key;
            compare_row(suite, task, model, a, b)
        })
        .collect();
    judge_rows(&mut rows, row_alpha);

    let models: BTreeSet<&str> = rows.iter().map(|r| r.model.as_str()).collect();
    let mut models: Vec<ModelComparison> = models
        .into_iter()
        .map(|model| compare_model(model, &rows))
        .collect();
    judge_models(&mut models, model_alpha);

    Comparison {
        alpha,
        correction: "holm",
        row_alpha,
        model_alpha,
        rows,
        models,
        warnings: warnings(a, b),
    }
}

/// A row with its tests and effect; its verdict waits for the other rows ([`judge_rows`]).
fn compare_row(
    suite: String,
    task: String,
    model: String,
    a: Option<Side>,
    b: Option<Side>,
) -> RowComparison {
    let mut row = RowComparison {
        suite,
        task,
        model,
        a,
        b,
        p_worse: None,
        p_better: None,
        p_worse_adjusted: None,
        p_better_adjusted: None,
        effect: None,
        verdict: Difference::Same,
    };
    row.verdict = match (a, b) {
        (None, _) => Difference::OnlyInB,
        (_, None) => Difference::OnlyInA,
        (Some(a), Some(b)) if a.counted == 0 || b.counted == 0 => Difference::NotComparable,
        (Some(a), Some(b)) => {
            let (p_worse, p_better) = fisher_one_sided(a.passed, a.counted, b.passed, b.counted);
            row.p_worse = Some(p_worse);
            row.p_better = Some(p_better);
            row.effect = Some(rate_difference(&[(
                a.passed, a.counted, b.passed, b.counted,
            )]));
            // Pass rates compared by cross-multiplying, so 1/2 and 2/4 are the same rate.
            let rate_a = u64::from(a.passed) * u64::from(b.counted);
            let rate_b = u64::from(b.passed) * u64::from(a.counted);
            if rate_a == rate_b {
                Difference::Same
            } else {
                Difference::Changed
            }
        }
    };
    row
}

/// Adjusts the tested rows' p-values by Holm's method (worse and better each a family) and
/// calls a row regressed or improved when its adjusted p-value is below `alpha`.
fn judge_rows(rows: &mut [RowComparison], alpha: f64) {
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].p_worse.is_some())
        .collect();
    let worse = holm(
        &tested
            .iter()
            .map(|&i| rows[i].p_worse.unwrap_or(1.0))
            .collect::<Vec<_>>(),
    );
    let better = holm(
        &tested
            .iter()
            .map(|&i| rows[i].p_better.unwrap_or(1.0))
            .collect::<Vec<_>>(),
    );
    for ((&i, worse), better) in tested.iter().zip(worse).zip(better) {
        let row = &mut rows[i];
        row.p_worse_adjusted = Some(worse);
        row.p_better_adjusted = Some(better);
        // p_worse + p_better >= 1: at most one of them is below alpha.
        if worse < alpha {
            row.verdict = Difference::Regressed;
        } else if better < alpha {
            row.verdict = Difference::Improved;
        }
    }
}

/// Score deltas this small are rounding, not change.
const TIE: f64 = 1e-12;

/// A model over the tasks both runs counted; its verdict waits for the other models
/// ([`judge_models`]).
fn compare_model(model: &str, rows: &[RowComparison]) -> ModelComparison {
    let mine: Vec<&RowComparison> = rows.iter().filter(|r| r.model == model).collect();
    let pairs: Vec<(Side, Side)> = mine
        .iter()
        .filter_map(|r| match (r.a, r.b) {
            (Some(a), Some(b)) if a.counted > 0 && b.counted > 0 => Some((a, b)),
            _ => None,
        })
        .collect();
    let mean = |f: &dyn Fn(&(Side, Side)) -> f64| {
        mean_and_stderr(&pairs.iter().map(f).collect::<Vec<_>>()).0
    };
    let deltas: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| b.mean_score - a.mean_score)
        .collect();
    let (mean_delta, stderr) = mean_and_stderr(&deltas);
    let rises = count(deltas.iter().filter(|d| **d > TIE).count());
    let drops = count(deltas.iter().filter(|d| **d < -TIE).count());
    let verdict = if pairs.is_empty() {
        if mine.iter().all(|r| r.verdict == Difference::OnlyInA) {
            Difference::OnlyInA
        } else if mine.iter().all(|r| r.verdict == Difference::OnlyInB) {
            Difference::OnlyInB
        } else {
            Difference::NotComparable
        }
    } else if rises + drops == 0 {
        Difference::Same
    } else {
        Difference::Changed
    };
    ModelComparison {
        model: model.to_owned(),
        tasks: count(pairs.len()),
        pass_at_1_a: mean(&|(a, _)| pass_at_k(a.counted, a.passed, 1)),
        pass_at_1_b: mean(&|(_, b)| pass_at_k(b.counted, b.passed, 1)),
        score_a: mean(&|(a, _)| a.mean_score),
        score_b: mean(&|(_, b)| b.mean_score),
        mean_delta,
        stderr,
        rises,
        drops,
        p_worse: sign_test_worse(rises, drops),
        p_better: sign_test_worse(drops, rises),
        p_worse_adjusted: 1.0,
        p_better_adjusted: 1.0,
        effect: pass_rate_effect(&pairs),
        verdict,
    }
}

/// The mean difference of pass rates over paired tasks, with its 95% interval (see
/// [`rate_difference`]); `None` without a paired task.
fn pass_rate_effect(pairs: &[(Side, Side)]) -> Option<Effect> {
    let counts: Vec<_> = pairs
        .iter()
        .map(|(a, b)| (a.passed, a.counted, b.passed, b.counted))
        .collect();
    (!counts.is_empty()).then(|| rate_difference(&counts))
}

/// Adjusts the compared models' sign-test p-values by Holm's method (worse and better each a
/// family) and calls a model regressed or improved when its adjusted p-value is below `alpha`:
/// the direction is the test's, not the mean's (nine tasks a little worse and one much better
/// is a regression, though the mean rose).
fn judge_models(models: &mut [ModelComparison], alpha: f64) {
    let tested: Vec<usize> = (0..models.len())
        .filter(|&i| models[i].rises + models[i].drops > 0)
        .collect();
    let worse = holm(
        &tested
            .iter()
            .map(|&i| models[i].p_worse)
            .collect::<Vec<_>>(),
    );
    let better = holm(
        &tested
            .iter()
            .map(|&i| models[i].p_better)
            .collect::<Vec<_>>(),
    );
    for ((&i, worse), better) in tested.iter().zip(worse).zip(better) {
        let model = &mut models[i];
        model.p_worse_adjusted = worse;
        model.p_better_adjusted = better;
        if worse < alpha {
            model.verdict = Difference::Regressed;
        } else if better < alpha {
            model.verdict = Difference::Improved;
        }
    }
}

fn warnings(a: &EvalResults, b: &EvalResults) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for suite_a in &a.suites {
        for suite_b in b.suites.iter().filter(|s| s.name == suite_a.name) {
            if suite_a.digest != suite_b.digest {
                warnings.push(Warning::SuiteChanged {
                    suite: suite_a.name.clone(),
                    digest_a: suite_a.digest.clone(),
                    digest_b: suite_b.digest.clone(),
                });
            }
        }
    }
    if a.mode != b.mode {
        warnings.push(Warning::ModeDiffers {
            a: a.mode.clone(),
            b: b.mode.clone(),
        });
    }
    if a.isolation != b.isolation {
        warnings.push(Warning::IsolationDiffers {
            a: a.isolation.clone(),
            b: b.isolation.clone(),
        });
    }
    for (run, results) in [("A", a), ("B", b)] {
        if let Some(shards) = &results.shards {
            warnings.push(Warning::Partial {
                run: run.to_owned(),
                held: shards.held.clone(),
                count: shards.count,
            });
        }
    }
    warnings
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The first 12 characters of a digest: enough to tell two apart.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

impl Comparison {
    /// Rows and models that regressed: what a CI gate fails on.
    pub fn regressions(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Difference::Regressed)
            .count()
            + self
                .models
                .iter()
                .filter(|m| m.verdict == Difference::Regressed)
                .count()
    }

    /// A plain-text report, most urgent first: regressions, improvements, changes within noise,
    /// rows only one run has or that cannot be compared, one line per model, then warnings.
    /// Deterministic: the same comparison gives the same text.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Comparison of B (candidate) with A (baseline), alpha {}\n\
             p: one-sided in the direction found, Holm-adjusted over the rows (at {}) and over \
             the models (at {}); Δ: B's pass rate minus A's, with its 95% interval",
            self.alpha, self.row_alpha, self.model_alpha
        );
        let model_lines = |verdict: Difference| -> Vec<String> {
            self.models
                .iter()
                .filter(|m| m.verdict == verdict)
                .map(model_line)
                .collect()
        };
        let row_lines = |verdict: Difference| -> Vec<String> {
            self.rows
                .iter()
                .filter(|r| r.verdict == verdict)
                .map(row_line)
                .collect()
        };
        let sections = [
            ("Regressions", {
                let mut lines = row_lines(Difference::Regressed);
                lines.extend(model_lines(Difference::Regressed));
                lines
            }),
            ("Improvements", {
                let mut lines = row_lines(Difference::Improved);
                lines.extend(model_lines(Difference::Improved));
                lines
            }),
            ("Changes within noise", row_lines(Difference::Changed)),
            ("Only in A", row_lines(Difference::OnlyInA)),
            ("Only in B", row_lines(Difference::OnlyInB)),
            (
                "Not comparable (no counted trials on a side)",
                row_lines(Difference::NotComparable),
            ),
        ];
        for (title, lines) in sections {
            if lines.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title} ({}):", lines.len());
            for line in lines {
                let _ = writeln!(out, "  {line}");
            }
        }
        let same = self
            .rows
            .iter()
            .filter(|r| r.verdict == Difference::Same)
            .count();
        let _ = writeln!(out, "\nUnchanged rows: {same}");
        if !self.models.is_empty() {
            let _ = writeln!(out, "\nModels:");
            for model in &self.models {
                let _ = writeln!(out, "  {}", model_line(model));
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(out, "\nWarnings:");
            for warning in &self.warnings {
                let _ = writeln!(out, "  {warning}");
            }
        }
        out
    }
}

fn side_text(side: Option<Side>) -> String {
    match side {
        Some(s) => format!("{}/{}", s.passed, s.counted),
        None => "-".to_owned(),
    }
}

fn row_line(row: &RowComparison) -> String {
    let mut line = format!(
        "{}/{} [{}]: passed {} -> {}",
        row.suite,
        row.task,
        row.model,
        side_text(row.a),
        side_text(row.b)
    );
    if let (Some(a), Some(b)) = (row.a, row.b) {
        if row.verdict == Difference::NotComparable {
            for (run, side) in [("A", a), ("B", b)] {
                if side.counted == 0 {
                    let _ = write!(line, ", {run} counted none of {} trials", side.trials);
                }
            }
        } else {
            let _ = write!(line, ", score {:.3} -> {:.3}", a.mean_score, b.mean_score);
        }
    }
    if let Some(effect) = row.effect {
        if row.verdict != Difference::Same {
            let _ = write!(line, ", {}", effect_text(effect));
        }
    }
    let pair = |p: Option<f64>, adjusted: Option<f64>| p.zip(adjusted);
    let p = match row.verdict {
        Difference::Regressed => pair(row.p_worse, row.p_worse_adjusted),
        Difference::Improved => pair(row.p_better, row.p_better_adjusted),
        Difference::Changed => match (row.p_worse, row.p_better) {
            (Some(w), Some(b)) if w <= b => pair(row.p_worse, row.p_worse_adjusted),
            _ => pair(row.p_better, row.p_better_adjusted),
        },
        _ => None,
    };
    if let Some((p, adjusted)) = p {
        let _ = write!(line, ", p {} (Holm {})", p_text(p), p_text(adjusted));
    }
    if row.verdict == Difference::Changed {
        line.push_str(": not significant, may be noise");
    }
    line
}

fn model_line(model: &ModelComparison) -> String {
    if model.tasks == 0 {
        let why = match model.verdict {
            Difference::OnlyInA => "only in A",
            Difference::OnlyInB => "only in B",
            _ => "no task counted by both runs",
        };
        return format!("{}: {why}", model.model);
    }
    let (p, adjusted) = if model.p_worse <= model.p_better {
        (model.p_worse, model.p_worse_adjusted)
    } else {
        (model.p_better, model.p_better_adjusted)
    };
    let effect = model
        .effect
        .map(|e| format!(", {}", effect_text(e)))
        .unwrap_or_default();
    format!(
        "{}: pass@1 {:.3} -> {:.3}{effect}, score {:.3} -> {:.3} ({:+.3} ± {:.3}), {} tasks ({} up, {} down), p {} (Holm {}): {}",
        model.model,
        model.pass_at_1_a,
        model.pass_at_1_b,
        model.score_a,
        model.score_b,
        model.mean_delta,
        model.stderr,
        model.tasks,
        model.rises,
        model.drops,
        p_text(p),
        p_text(adjusted),
        verdict_text(model.verdict)
    )
}

/// A pass-rate difference and its interval: `Δ -0.60 [-0.85, -0.21]`.
fn effect_text(effect: Effect) -> String {
    format!(
        "Δ {:+.2} [{:+.2}, {:+.2}]",
        effect.delta, effect.low, effect.high
    )
}

fn verdict_text(verdict: Difference) -> &'static str {
    match verdict {
        Difference::Regressed => "regressed",
        Difference::Improved => "improved",
        Difference::Changed => "changed within noise",
        Difference::Same => "same",
        Difference::OnlyInA => "only in A",
        Difference::OnlyInB => "only in B",
        Difference::NotComparable => "not comparable",
    }
}

/// p-values: three decimals, or scientific notation below 0.001 so tiny ones stay readable.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
