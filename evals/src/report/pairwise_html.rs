//! `pi eval pairwise A B --html FILE`: the judge's comparison of two runs as one
//! self-contained HTML file: the overall win rate and the position-bias line, a table of the
//! tasks, and each pair with both answers side by side, which one the judge was shown first,
//! what it said and why. Same rules as the run report: inline CSS, no network, every string
//! from a results file or the judge escaped.
//!
//! Stable hooks: `id="pairwise-tasks"` (table), `class="pair"` on each pair's `<details>`
//! (with `data-winner`: `a`, `b`, `tie` or `error`), `class="side side-a"` / `side-b`.

use std::fmt::Write as _;

use super::escape::html;
use super::style::{CSS, SCRIPT};
use crate::pairwise::{PairResult, PairwiseReport, Run, Winner};

const PAIRWISE_CSS: &str = r##"
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; padding: 8px 12px 12px; }
.side { min-width: 0; }
details.pair { border: 1px solid var(--border); border-radius: 8px; margin: 6px 0; }
details.pair > summary { cursor: pointer; padding: 8px 12px; }
.win-b { color: var(--pass); background: var(--pass-bg); }
.win-a { color: var(--fail); background: var(--fail-bg); }
.win-tie { color: var(--muted); background: var(--bg-soft); }
.win-error, .flagged { color: var(--err); background: var(--err-bg); }
"##;

/// Longest answer shown per side, in characters.
const MAX_ANSWER: usize = 4_000;

/// `report` as one HTML document. Deterministic.
pub fn render(report: &PairwiseReport) -> String {
    let mut out = String::new();
    super::html::page_head(
        "Pairwise comparison: B against A",
        &format!("{CSS}{PAIRWISE_CSS}"),
        &mut out,
    );
    let o = &report.overall;
    let rate = o.win_rate.map_or_else(|| "none decided".into(), percent);
    let _ = writeln!(
        out,
        "<section id=\"summary\">\n<h1>Pairwise comparison</h1>\n<div class=\"meta\">\
         <span>judge <b>{}</b></span><span>seed <b>{}</b></span></div>\n\
         <p>Rubric: {}</p>\n\
         <p id=\"overall\">B won <b>{}</b> and lost <b>{}</b> of {} decided pairs ({} ties, {} errors): \
         win rate <b>{rate}</b> (95% CI {} to {}), sign test p = {:.4}: <b>{}</b>.</p>",
        html(&report.judge),
        report.seed,
        html(&report.rubric),
        o.wins,
        o.losses,
        o.wins + o.losses,
        o.ties,
        o.errors,
        percent(o.low),
        percent(o.high),
        o.p_value,
        report.verdict.words()
    );
    let b = &report.position_bias;
    let _ = writeln!(
        out,
        "<p id=\"position-bias\"{}>Position bias: the judge picked the answer shown first in {} of {} decided pairs (95% CI {} to {}){}.</p>",
        if b.flagged { " class=\"flagged\"" } else { "" },
        b.picked_first,
        b.decided,
        percent(b.low),
        percent(b.high),
        if b.flagged {
            ": flagged, the judge favours a position"
        } else {
            ""
        }
    );
    if !report.unpaired.is_empty() {
        out.push_str("<ul class=\"warnings\">\n");
        for u in &report.unpaired {
            let trial = u.trial.map(|n| format!(" trial {n}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "<li>unpaired: {}/{}{trial}: {}</li>",
                html(&u.suite),
                html(&u.task),
                html(&u.why)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out.push_str(
        "<section id=\"tasks\">\n<h2>Tasks</h2>\n<div class=\"table-box\"><table id=\"pairwise-tasks\" class=\"sortable\">\n\
         <thead><tr><th>Task</th><th class=\"num\">B wins</th><th class=\"num\">B losses</th>\
         <th class=\"num\">Ties</th><th class=\"num\">Errors</th><th class=\"num\">p</th>\
         <th class=\"num\">p (Holm)</th><th>Verdict</th></tr></thead>\n<tbody>\n",
    );
    for t in &report.tasks {
        let _ = writeln!(
            out,
            "<tr><td>{}/{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.4}</td><td class=\"num\">{:.4}</td><td>{}</td></tr>",
            html(&t.suite),
            html(&t.task),
            t.tally.wins,
            t.tally.losses,
            t.tally.ties,
            t.tally.errors,
            t.tally.p_value,
            t.p_adjusted,
            t.verdict.words()
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n<section id=\"pairs\">\n<h2>Pairs</h2>\n");
    for pair in &report.pairs {
        pair_html(pair, &mut out);
    }
    out.push_str("</section>\n<footer>pi-evals pairwise comparison</footer>\n</main>\n");
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    out
}

fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn pair_html(pair: &PairResult, out: &mut String) {
    let (name, label) = match (pair.error, pair.winner) {
        (true, _) | (_, None) => ("error", "error"),
        (_, Some(Winner::A)) => ("a", "A better"),
        (_, Some(Winner::B)) => ("b", "B better"),
        (_, Some(Winner::Tie)) => ("tie", "tie"),
    };
    let first = match pair.shown_first {
        Run::A => "A",
        Run::B => "B",
    };
    let _ = writeln!(
        out,
        "<details class=\"pair\" data-winner=\"{name}\"><summary>{}/{} trial {} \
         <span class=\"badge win-{name}\">{label}</span> <span class=\"muted\">shown first: {first}</span></summary>\n\
         <p>{}{}</p>\n<div class=\"sides\">",
        html(&pair.suite),
        html(&pair.task),
        pair.trial,
        if pair.error { "Error: " } else { "The judge: " },
        html(&pair.reason)
    );
    for (class, title, model, answer) in [
        ("side-a", "A", &pair.model_a, &pair.answer_a),
        ("side-b", "B", &pair.model_b, &pair.answer_b),
    ] {
        let (shown, cut) = super::escape::truncate(answer, MAX_ANSWER);
        let more = if cut > 0 {
            format!("\n… {cut} more characters")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<div class=\"side {class}\"><h4>{title} · {}</h4><pre>{}{}</pre></div>",
            html(model),
            html(shown),
            html(&more)
        );
    }
    out.push_str("</div></details>\n");
}
