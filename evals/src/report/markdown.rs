//! A Markdown summary of a run, short enough for a pull-request comment or
//! `$GITHUB_STEP_SUMMARY`: how each model did, how each task did, and which trials failed and
//! why. The full picture (transcripts) is the HTML report's job.

use std::fmt::Write as _;

use super::escape::{markdown as md, one_line};
use super::format::{
    at_largest_k, cost, count, num, pass_at_1, pct, score_pm, status_name, suite_names,
};
use crate::results::{AtK, EvalResults, TaskSummary, TrialResult};

/// At most this many trials are listed as failing: GitHub cuts comments at 65,536 characters.
const MAX_FAILING: usize = 50;

/// Longest check name, detail or reason quoted in the failing list, in characters.
const MAX_QUOTE: usize = 200;

/// The results as GitHub-flavoured Markdown. Deterministic: the same results give the same
/// bytes.
pub fn render(results: &EvalResults) -> String {
    let mut out = String::new();
    header(results, &mut out);
    models(results, &mut out);
    tasks(results, &mut out);
    tags(results, &mut out);
    failing(results, &mut out);
    out
}

fn header(results: &EvalResults, out: &mut String) {
    out.push_str("## Eval results\n\n");
    let suites: Vec<String> = suite_names(results).iter().map(|s| md(s)).collect();
    let _ = write!(
        out,
        "Mode **{}** · isolation **{}** · harness {} · {} trials",
        md(&results.mode),
        md(&results.isolation),
        md(&results.harness),
        results.trials.len()
    );
    if !suites.is_empty() {
        let _ = write!(out, " · suites: {}", suites.join(", "));
    }
    if let Some(shards) = &results.shards {
        let held: Vec<String> = shards.held.iter().map(u32::to_string).collect();
        let _ = write!(out, " · shards {} of {}", held.join(", "), shards.count);
    }
    if let Some(stopped) = &results.progress.stopped {
        let _ = write!(
            out,
            "\n\n**Stopped: {}**: {} of {} planned trials ran",
            md(stopped),
            results.trials.len(),
            results
                .progress
                .planned
                .map_or_else(|| "?".to_owned(), |p| p.to_string())
        );
    }
    out.push_str("\n\n");
}

/// Per tag and model, over the trials of the tasks with that tag: how many were a verdict on
/// the model and how many of those passed. Absent when no task has a tag.
fn tags(results: &EvalResults, out: &mut String) {
    let mut rows: std::collections::BTreeMap<(&str, &str), (u32, u32)> = Default::default();
    for t in &results.trials {
        for tag in &t.tags {
            let row = rows.entry((tag, &t.model)).or_default();
            if t.status.is_verdict() {
                row.0 += 1;
                row.1 += u32::from(t.status.is_pass());
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "### Tags\n\n| Tag | Model | Passed / counted | Pass rate |\n|---|---|---:|---:|\n",
    );
    for ((tag, model), (counted, passed)) in rows {
        let rate = if counted == 0 {
            f64::NAN
        } else {
            f64::from(passed) / f64::from(counted)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {passed}/{counted} | {} |",
            md(tag),
            md(model),
            pct(rate)
        );
    }
    out.push('\n');
}

fn models(results: &EvalResults, out: &mut String) {
    if results.models.is_empty() {
        return;
    }
    out.push_str("### Models\n\n");
    out.push_str("| Model | pass@1 | Score ± stderr | Passed / counted | Errors | Diverged | Tokens | Cost (live / replayed) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for m in &results.models {
        let counted = m.trials.saturating_sub(m.errors).saturating_sub(m.diverged);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {}/{} | {} | {} | {} | {} / {} |",
            md(&m.model),
            pct(m.pass_at_1),
            score_pm(m.score, m.stderr),
            m.passed,
            counted,
            m.errors,
            m.diverged,
            count(m.usage.total_tokens),
            cost(m.cost),
            cost(m.replayed_cost)
        );
    }
    out.push('\n');
    let judged: Vec<String> = results
        .models
        .iter()
        .filter(|m| !m.judge.is_empty())
        .map(|m| {
            format!(
                "{} {} live / {} replayed, {} tokens",
                md(&m.model),
                cost(m.judge.cost),
                cost(m.judge.replayed_cost),
                count(m.judge.usage.total_tokens)
            )
        })
        .collect();
    if !judged.is_empty() {
        let _ = writeln!(out, "Judge calls (counted above): {}.\n", judged.join("; "));
    }
}

fn tasks(results: &EvalResults, out: &mut String) {
    if results.tasks.is_empty() {
        return;
    }
    let many_suites = suite_names(results).len() > 1;
    // One k for the whole column when every task ran the same number of trials.
    let ks: Vec<Option<u32>> = results
        .tasks
        .iter()
        .map(|t| at_largest_k(&t.pass_at_k).map(|a| a.k))
        .collect();
    let common_k = match ks.first() {
        Some(Some(k)) if ks.iter().all(|x| *x == Some(*k)) => Some(*k),
        _ => None,
    };
    out.push_str("### Tasks\n\n");
    match common_k {
        Some(k) => {
            let _ = writeln!(
                out,
                "| Task | Model | Passed / trials | pass@{k} | pass^{k} | Mean score |"
            );
        }
        None => out.push_str("| Task | Model | Passed / trials | pass@k | pass^k | Mean score |\n"),
    }
    out.push_str("|---|---|---:|---:|---:|---:|\n");
    for t in &results.tasks {
        let name = if many_suites {
            format!("{} / {}", md(&t.suite), md(&t.task))
        } else {
            md(&t.task)
        };
        let at = |v: &[AtK]| match (at_largest_k(v), common_k) {
            (Some(a), Some(_)) => pct(a.value),
            (Some(a), None) => format!("{} (k={})", pct(a.value), a.k),
            (None, _) => "–".to_string(),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {}{} | {} | {} | {} |",
            md(&t.model),
            passed_of(t),
            outcome_mark(t),
            at(&t.pass_at_k),
            at(&t.pass_hat_k),
            num(t.mean_score, 3)
        );
    }
    out.push('\n');
}

/// `passed/trials`, with errors and divergences noted.
fn passed_of(t: &TaskSummary) -> String {
    let mut s = format!("{}/{}", t.passed, t.trials);
    let mut notes: Vec<String> = Vec::new();
    if t.errors > 0 {
        notes.push(format!("{} error{}", t.errors, plural(t.errors)));
    }
    if t.diverged > 0 {
        notes.push(format!("{} diverged", t.diverged));
    }
    if !notes.is_empty() {
        let _ = write!(s, " ({})", notes.join(", "));
    }
    s
}

/// A mark a reader can scan for: all passed, some passed, none passed.
fn outcome_mark(t: &TaskSummary) -> &'static str {
    if t.counted == 0 {
        ""
    } else if t.passed == t.counted {
        " ✅"
    } else if pass_at_1(t) > 0.0 {
        " ⚠️"
    } else {
        " ❌"
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn failing(results: &EvalResults, out: &mut String) {
    let failing: Vec<&TrialResult> = results
        .trials
        .iter()
        .filter(|t| !t.status.is_pass())
        .collect();
    if failing.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Trials that did not pass ({})\n", failing.len());
    for t in failing.iter().take(MAX_FAILING) {
        let _ = write!(
            out,
            "- **{}** [{}] trial {}: {}",
            md(&t.task),
            md(&t.model),
            t.trial,
            status_name(t.status)
        );
        if let Some(c) = t.checks.iter().find(|c| !c.passed) {
            let _ = write!(
                out,
                " — first failed check: {} ({})",
                md(&one_line(&c.name, MAX_QUOTE)),
                md(&c.kind)
            );
            if let Some(detail) = &c.detail {
                let _ = write!(out, ": found {}", md(&one_line(detail, MAX_QUOTE)));
            }
        }
        if let Some(reason) = &t.reason {
            let _ = write!(out, " — {}", md(&one_line(reason, MAX_QUOTE)));
        }
        out.push('\n');
    }
    if failing.len() > MAX_FAILING {
        let _ = writeln!(
            out,
            "- … and {} more (see the HTML report)",
            failing.len() - MAX_FAILING
        );
    }
    out.push('\n');
}
