//! The scores `pi eval` prints when it ends: one line per model, then one per task and model.

use pi_evals::results::{AtK, EvalResults};

use crate::columns::left;

/// Prints the summary of `results` on stdout.
pub fn print(results: &EvalResults) {
    say(&lines(results).join("\n"));
}

/// Prints `text` and a newline on stdout; a closed stdout (`| head`) ends the output quietly.
pub fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// The summary's lines.
pub fn lines(results: &EvalResults) -> Vec<String> {
    let mut out = Vec::new();
    let model_width = results
        .models
        .iter()
        .map(|m| m.model.len())
        .chain(std::iter::once(5))
        .max()
        .unwrap_or(5);
    out.push(format!(
        "{}  {:>6}  {:>13}  {:>7}  {:>6}  {:>8}  {:>9}  {:>9}  {:>13}",
        left("model", model_width),
        "pass@1",
        "score",
        "passed",
        "errors",
        "diverged",
        "tokens",
        "live cost",
        "recorded cost"
    ));
    for m in &results.models {
        out.push(format!(
            "{}  {:>6.2}  {:>13}  {:>7}  {:>6}  {:>8}  {:>9}  {:>9}  {:>13}",
            left(&m.model, model_width),
            m.pass_at_1,
            format!("{:.2} ± {:.2}", m.score, m.stderr),
            format!("{}/{}", m.passed, m.trials),
            m.errors,
            m.diverged,
            m.usage.total_tokens,
            format!("${:.4}", m.cost),
            format!("${:.4}", m.replayed_cost),
        ));
    }
    for m in results.models.iter().filter(|m| !m.judge.is_empty()) {
        out.push(format!(
            "judge calls (counted above): {} ${:.4} live, ${:.4} recorded, {} tokens",
            m.model, m.judge.cost, m.judge.replayed_cost, m.judge.usage.total_tokens
        ));
    }
    out.push(String::new());
    let task_width = results
        .tasks
        .iter()
        .map(|t| t.task.len() + t.suite.len() + 1)
        .chain(std::iter::once(4))
        .max()
        .unwrap_or(4);
    out.push(format!(
        "{}  {}  {:>7}  {:>7}  {:>7}  {:>13}",
        left("task", task_width),
        left("model", model_width),
        "passed",
        "pass@k",
        "pass^k",
        "score"
    ));
    for t in &results.tasks {
        let last = |v: &[AtK]| {
            v.last()
                .map_or_else(|| "-".to_owned(), |a| format!("{:.2}@{}", a.value, a.k))
        };
        out.push(format!(
            "{}  {}  {:>7}  {:>7}  {:>7}  {:>13}",
            left(&format!("{}/{}", t.suite, t.task), task_width),
            left(&t.model, model_width),
            format!("{}/{}", t.passed, t.trials),
            last(&t.pass_at_k),
            last(&t.pass_hat_k),
            format!("{:.2} ± {:.2}", t.mean_score, t.stderr),
        ));
    }
    let broken: Vec<String> = results
        .trials
        .iter()
        .filter(|t| !t.status.is_verdict())
        .map(|t| {
            format!(
                "{} {}/{}/{}/{}: {}",
                serde_json::to_value(t.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                t.suite,
                t.task,
                t.model,
                t.trial,
                t.reason
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            )
        })
        .collect();
    if !broken.is_empty() {
        out.push(String::new());
        out.extend(broken);
    }
    out
}
