//! `pi eval compare A B --html FILE`: two runs side by side in one self-contained HTML file.
//! Per model, the paired test's numbers; per task and model, both runs' pass rates, the delta
//! and the verdict of the comparison; and per task, the trials of A and of B next to each
//! other (status, checks with what they found, final text), so a regression can be read, not
//! only counted. Same rules as the run report: inline CSS and script, no network, every
//! string from a results file escaped, readable with JavaScript off.
//!
//! Stable hooks: `id="compare-models"`, `id="compare-tasks"` (tables), `class="pair"` on each
//! task's side-by-side `<details>`, `class="side side-a"` / `side-b`; each task row and pair
//! carries `data-verdict`, `data-suite`, `data-task` and `data-model`, which the filters
//! (`id="verdict-filter"`, `id="task-search"`) read.

use std::fmt::Write as _;

use super::escape::html;
use super::format::{num, pct, ratio, status_name, wilson_95};
use super::html::checks_list;
use super::style::{CSS, SCRIPT};
use super::transcript;
use crate::compare::{Comparison, Difference, ModelComparison, RowComparison, Side};
use crate::results::{EvalResults, TrialResult};

/// Extra rules for the two columns.
const COMPARE_CSS: &str = r##"
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; padding: 8px 12px 12px; }
.side { min-width: 0; }
.side h4 { margin-top: 4px; }
.side-trial { border: 1px solid var(--border); border-radius: 6px; padding: 6px 10px; margin: 6px 0; }
.side-trial .trial-title { margin-left: 6px; }
details.pair { border: 1px solid var(--border); border-radius: 8px; margin: 6px 0; }
details.pair > summary { cursor: pointer; padding: 8px 12px; display: flex; flex-wrap: wrap; gap: 10px; align-items: center; }
.verdict-regressed { color: var(--fail); background: var(--fail-bg); }
.verdict-improved { color: var(--pass); background: var(--pass-bg); }
.verdict-changed { color: var(--warn); background: var(--warn-bg); }
.verdict-same { color: var(--muted); background: var(--bg-soft); }
.verdict-only_in_a, .verdict-only_in_b, .verdict-not_comparable { color: var(--err); background: var(--err-bg); }
.warnings li { color: var(--warn); }
"##;

/// Longest final text shown per trial, in characters (the run's own report has the rest).
const MAX_FINAL_TEXT: usize = 2_000;

/// The comparison of run `b` (the candidate) with run `a` (the baseline) as one HTML
/// document. `comparison` is `compare(a, b, ..)`. Deterministic.
pub fn render(a: &EvalResults, b: &EvalResults, comparison: &Comparison) -> String {
    let mut out = String::new();
    super::html::page_head(
        "Eval comparison: A against B",
        &format!("{CSS}{COMPARE_CSS}"),
        &mut out,
    );
    out.push_str("<section id=\"summary\">\n<h1>Eval comparison</h1>\n<div class=\"meta\">");
    for (name, run) in [("A (baseline)", a), ("B (candidate)", b)] {
        let passed = run.trials.iter().filter(|t| t.status.is_pass()).count();
        let _ = write!(
            out,
            "<span>{name} <b>{} · {} · {passed}/{} passed · harness {}</b></span>",
            html(&run.mode),
            html(&run.isolation),
            run.trials.len(),
            html(&run.harness)
        );
    }
    let _ = writeln!(
        out,
        "<span>significance <b>{}</b></span></div>",
        num(comparison.alpha, 4)
    );
    if !comparison.warnings.is_empty() {
        out.push_str("<ul class=\"warnings\">\n");
        for w in &comparison.warnings {
            let _ = writeln!(out, "<li>{}</li>", html(&w.to_string()));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    models(&comparison.models, &mut out);
    tasks(&comparison.rows, &mut out);
    pairs(a, b, &comparison.rows, &mut out);
    out.push_str("<footer>pi-evals comparison</footer>\n</main>\n");
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    out
}

/// A verdict as the results' JSON names it (`regressed`, `only_in_a`, ...).
fn verdict_name(verdict: Difference) -> String {
    serde_json::to_value(verdict)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn verdict_badge(verdict: Difference) -> String {
    let name = verdict_name(verdict);
    format!(
        "<span class=\"badge verdict-{0}\">{1}</span>",
        html(&name),
        html(&name.replace('_', " "))
    )
}

/// The model's verdict's own p-value, Holm-adjusted across the models as the verdict was.
fn model_p(m: &ModelComparison) -> f64 {
    match m.verdict {
        Difference::Regressed => m.p_worse_adjusted,
        Difference::Improved => m.p_better_adjusted,
        _ => m.p_worse_adjusted.min(m.p_better_adjusted),
    }
}

fn models(models: &[ModelComparison], out: &mut String) {
    out.push_str("<section id=\"models\">\n<h2>Models</h2>\n");
    if models.is_empty() {
        out.push_str("<p class=\"empty\">No models.</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"table-box\"><table id=\"compare-models\" class=\"sortable\">\n<thead><tr>\
         <th>Model</th><th class=\"num\">Paired tasks</th><th class=\"num\">pass@1 A</th>\
         <th class=\"num\">pass@1 B</th><th class=\"num\">Score A</th><th class=\"num\">Score B</th>\
         <th class=\"num\">Mean delta</th><th class=\"num\">Rises / drops</th>\
         <th class=\"num\">p (Holm)</th><th>Verdict</th></tr></thead>\n<tbody>\n",
    );
    for m in models {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\" data-sort=\"{}\">{}</td>\
             <td class=\"num\" data-sort=\"{}\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\" data-sort=\"{}\">{} <span class=\"pm\">± {}</span></td>\
             <td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            html(&m.model),
            m.tasks,
            num(m.pass_at_1_a, 6),
            pct(m.pass_at_1_a),
            num(m.pass_at_1_b, 6),
            pct(m.pass_at_1_b),
            num(m.score_a, 3),
            num(m.score_b, 3),
            num(m.mean_delta, 6),
            signed(m.mean_delta, 3),
            num(m.stderr, 3),
            m.rises,
            m.drops,
            num(model_p(m), 4),
            verdict_badge(m.verdict)
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}

/// `+0.25`, `-0.5`, `0`.
fn signed(x: f64, places: usize) -> String {
    let n = num(x, places);
    if x > 0.0 && n != "0" {
        format!("+{n}")
    } else {
        n
    }
}

/// A side's pass rate with its 95% Wilson interval, or what stands in for it.
fn side_cell(side: Option<Side>) -> String {
    match side {
        None => "<td class=\"num\" data-sort=\"-1\">not run</td>".to_owned(),
        Some(s) if s.counted == 0 => format!(
            "<td class=\"num\" data-sort=\"-1\">no verdict ({} trials)</td>",
            s.trials
        ),
        Some(s) => {
            let rate = ratio(s.passed, s.counted);
            let interval = wilson_95(s.passed, s.counted)
                .map(|(l, h)| format!(" <span class=\"pm ci-text\">{}–{}</span>", pct(l), pct(h)))
                .unwrap_or_default();
            format!(
                "<td class=\"num\" data-sort=\"{}\">{}/{} · {}{interval}</td>",
                num(rate, 6),
                s.passed,
                s.counted,
                pct(rate)
            )
        }
    }
}

/// B's pass rate less A's, when both counted trials.
fn delta(row: &RowComparison) -> Option<f64> {
    match (row.a, row.b) {
        (Some(a), Some(b)) if a.counted > 0 && b.counted > 0 => {
            Some(ratio(b.passed, b.counted) - ratio(a.passed, a.counted))
        }
        _ => None,
    }
}

fn tasks(rows: &[RowComparison], out: &mut String) {
    out.push_str("<section id=\"tasks\">\n<h2>Tasks</h2>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"empty\">No tasks.</p>\n</section>\n");
        return;
    }
    out.push_str(
        "<div class=\"controls\" hidden><input type=\"search\" id=\"task-search\" \
         placeholder=\"Filter tasks, models and verdicts\" aria-label=\"Filter tasks, models and verdicts\">\
         <span class=\"label\">click a column to sort</span></div>\n",
    );
    verdict_filter(rows, out);
    out.push_str(
        "<div class=\"table-box\"><table id=\"task-table\" class=\"sortable compare-tasks\">\n\
         <thead><tr><th>Task</th><th>Model</th><th class=\"num\">A passed</th>\
         <th class=\"num\">B passed</th><th class=\"num\">Delta</th><th class=\"num\">p (Holm)</th>\
         <th>Verdict</th></tr></thead>\n<tbody>\n",
    );
    for (i, row) in rows.iter().enumerate() {
        let (delta_sort, delta_text) = match delta(row) {
            Some(d) => (num(d, 6), format!("{} pp", signed(d * 100.0, 1))),
            None => ("-2".to_owned(), "–".to_owned()),
        };
        // The verdict's own p-value, Holm-adjusted across the rows as the verdict was.
        let p = match row.verdict {
            Difference::Regressed => row.p_worse_adjusted,
            Difference::Improved => row.p_better_adjusted,
            _ => match (row.p_worse_adjusted, row.p_better_adjusted) {
                (Some(w), Some(b)) => Some(w.min(b)),
                (w, b) => w.or(b),
            },
        };
        let _ = writeln!(
            out,
            "<tr {}><td class=\"task-name\"><a href=\"#pair-{i}\">{} / {}</a></td><td>{}</td>\
             {}{}<td class=\"num\" data-sort=\"{delta_sort}\">{delta_text}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>",
            filter_attributes(row),
            html(&row.suite),
            html(&row.task),
            html(&row.model),
            side_cell(row.a),
            side_cell(row.b),
            p.map_or_else(|| "–".to_owned(), |p| num(p, 4)),
            verdict_badge(row.verdict)
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}

/// The `data-*` attributes the page's filters read, for a task row and its pair.
fn filter_attributes(row: &RowComparison) -> String {
    format!(
        "data-verdict=\"{}\" data-suite=\"{}\" data-task=\"{}\" data-model=\"{}\"",
        html(&verdict_name(row.verdict)),
        html(&row.suite),
        html(&row.task),
        html(&row.model)
    )
}

/// Every verdict, in the order the filter offers them.
const VERDICTS: [Difference; 7] = [
    Difference::Regressed,
    Difference::Improved,
    Difference::Changed,
    Difference::Same,
    Difference::OnlyInA,
    Difference::OnlyInB,
    Difference::NotComparable,
];

/// A box per verdict the rows have, with how many: unticked, the rows and pairs of that
/// verdict are hidden. Hidden itself until the script shows it, since without the script it
/// could not act.
fn verdict_filter(rows: &[RowComparison], out: &mut String) {
    out.push_str(
        "<div class=\"controls\" hidden id=\"verdict-filter\"><span class=\"label\">show</span>",
    );
    for verdict in VERDICTS {
        let n = rows.iter().filter(|r| r.verdict == verdict).count();
        if n > 0 {
            let _ = write!(
                out,
                "<label><input type=\"checkbox\" value=\"{}\" checked> {} {n}</label>",
                html(&verdict_name(verdict)),
                verdict_badge(verdict)
            );
        }
    }
    out.push_str("</div>\n");
}

fn pairs(a: &EvalResults, b: &EvalResults, rows: &[RowComparison], out: &mut String) {
    out.push_str("<section id=\"pairs\">\n<h2>Trials side by side</h2>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"empty\">No tasks.</p>\n");
    }
    for (i, row) in rows.iter().enumerate() {
        // Changes are opened, the same results closed: what changed is what a reader wants.
        let open = if matches!(row.verdict, Difference::Same) {
            ""
        } else {
            " open"
        };
        let _ = writeln!(
            out,
            "<details class=\"pair\" id=\"pair-{i}\" {}{open}>\n<summary>{} \
             <b>{} / {}</b> <span class=\"model\">{}</span></summary>\n<div class=\"sides\">",
            filter_attributes(row),
            verdict_badge(row.verdict),
            html(&row.suite),
            html(&row.task),
            html(&row.model)
        );
        for (class, name, run) in [("side-a", "A", a), ("side-b", "B", b)] {
            let _ = write!(out, "<div class=\"side {class}\"><h4>{name}</h4>");
            let trials: Vec<&TrialResult> = run
                .trials
                .iter()
                .filter(|t| t.suite == row.suite && t.task == row.task && t.model == row.model)
                .collect();
            if trials.is_empty() {
                out.push_str("<p class=\"empty\">Not run.</p>");
            }
            for t in trials {
                side_trial(t, out);
            }
            out.push_str("</div>\n");
        }
        out.push_str("</div>\n</details>\n");
    }
    out.push_str("</section>\n");
}

fn side_trial(t: &TrialResult, out: &mut String) {
    let status = status_name(t.status);
    let _ = write!(
        out,
        "<div class=\"side-trial\" data-status=\"{status}\"><span class=\"badge status-{status}\">\
         {status}</span><span class=\"trial-title\">trial {}</span> <span class=\"pm\">score {}</span>",
        t.trial,
        num(t.score, 3)
    );
    if let Some(reason) = &t.reason {
        out.push_str("<div class=\"reason\">");
        transcript::text(reason, "text", out);
        out.push_str("</div>");
    }
    checks_list(&t.checks, out);
    if !t.final_text.is_empty() {
        out.push_str("<div class=\"label\">final text</div>");
        let (head, rest) = super::escape::truncate(&t.final_text, MAX_FINAL_TEXT);
        transcript::text(head, "text", out);
        if rest > 0 {
            let _ = write!(
                out,
                "<div class=\"truncated\">… {} more characters (see the run's report)</div>",
                super::format::count(rest as u64)
            );
        }
    }
    out.push_str("</div>\n");
}
