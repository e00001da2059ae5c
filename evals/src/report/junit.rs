//! JUnit XML, the one test-report format every CI system reads (GitHub check annotations,
//! GitLab's test tab, Jenkins): one `<testsuite>` per eval suite and one `<testcase>` per task
//! and model, so a flaky task shows up where a flaky test would.
//!
//! A task+model fails when any counted trial failed (pass@1 < 1) and is an error when every
//! trial errored or diverged (the run says nothing about the model). Estimates go in
//! `<properties>`, which CI systems show next to the case.

use std::fmt::Write as _;

use super::escape::{one_line, xml, xml_text};
use super::format::{
    at_largest_k, is_error, is_failure, num, pass_at_1, seconds, status_name, suite_names,
    trials_of,
};
use crate::results::{EvalResults, TaskSummary, TrialResult};

/// Longest check detail or reason copied into a failure body, in characters: enough for a
/// command's output tail, short enough to keep the CI log readable.
const MAX_DETAIL: usize = 2_000;

/// The results as JUnit XML. Deterministic: the same results give the same bytes.
pub fn render(results: &EvalResults) -> String {
    let suites: Vec<Suite<'_>> = suite_names(results)
        .into_iter()
        .map(|name| Suite::new(results, name))
        .collect();

    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total = Totals::sum(suites.iter().map(|s| &s.totals));
    let _ = writeln!(out, "<testsuites name=\"pi-evals\"{}>", total.attributes());
    for suite in &suites {
        suite.write(results, &mut out);
    }
    out.push_str("</testsuites>\n");
    out
}

/// Counts and time of a suite (or all suites), as JUnit's attributes.
#[derive(Default)]
struct Totals {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    wall_ms: u64,
}

impl Totals {
    fn sum<'a>(all: impl Iterator<Item = &'a Totals>) -> Totals {
        let mut t = Totals::default();
        for s in all {
            t.tests += s.tests;
            t.failures += s.failures;
            t.errors += s.errors;
            t.skipped += s.skipped;
            t.wall_ms = t.wall_ms.saturating_add(s.wall_ms);
        }
        t
    }

    fn attributes(&self) -> String {
        format!(
            " tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\"",
            self.tests,
            self.failures,
            self.errors,
            self.skipped,
            seconds(self.wall_ms)
        )
    }
}

/// One suite's task summaries and their totals.
struct Suite<'a> {
    name: String,
    tasks: Vec<&'a TaskSummary>,
    totals: Totals,
}

impl<'a> Suite<'a> {
    fn new(results: &'a EvalResults, name: String) -> Suite<'a> {
        let tasks: Vec<&TaskSummary> = results.tasks.iter().filter(|t| t.suite == name).collect();
        let mut totals = Totals {
            tests: tasks.len(),
            ..Totals::default()
        };
        for task in &tasks {
            if is_error(task) {
                totals.errors += 1;
            } else if is_failure(task) {
                totals.failures += 1;
            } else if task.trials == 0 {
                totals.skipped += 1;
            }
            totals.wall_ms = totals.wall_ms.saturating_add(wall_ms(results, task));
        }
        Suite {
            name,
            tasks,
            totals,
        }
    }

    fn write(&self, results: &EvalResults, out: &mut String) {
        let name = xml(&self.name);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{name}\"{}>",
            self.totals.attributes()
        );
        out.push_str("    <properties>\n");
        property(out, 6, "mode", &results.mode);
        property(out, 6, "isolation", &results.isolation);
        property(out, 6, "harness", &results.harness);
        if let Some(s) = results.suites.iter().find(|s| s.name == self.name) {
            property(out, 6, "digest", &s.digest);
        }
        out.push_str("    </properties>\n");
        for task in &self.tasks {
            write_case(results, &name, task, out);
        }
        out.push_str("  </testsuite>\n");
    }
}

/// The summed wall time of a task's trials.
fn wall_ms(results: &EvalResults, task: &TaskSummary) -> u64 {
    trials_of(results, task).fold(0u64, |acc, t| acc.saturating_add(t.wall_ms))
}

fn property(out: &mut String, indent: usize, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "{:indent$}<property name=\"{}\" value=\"{}\"/>",
        "",
        xml(name),
        xml(value)
    );
}

fn write_case(results: &EvalResults, suite: &str, task: &TaskSummary, out: &mut String) {
    let trials: Vec<&TrialResult> = trials_of(results, task).collect();
    let _ = writeln!(
        out,
        "    <testcase classname=\"{suite}\" name=\"{}\" time=\"{}\">",
        xml(&format!("{} [{}]", task.task, task.model)),
        seconds(wall_ms(results, task))
    );

    out.push_str("      <properties>\n");
    property(out, 8, "pass@1", &num(pass_at_1(task), 4));
    if let Some(a) = at_largest_k(&task.pass_at_k) {
        property(out, 8, &format!("pass@{}", a.k), &num(a.value, 4));
    }
    if let Some(a) = at_largest_k(&task.pass_hat_k) {
        property(out, 8, &format!("pass^{}", a.k), &num(a.value, 4));
    }
    property(out, 8, "mean score", &num(task.mean_score, 4));
    property(out, 8, "stderr", &num(task.stderr, 4));
    property(out, 8, "trials", &task.trials.to_string());
    property(out, 8, "passed", &task.passed.to_string());
    property(out, 8, "counted", &task.counted.to_string());
    property(out, 8, "errors", &task.errors.to_string());
    property(out, 8, "diverged", &task.diverged.to_string());
    property(out, 8, "tokens", &task.usage.total_tokens.to_string());
    property(out, 8, "cost", &num(task.cost, 6));
    property(out, 8, "replayed cost", &num(task.replayed_cost, 6));
    out.push_str("      </properties>\n");

    let not_passed: Vec<&TrialResult> = trials
        .iter()
        .copied()
        .filter(|t| !t.status.is_pass())
        .collect();
    if is_error(task) {
        let message = format!("all {} trials errored or diverged", task.trials);
        write_outcome(out, "error", &message, &not_passed);
    } else if is_failure(task) {
        let mut message = format!("{}/{} trials passed", task.passed, task.counted);
        // What a CI test tab shows first: the first failed check and what it found.
        if let Some(c) = not_passed
            .iter()
            .flat_map(|t| t.checks.iter())
            .find(|c| !c.passed)
        {
            let _ = write!(message, "; {}", one_line(&c.name, MAX_DETAIL));
            if let Some(detail) = &c.detail {
                let _ = write!(message, ": found {}", one_line(detail, MAX_DETAIL));
            }
        }
        write_outcome(out, "failure", &message, &not_passed);
    } else if task.trials == 0 {
        out.push_str("      <skipped message=\"no trials run\"/>\n");
    } else if !not_passed.is_empty() {
        // Passed, but some trials said nothing about the model: worth a line in the log.
        out.push_str("      <system-out>");
        for t in &not_passed {
            out.push_str(&xml_text(&describe(t)));
        }
        out.push_str("</system-out>\n");
    }
    out.push_str("    </testcase>\n");
}

/// A `<failure>` or `<error>` with each trial that did not pass in its body.
fn write_outcome(out: &mut String, element: &str, message: &str, trials: &[&TrialResult]) {
    let _ = write!(
        out,
        "      <{element} message=\"{}\" type=\"{element}\">",
        xml(message)
    );
    for t in trials {
        out.push_str(&xml_text(&describe(t)));
    }
    let _ = writeln!(out, "</{element}>");
}

/// A trial that did not pass, in plain lines: its status, reason and failed checks.
fn describe(t: &TrialResult) -> String {
    let mut s = format!(
        "trial {} ({}, score {})",
        t.trial,
        status_name(t.status),
        num(t.score, 3)
    );
    if let Some(reason) = &t.reason {
        let _ = write!(s, ": {}", one_line(reason, MAX_DETAIL));
    }
    s.push('\n');
    for c in t.checks.iter().filter(|c| !c.passed) {
        let _ = write!(
            s,
            "  failed check {}: {}",
            c.kind,
            one_line(&c.name, MAX_DETAIL)
        );
        if let Some(detail) = &c.detail {
            let _ = write!(s, " (found {})", one_line(detail, MAX_DETAIL));
        }
        s.push('\n');
    }
    s
}
