//! One self-contained HTML file for reading a run: the summary per model, a chart of pass rates,
//! a table per task and model, and every trial's checks and transcript in a collapsible
//! `<details>`. Inline CSS and SVG, no network at all, readable with JavaScript disabled (the
//! inline script only adds sorting, filtering and the chart's choice of k), so it can be archived as a CI artifact and
//! opened anywhere. Every user-provided string is HTML-escaped.
//!
//! Stable hooks for tools that check the page: `id="summary"`, `id="chart"` (the SVG, its bars
//! in a `g.k-view[data-k]` per k, switched by `id="chart-k"`),
//! `id="task-table"`, `id="trials"`, `id="filters"` (a `select[data-filter=NAME]` per
//! attribute), and `class="trial"` on each trial's `<details>`, which carries `data-status`,
//! `data-suite`, `data-task`, `data-model` and `data-tags` (the task's tags, space-separated:
//! a tag holds no space), as the task table's rows carry suite, task and model.

use std::fmt::Write as _;

use super::chart::{self, model_names};
use super::escape::{html, one_line};
use super::format::{
    at_largest_k, cost, count, num, pass_at_1, pct, seconds, status_name, suite_names, wilson_95,
};
use super::links::CassetteLinks;
use super::style::{CSS, SCRIPT};
use super::transcript;
use crate::results::{
    AtK, CheckResult, EvalResults, ModelSummary, TaskSummary, TrialResult, TrialStatus,
};

/// The statuses in the order the trial filter lists them.
const STATUSES: [TrialStatus; 5] = [
    TrialStatus::Passed,
    TrialStatus::Failed,
    TrialStatus::Limit,
    TrialStatus::Error,
    TrialStatus::Diverged,
];

/// The results as one HTML document, without cassette links. Deterministic: the same results
/// give the same bytes.
pub fn render(results: &EvalResults) -> String {
    render_linked(results, &CassetteLinks::default())
}

/// As [`render`], each trial's cassette linked where `links` has it.
pub fn render_linked(results: &EvalResults, links: &CassetteLinks) -> String {
    let suites = suite_names(results);
    let many_suites = suites.len() > 1;
    let title = if suites.is_empty() {
        "Eval report".to_string()
    } else {
        format!("Eval report: {}", suites.join(", "))
    };

    let mut out = String::new();
    page_head(&title, CSS, &mut out);

    summary(results, &title, &mut out);
    out.push_str("<section id=\"chart-section\">\n<h2>Pass rate by task</h2>\n");
    if results.tasks.is_empty() {
        out.push_str("<p class=\"empty\">No tasks.</p>\n");
    } else {
        out.push_str("<div class=\"chart-box\">\n");
        out.push_str(&chart::render(results, many_suites));
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
    let groups = trial_groups(results);
    filter_bar(results, many_suites, &mut out);
    task_table(results, &groups, many_suites, &mut out);
    trials(results, &groups, many_suites, links, &mut out);

    let _ = writeln!(
        out,
        "<footer>pi-evals report · results schema {} · harness {}</footer>\n</main>",
        results.schema_version,
        html(&results.harness)
    );
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    out
}

/// The start of a report page up to its `<main>`: one self-contained document, with a policy
/// that lets it reach no network whatever a transcript holds, on top of the escaping.
pub(super) fn page_head(title: &str, css: &str, out: &mut String) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    let _ = writeln!(out, "<title>{}</title>", html(title));
    let _ = writeln!(out, "<style>{css}</style>\n</head>\n<body>\n<main>");
}

fn summary(results: &EvalResults, title: &str, out: &mut String) {
    let _ = writeln!(
        out,
        "<section id=\"summary\">\n<h1>{}</h1>\n<div class=\"meta\">",
        html(title)
    );
    let passed = results.trials.iter().filter(|t| t.status.is_pass()).count();
    let mut meta = vec![
        ("mode", html(&results.mode)),
        ("isolation", html(&results.isolation)),
        ("harness", html(&results.harness)),
        (
            "trials",
            format!("{passed}/{} passed", results.trials.len()),
        ),
    ];
    if let Some(shards) = &results.shards {
        let held: Vec<String> = shards.held.iter().map(u32::to_string).collect();
        meta.push(("shards", format!("{} of {}", held.join(", "), shards.count)));
    }
    for (name, value) in meta {
        let _ = writeln!(out, "<span>{name} <b>{value}</b></span>");
    }
    out.push_str("</div>\n<div class=\"cards\">\n");
    let names = model_names(results);
    for m in &results.models {
        let index = names.iter().position(|n| n == &m.model).unwrap_or(0);
        model_card(m, index, out);
    }
    out.push_str("</div>\n</section>\n");
}

/// What trials and task rows can be filtered by: `(attribute, label)`.
const FILTERS: [(&str, &str); 4] = [
    ("suite", "suite"),
    ("task", "task"),
    ("model", "model"),
    ("tags", "tag"),
];

/// A trial's values of the [`FILTERS`] attributes, in their order.
fn filter_values(t: &TrialResult) -> [Vec<String>; 4] {
    [
        vec![t.suite.clone()],
        vec![t.task.clone()],
        vec![t.model.clone()],
        t.tags.clone(),
    ]
}

/// One `select` per attribute that tells trials apart (two values or more; a tag from one),
/// shown by the script: with JavaScript off, everything is shown.
fn filter_bar(results: &EvalResults, many_suites: bool, out: &mut String) {
    let mut values: [Vec<String>; 4] = Default::default();
    for t in &results.trials {
        for (all, these) in values.iter_mut().zip(filter_values(t)) {
            for v in these {
                if !all.contains(&v) {
                    all.push(v);
                }
            }
        }
    }
    let mut selects = String::new();
    for ((attribute, label), mut options) in FILTERS.into_iter().zip(values) {
        let needed = match attribute {
            "tags" => 1,
            "suite" if !many_suites => usize::MAX,
            _ => 2,
        };
        if options.len() < needed {
            continue;
        }
        options.sort();
        let _ = write!(
            selects,
            "<label>{label} <select data-filter=\"{attribute}\"><option value=\"\">all</option>"
        );
        for v in &options {
            let _ = write!(selects, "<option value=\"{0}\">{0}</option>", html(v));
        }
        selects.push_str("</select></label>");
    }
    if !selects.is_empty() {
        let _ = writeln!(
            out,
            "<div class=\"controls filters\" hidden id=\"filters\"><span class=\"label\">filter \
             tasks and trials</span>{selects}</div>"
        );
    }
}

/// The `data-*` attributes [`FILTERS`] reads, for a trial or a task row.
fn filter_attributes(suite: &str, task: &str, model: &str, tags: &[String]) -> String {
    format!(
        " data-suite=\"{}\" data-task=\"{}\" data-model=\"{}\" data-tags=\"{}\"",
        html(suite),
        html(task),
        html(model),
        html(&tags.join(" "))
    )
}

fn model_card(m: &ModelSummary, index: usize, out: &mut String) {
    let counted = m.trials.saturating_sub(m.errors).saturating_sub(m.diverged);
    let _ = writeln!(
        out,
        "<div class=\"card model-card\">\n<div class=\"card-model\"><span class=\"swatch\" \
         style=\"background:{}\"></span>{}</div>\n\
         <div class=\"card-rate\">{}<small>pass@1</small></div>\n<dl>\n\
         <dt>score</dt><dd>{} <span class=\"pm\">± {}</span></dd>\n\
         <dt>trials passed</dt><dd>{}/{} counted</dd>\n\
         <dt>errors · diverged</dt><dd>{} · {}</dd>\n\
         <dt>tokens</dt><dd>{}</dd>\n\
         <dt>cost live / replayed</dt><dd>{} / {}</dd>\n{}</dl>\n</div>",
        chart::color(index),
        html(&m.model),
        pct(m.pass_at_1),
        num(m.score, 3),
        num(m.stderr, 3),
        m.passed,
        counted,
        m.errors,
        m.diverged,
        count(m.usage.total_tokens),
        cost(m.cost),
        cost(m.replayed_cost),
        judge_share(m)
    );
}

/// What the judge took of a model's spending, when a judge ran.
fn judge_share(m: &ModelSummary) -> String {
    if m.judge.is_empty() {
        return String::new();
    }
    format!(
        "<dt>of which the judge</dt><dd>{} / {}</dd>\n",
        cost(m.judge.cost),
        cost(m.judge.replayed_cost)
    )
}

/// The trials grouped by suite, task and model, in the results' order: `(key, trial indexes)`.
type Groups<'a> = Vec<((&'a str, &'a str, &'a str), Vec<usize>)>;

fn trial_groups(results: &EvalResults) -> Groups<'_> {
    let mut groups: Groups<'_> = Vec::new();
    for (i, t) in results.trials.iter().enumerate() {
        let key = (t.suite.as_str(), t.task.as_str(), t.model.as_str());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
}

fn task_name(suite: &str, task: &str, many_suites: bool) -> String {
    if many_suites {
        format!("{} / {}", html(suite), html(task))
    } else {
        html(task)
    }
}

fn task_table(results: &EvalResults, groups: &Groups<'_>, many_suites: bool, out: &mut String) {
    out.push_str("<section id=\"tasks\">\n<h2>Tasks</h2>\n");
    if results.tasks.is_empty() {
        out.push_str("<p class=\"empty\">No tasks.</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"controls\" hidden><input type=\"search\" id=\"task-search\" \
         placeholder=\"Filter tasks and models\" aria-label=\"Filter tasks and models\">\
         <span class=\"label\">click a column to sort</span></div>\n",
    );
    out.push_str(
        "<div class=\"table-box\"><table id=\"task-table\" class=\"sortable\">\n<thead><tr>\
         <th>Task</th><th>Model</th><th class=\"num\">Passed / trials</th>\
         <th class=\"num\">pass@k</th><th class=\"num\">pass^k</th>\
         <th class=\"num\">Mean score</th><th class=\"num\">Mean turns</th>\
         <th class=\"num\">Tokens</th><th class=\"num\">Cost</th></tr></thead>\n<tbody>\n",
    );
    let names = model_names(results);
    for t in &results.tasks {
        task_row(t, groups, &names, many_suites, out);
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}

fn task_row(
    t: &TaskSummary,
    groups: &Groups<'_>,
    names: &[String],
    many_suites: bool,
    out: &mut String,
) {
    let name = task_name(&t.suite, &t.task, many_suites);
    let key = (t.suite.as_str(), t.task.as_str(), t.model.as_str());
    let cell = match groups.iter().position(|(k, _)| *k == key) {
        Some(g) => format!("<a href=\"#group-{g}\">{name}</a>"),
        None => name,
    };
    let index = names.iter().position(|n| n == &t.model).unwrap_or(0);
    let rate_class = if t.counted == 0 {
        "rate-na"
    } else if t.passed == t.counted {
        "rate-all"
    } else if t.passed > 0 {
        "rate-some"
    } else {
        "rate-none"
    };
    let mut passed = format!("{}/{}", t.passed, t.trials);
    if t.errors + t.diverged > 0 {
        let _ = write!(passed, " · {} no verdict", t.errors + t.diverged);
    }
    let interval = wilson_95(t.passed, t.counted)
        .map(|(low, high)| {
            format!(
                " <span class=\"pm ci-text\" title=\"95% Wilson interval of the pass rate\">{}–{}</span>",
                pct(low),
                pct(high)
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<tr{}><td class=\"task-name\">{cell}</td>\
         <td><span class=\"swatch\" style=\"background:{}\"></span> {}</td>\
         <td class=\"num\" data-sort=\"{}\"><span class=\"badge {rate_class}\">{passed}</span>{interval}</td>\
         {}{}\
         {}{}\
         <td class=\"num\" data-sort=\"{}\">{}</td>\
         <td class=\"num\" data-sort=\"{}\">{}</td></tr>",
        filter_attributes(&t.suite, &t.task, &t.model, &[]),
        chart::color(index),
        html(&t.model),
        num(pass_at_1(t), 6),
        at_k_cell(&t.pass_at_k),
        at_k_cell(&t.pass_hat_k),
        score_cell(t),
        turns_cell(t),
        t.usage.total_tokens,
        count(t.usage.total_tokens),
        num(t.cost + t.replayed_cost, 6),
        cost_pair(t.cost, t.replayed_cost)
    );
}

/// Mean score ± standard error; a dash when no trial was a verdict (no score to average).
fn score_cell(t: &TaskSummary) -> String {
    if t.counted == 0 {
        return "<td class=\"num\" data-sort=\"-1\">–</td>".to_string();
    }
    format!(
        "<td class=\"num\" data-sort=\"{}\">{} <span class=\"pm\">± {}</span></td>",
        num(t.mean_score, 6),
        num(t.mean_score, 3),
        num(t.stderr, 3)
    )
}

/// Mean turns, a dash when no trial was a verdict.
fn turns_cell(t: &TaskSummary) -> String {
    if t.counted == 0 {
        return "<td class=\"num\" data-sort=\"-1\">–</td>".to_string();
    }
    format!(
        "<td class=\"num\" data-sort=\"{}\">{}</td>",
        num(t.mean_turns, 6),
        num(t.mean_turns, 1)
    )
}

/// A pass@k or pass^k cell at the largest k.
fn at_k_cell(values: &[AtK]) -> String {
    match at_largest_k(values) {
        Some(a) => format!(
            "<td class=\"num\" data-sort=\"{}\">{}<span class=\"k\">k={}</span></td>",
            num(a.value, 6),
            pct(a.value),
            a.k
        ),
        None => "<td class=\"num\" data-sort=\"-1\">–</td>".to_string(),
    }
}

/// Live cost, with the replayed (recorded, not spent) cost after it when there is one.
fn cost_pair(live: f64, replayed: f64) -> String {
    if replayed > 0.0 && live == 0.0 {
        format!(
            "<span title=\"recorded, not spent by this run\">{} replayed</span>",
            cost(replayed)
        )
    } else if replayed > 0.0 {
        format!(
            "{} <span class=\"pm\" title=\"replayed: recorded, not spent\">+ {} replayed</span>",
            cost(live),
            cost(replayed)
        )
    } else {
        cost(live)
    }
}

fn trials(
    results: &EvalResults,
    groups: &Groups<'_>,
    many_suites: bool,
    links: &CassetteLinks,
    out: &mut String,
) {
    out.push_str("<section id=\"trials\">\n<h2>Trials</h2>\n");
    if results.trials.is_empty() {
        out.push_str("<p class=\"empty\">No trials.</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"controls\" hidden id=\"trial-filter\"><span class=\"label\">show</span>",
    );
    for status in STATUSES {
        let n = results.trials.iter().filter(|t| t.status == status).count();
        if n > 0 {
            let name = status_name(status);
            let _ = write!(
                out,
                "<label><input type=\"checkbox\" value=\"{name}\" checked> \
                 <span class=\"badge status-{name}\">{name}</span> {n}</label>"
            );
        }
    }
    out.push_str(
        "<button type=\"button\" id=\"expand-all\">Expand all</button>\
         <button type=\"button\" id=\"collapse-all\">Collapse all</button></div>\n",
    );
    let names = model_names(results);
    for (g, ((suite, task, model), members)) in groups.iter().enumerate() {
        let index = names.iter().position(|n| n == model).unwrap_or(0);
        let _ = writeln!(
            out,
            "<div class=\"trial-group\" id=\"group-{g}\">\n<h3 class=\"group-head\">\
             <span class=\"swatch\" style=\"background:{}\"></span>{} \
             <span class=\"model\">{}</span></h3>",
            chart::color(index),
            task_name(suite, task, many_suites),
            html(model)
        );
        for &i in members {
            if let Some(t) = results.trials.get(i) {
                trial(t, i, links.get(i), out);
            }
        }
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

fn trial(t: &TrialResult, i: usize, cassette_href: Option<&str>, out: &mut String) {
    let status = status_name(t.status);
    let checks_passed = t.checks.iter().filter(|c| c.passed).count();
    let verdict = if t.status.is_verdict() {
        format!(
            "score {} · checks {checks_passed}/{}",
            num(t.score, 3),
            t.checks.len()
        )
    } else {
        "no verdict".to_string()
    };
    // Why it did not pass, at a glance: the reason, else the first failed check and what it
    // found.
    let why = if t.status.is_pass() {
        None
    } else {
        t.reason.clone().or_else(|| {
            t.checks
                .iter()
                .find(|c| !c.passed)
                .map(|c| match &c.detail {
                    Some(found) => format!("{}: {found}", c.name),
                    None => c.name.clone(),
                })
        })
    };
    let why = why
        .map(|w| {
            format!(
                "<span class=\"trial-why\">{}</span>",
                html(&one_line(&w, 120))
            )
        })
        .unwrap_or_default();
    let [_, _, _, tags] = filter_values(t);
    let _ = writeln!(
        out,
        "<details class=\"trial\" id=\"trial-{i}\" data-status=\"{status}\"{}>\n<summary>\
         <span class=\"badge status-{status}\">{status}</span>\
         <span class=\"trial-title\">trial {}</span>{why}\
         <span class=\"trial-stats\">{verdict} · {} turns · {} tokens · {} s</span>\
         </summary>\n<div class=\"trial-body\">",
        filter_attributes(&t.suite, &t.task, &t.model, &tags),
        t.trial,
        t.turns,
        count(t.usage.total_tokens),
        seconds(t.wall_ms)
    );

    out.push_str("<dl class=\"trial-meta\">");
    if let Some(reason) = &t.reason {
        let _ = write!(
            out,
            "<dt>reason</dt><dd class=\"reason\">{}</dd>",
            html(reason)
        );
    }
    let _ = write!(
        out,
        "<dt>seed</dt><dd><code>{}</code></dd><dt>calls</dt><dd>{} live · {} replayed</dd>\
         <dt>cost</dt><dd>{} live · {} replayed</dd>\
         <dt>tokens</dt><dd>{} in · {} out · {} cache read · {} cache write</dd>",
        t.seed,
        t.calls.live,
        t.calls.replayed,
        cost(t.cost),
        cost(t.replayed_cost),
        count(t.usage.input),
        count(t.usage.output),
        count(t.usage.cache_read),
        count(t.usage.cache_write)
    );
    if !t.judge.is_empty() {
        let _ = write!(
            out,
            "<dt>judge</dt><dd>{} live · {} replayed calls · {} live · {} replayed · {} tokens \
             (counted above)</dd>",
            t.judge.calls.live,
            t.judge.calls.replayed,
            cost(t.judge.cost),
            cost(t.judge.replayed_cost),
            count(t.judge.usage.total_tokens)
        );
    }
    match (&t.cassette, cassette_href) {
        (Some(cassette), Some(href)) => {
            let _ = write!(
                out,
                "<dt>cassette</dt><dd><a class=\"cassette\" href=\"{}\"><code>{}</code></a></dd>",
                html(href),
                html(cassette)
            );
        }
        (Some(cassette), None) => {
            let _ = write!(
                out,
                "<dt>cassette</dt><dd><code>{}</code></dd>",
                html(cassette)
            );
        }
        (None, _) => {}
    }
    out.push_str("</dl>\n");

    let _ = writeln!(
        out,
        "<h4>Checks ({checks_passed}/{} passed, score {})</h4>",
        t.checks.len(),
        num(t.score, 3)
    );
    checks_list(&t.checks, out);

    let _ = writeln!(
        out,
        "<h4>Transcript ({} message{})</h4>\n<div class=\"transcript\">",
        t.transcript.len(),
        if t.transcript.len() == 1 { "" } else { "s" }
    );
    if t.transcript.is_empty() {
        out.push_str("<p class=\"empty\">No messages.</p>");
        if !t.final_text.is_empty() {
            out.push_str(
                "<div class=\"msg msg-assistant\"><div class=\"msg-role\">Final text</div>",
            );
            transcript::text(&t.final_text, "text", out);
            out.push_str("</div>");
        }
    } else {
        transcript::render(&t.transcript, out);
    }
    out.push_str("</div>\n</div>\n</details>\n");
}

/// A trial's checks, each with its kind, weight and, when it failed, what it found.
pub(crate) fn checks_list(checks: &[CheckResult], out: &mut String) {
    if checks.is_empty() {
        out.push_str("<p class=\"empty\">No checks ran.</p>\n");
    } else {
        out.push_str("<ul class=\"checks\">\n");
        for c in checks {
            let (class, mark) = if c.passed {
                ("pass", "✓")
            } else {
                ("fail", "✗")
            };
            let _ = write!(
                out,
                "<li class=\"check {class}\"><span class=\"mark\">{mark}</span>\
                 <span class=\"check-name\">{}</span>\
                 <span class=\"check-kind\">{} · weight {}</span>",
                html(&c.name),
                html(&c.kind),
                num(c.weight, 3)
            );
            if let Some(detail) = &c.detail {
                out.push_str("<div class=\"check-found\"><span class=\"label\">found</span>");
                transcript::text(detail, "check-detail", out);
                out.push_str("</div>");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ul>\n");
    }
}
