//! The HTML report's chart: pass rate per task, one bar per model, as inline SVG (no script, no
//! library, no network), so it renders with JavaScript disabled and in a saved file forever.
//! Bars are horizontal: task names are long, and a row per task scales to any suite size.
//! Each bar carries its 95% Wilson interval as an error bar: three trials that all passed are
//! not the same evidence as thirty. With several trials the chart holds pass@k for a few k too,
//! each with its interval ([`pass_at_k_95`]), as groups shown one at a time: pass@1 without
//! JavaScript, the others by the radio buttons above the chart.

use std::fmt::Write as _;

use super::escape::{html, shorten_middle};
use super::format::{pass_at_1, pass_at_k_95, pct};
use crate::results::{EvalResults, TaskSummary};

/// Distinct colours for the first ten models (Tableau 10: tell-apart for most colour vision);
/// more models get hues spaced by the golden angle.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Fits the report's column (1200 px less padding); narrower windows scale it down.
const WIDTH: u64 = 1100;
const LABEL_W: u64 = 240;
const VALUE_W: u64 = 200;
const BAR_H: u64 = 16;
const BAR_GAP: u64 = 4;
const GROUP_GAP: u64 = 16;
const LEGEND_ROW_H: u64 = 22;
const AXIS_H: u64 = 22;
/// Task names longer than this are cut in the chart (the full name is in the group's tooltip).
const MAX_LABEL_CHARS: usize = 32;

/// The k the chart can show: those of [`STEPS`] under the most trials a task counted, and that
/// most itself (a few views, whatever the trial count).
pub(crate) fn chart_ks(results: &EvalResults) -> Vec<u32> {
    let most = results
        .tasks
        .iter()
        .map(|t| t.counted)
        .max()
        .unwrap_or(0)
        .max(1);
    let mut ks: Vec<u32> = STEPS.into_iter().take_while(|k| *k < most).collect();
    ks.push(most);
    ks
}

/// The k the chart steps through (a suite runs at most 1000 trials).
const STEPS: [u32; 11] = [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000];

/// The models in the order the report lists them: the results' models, then any that only the
/// task summaries name.
pub(crate) fn model_names(results: &EvalResults) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in results
        .models
        .iter()
        .map(|m| &m.model)
        .chain(results.tasks.iter().map(|t| &t.model))
    {
        if !names.contains(m) {
            names.push(m.clone());
        }
    }
    names
}

/// The colour of the model at `index` in [`model_names`].
pub(crate) fn color(index: usize) -> String {
    match PALETTE.get(index) {
        Some(c) => (*c).to_string(),
        None => {
            let hue = (index as f64 * 137.508) % 360.0;
            format!("hsl({hue:.0}, 55%, 48%)")
        }
    }
}

/// The chart as an `<svg id="chart">` element.
pub(crate) fn render(results: &EvalResults, many_suites: bool) -> String {
    let models = model_names(results);
    // Tasks in the order of the summaries, each once.
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for t in &results.tasks {
        let key = (t.suite.as_str(), t.task.as_str());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }

    let legend_rows = legend_layout(&models);
    let legend_h = legend_rows.len() as u64 * LEGEND_ROW_H + 8;
    let group_h = models.len().max(1) as u64 * (BAR_H + BAR_GAP) - BAR_GAP;
    let top = legend_h + AXIS_H;
    let height = top + groups.len() as u64 * (group_h + GROUP_GAP) + 8;
    let plot_w = WIDTH - LABEL_W - VALUE_W;

    let ks = chart_ks(results);
    let mut out = String::new();
    if ks.len() > 1 {
        out.push_str(
            "<div class=\"controls\" hidden id=\"chart-k\"><span class=\"label\">show pass@k \
             with its 95% interval, k =</span>",
        );
        for k in &ks {
            let checked = if *k == 1 { " checked" } else { "" };
            let _ = write!(
                out,
                "<label><input type=\"radio\" name=\"chart-k\" value=\"{k}\"{checked}> {k}</label>"
            );
        }
        out.push_str("</div>\n");
    }
    let _ = writeln!(
        out,
        "<svg id=\"chart\" class=\"chart\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" \
         height=\"{height}\" role=\"img\" aria-labelledby=\"chart-title\">"
    );
    out.push_str(
        "<title id=\"chart-title\">Pass rate (pass@1) per task and model, with 95% Wilson \
         intervals</title>\n",
    );

    // Legend.
    out.push_str("<g class=\"legend\">\n");
    for (row, items) in legend_rows.iter().enumerate() {
        let y = 6 + row as u64 * LEGEND_ROW_H;
        for &(index, x) in items {
            let name = models.get(index).map(String::as_str).unwrap_or_default();
            let _ = writeln!(
                out,
                "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{}\"/>\
                 <text x=\"{}\" y=\"{}\">{}</text>",
                LABEL_W + x,
                y + 2,
                color(index),
                LABEL_W + x + 17,
                y + 12,
                html(name)
            );
        }
    }
    out.push_str("</g>\n");

    // Every other task on a faint band, so many bars still read as groups; under the grid.
    for g in (1..groups.len()).step_by(2) {
        let _ = writeln!(
            out,
            "<rect class=\"band\" x=\"0\" y=\"{}\" width=\"{WIDTH}\" height=\"{}\"/>",
            top + g as u64 * (group_h + GROUP_GAP) - GROUP_GAP / 2,
            group_h + GROUP_GAP
        );
    }

    // Axis: grid lines and percentages.
    out.push_str("<g class=\"axis\">\n");
    for step in 0..=4u64 {
        let x = LABEL_W + plot_w * step / 4;
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{x}\" y=\"{}\" \
             text-anchor=\"middle\">{}%</text>",
            top - 4,
            height - 8,
            top - 8,
            step * 25
        );
    }
    out.push_str("</g>\n");

    for (g, (suite, task)) in groups.iter().enumerate() {
        let y0 = top + g as u64 * (group_h + GROUP_GAP);
        let full = if many_suites {
            format!("{suite} / {task}")
        } else {
            (*task).to_string()
        };
        let mid = y0 + group_h / 2 + 4;
        let _ = write!(
            out,
            "<g class=\"task-group\"><title>{}</title><text class=\"task-label\" x=\"{}\" y=\"{}\" \
             text-anchor=\"end\">{}</text>",
            html(&full),
            LABEL_W - 10,
            if many_suites { mid - 7 } else { mid },
            html(&shorten_middle(task, MAX_LABEL_CHARS))
        );
        if many_suites {
            let _ = write!(
                out,
                "<text class=\"suite-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                LABEL_W - 10,
                mid + 7,
                html(&shorten_middle(suite, MAX_LABEL_CHARS))
            );
        }
        out.push('\n');
        for k in &ks {
            // pass@1 is drawn; the other k are there for the page's script to show.
            let hidden = if *k == 1 { "" } else { " display=\"none\"" };
            let _ = writeln!(out, "<g class=\"k-view\" data-k=\"{k}\"{hidden}>");
            for (m, model) in models.iter().enumerate() {
                let y = y0 + m as u64 * (BAR_H + BAR_GAP);
                let summary = results
                    .tasks
                    .iter()
                    .find(|t| t.suite == *suite && t.task == *task && &t.model == model);
                bar(&mut out, summary, model, m, *k, y, plot_w);
            }
            out.push_str("</g>\n");
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// One model's bar for one task at pass@`k`, with its value after it.
fn bar(
    out: &mut String,
    summary: Option<&TaskSummary>,
    model: &str,
    m: usize,
    k: u32,
    y: u64,
    plot_w: u64,
) {
    let text_y = y + BAR_H - 4;
    // What the value says the bar is: at k = 1 nothing more, the pass rate.
    let (of_k, title_k) = match k {
        1 => (String::new(), String::new()),
        k => (format!("pass@{k} · "), format!("pass@{k} ")),
    };
    match summary {
        Some(t) if t.counted >= k => {
            let rate = match k {
                1 => pass_at_1(t),
                k => crate::score::pass_at_k(t.counted, t.passed, k),
            }
            .clamp(0.0, 1.0);
            let w = (rate * plot_w as f64).round() as u64;
            let (low, high) = pass_at_k_95(t.passed, t.counted, k).unwrap_or((rate, rate));
            let (x_low, x_high) = (
                LABEL_W + (low * plot_w as f64).round() as u64,
                LABEL_W + (high * plot_w as f64).round() as u64,
            );
            let (y_mid, y_top, y_bottom) = (y + BAR_H / 2, y + 3, y + BAR_H - 3);
            let _ = writeln!(
                out,
                "<rect class=\"bar\" x=\"{LABEL_W}\" y=\"{y}\" width=\"{}\" height=\"{BAR_H}\" \
                 rx=\"2\" fill=\"{}\"><title>{}: {title_k}{} ({}/{} passed; 95% interval {}–{})</title></rect>\
                 <g class=\"ci\"><line x1=\"{x_low}\" y1=\"{y_mid}\" x2=\"{x_high}\" y2=\"{y_mid}\"/>\
                 <line x1=\"{x_low}\" y1=\"{y_top}\" x2=\"{x_low}\" y2=\"{y_bottom}\"/>\
                 <line x1=\"{x_high}\" y1=\"{y_top}\" x2=\"{x_high}\" y2=\"{y_bottom}\"/></g>\
                 <text class=\"value\" x=\"{}\" y=\"{text_y}\">{} <tspan class=\"count\">{of_k}{}/{} · {}–{}</tspan></text>",
                w.max(1),
                color(m),
                html(model),
                pct(rate),
                t.passed,
                t.counted,
                pct(low),
                pct(high),
                x_high.max(LABEL_W + w) + 6,
                pct(rate),
                t.passed,
                t.counted,
                pct(low),
                pct(high)
            );
        }
        Some(t) if t.counted > 0 => {
            let _ = writeln!(
                out,
                "<text class=\"value none\" x=\"{}\" y=\"{text_y}\">{}: pass@{k} needs {k} counted trials ({} counted)</text>",
                LABEL_W + 6,
                html(model),
                t.counted
            );
        }
        Some(t) => {
            let _ = writeln!(
                out,
                "<text class=\"value none\" x=\"{}\" y=\"{text_y}\">{}: no verdict ({} errored, {} diverged)</text>",
                LABEL_W + 6,
                html(model),
                t.errors,
                t.diverged
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<text class=\"value none\" x=\"{}\" y=\"{text_y}\">{}: not run</text>",
                LABEL_W + 6,
                html(model)
            );
        }
    }
}

/// Legend items placed left to right in rows that fit the plot: `(model index, x offset)`.
fn legend_layout(models: &[String]) -> Vec<Vec<(usize, u64)>> {
    let avail = WIDTH - LABEL_W;
    let mut rows: Vec<Vec<(usize, u64)>> = vec![Vec::new()];
    let mut x = 0u64;
    for (i, name) in models.iter().enumerate() {
        // About 7 px per character at the legend's font size, plus the swatch and a gap.
        let w = 17 + 7 * name.chars().count().min(60) as u64 + 20;
        if x > 0 && x + w > avail {
            rows.push(Vec::new());
            x = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w;
    }
    rows
}
