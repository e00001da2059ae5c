//! Numbers and lookups the three report writers share, so a pass rate or a cost reads the same
//! in JUnit, Markdown and HTML. All formatting is fixed-precision (no locale, no clock), which
//! keeps reports byte-for-byte deterministic.

use crate::results::{AtK, EvalResults, TaskSummary, TrialResult, TrialStatus};

/// The estimate at the largest k computed (the strongest statement the trials support).
pub(crate) fn at_largest_k(values: &[AtK]) -> Option<AtK> {
    values.iter().copied().max_by_key(|a| a.k)
}

/// A task's pass@1: the share of counted trials that passed (0 when none counted).
pub(crate) fn pass_at_1(task: &TaskSummary) -> f64 {
    ratio(task.passed, task.counted)
}

/// The 95% Wilson score interval of a pass rate of `passed` out of `n` trials: `(low, high)`,
/// `None` when no trial counted. Wilson rather than the normal approximation because eval
/// pass rates sit at 0 and 1 often and trial counts are small, where the normal interval
/// collapses to a point (5/5 passed is not certainty).
pub(crate) fn wilson_95(passed: u32, n: u32) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let n = f64::from(n);
    let p = (f64::from(passed) / n).clamp(0.0, 1.0);
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// The 95% interval of a task's pass@k, `passed` of `n` trials passed: the Wilson interval
/// `(l, u)` of its pass rate `p` carried through `pass@k = 1 - (1 - p)^k`, which rises with `p`,
/// so `(1 - (1 - l)^k, 1 - (1 - u)^k)` holds the true pass@k whenever `(l, u)` holds `p`. It is
/// widened to hold the unbiased estimate ([`crate::score::pass_at_k`]), which lies above
/// `1 - (1 - c/n)^k` and can pass the upper end when fewer than k trials failed (it is then 1).
/// `None` when no trial counted, or `k` is 0 or more than `n` (no estimate).
pub(crate) fn pass_at_k_95(passed: u32, n: u32, k: u32) -> Option<(f64, f64)> {
    if k == 0 || k > n {
        return None;
    }
    let (low, high) = wilson_95(passed, n)?;
    // At k = 1 Wilson's own, not its numbers rounded again through 1 - (1 - p).
    let through = |p: f64| match k {
        1 => p,
        _ => 1.0 - (1.0 - p).powi(i32::try_from(k).unwrap_or(i32::MAX)),
    };
    let estimate = crate::score::pass_at_k(n, passed, k);
    Some((through(low).min(estimate), through(high).max(estimate)))
}

/// `num / den`, 0 when `den` is 0.
pub(crate) fn ratio(num: u32, den: u32) -> f64 {
    if den == 0 {
        0.0
    } else {
        f64::from(num) / f64::from(den)
    }
}

/// Whether any counted trial of the task failed (pass@1 < 1).
pub(crate) fn is_failure(task: &TaskSummary) -> bool {
    task.counted > 0 && task.passed < task.counted
}

/// Whether the task ran trials and none of them was a verdict (all errored or diverged).
pub(crate) fn is_error(task: &TaskSummary) -> bool {
    task.trials > 0 && task.counted == 0
}

/// The trials of one task summary, in the results' order.
pub(crate) fn trials_of<'a>(
    results: &'a EvalResults,
    task: &'a TaskSummary,
) -> impl Iterator<Item = &'a TrialResult> + 'a {
    results
        .trials
        .iter()
        .filter(move |t| t.suite == task.suite && t.task == task.task && t.model == task.model)
}

/// The suite names in the order given, then any that only the summaries name (sorted), so a
/// hand-merged results file still reports every task.
pub(crate) fn suite_names(results: &EvalResults) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in &results.suites {
        if !names.contains(&s.name) {
            names.push(s.name.clone());
        }
    }
    let mut extra: Vec<String> = results
        .tasks
        .iter()
        .map(|t| t.suite.clone())
        .filter(|s| !names.contains(s))
        .collect();
    extra.sort();
    extra.dedup();
    names.extend(extra);
    names
}

/// The status as the reports print it.
pub(crate) fn status_name(status: TrialStatus) -> &'static str {
    match status {
        TrialStatus::Passed => "passed",
        TrialStatus::Failed => "failed",
        TrialStatus::Limit => "limit",
        TrialStatus::Error => "error",
        TrialStatus::Diverged => "diverged",
    }
}

/// A fraction as a percentage with one decimal (`66.7%`); `n/a` when not a number.
pub(crate) fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", x * 100.0)
    } else {
        "n/a".to_string()
    }
}

/// A plain number with at most `places` decimals, trailing zeros dropped (`0.5`, `0.667`).
pub(crate) fn num(x: f64, places: usize) -> String {
    if !x.is_finite() {
        return "n/a".to_string();
    }
    let s = format!("{x:.places$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

/// Dollars with four decimals (`$0.0123`): eval costs are often fractions of a cent.
pub(crate) fn cost(x: f64) -> String {
    if x.is_finite() {
        format!("${x:.4}")
    } else {
        "n/a".to_string()
    }
}

/// A count with thousands separators (`1,234,567`).
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Milliseconds as seconds with three decimals, JUnit's `time`.
pub(crate) fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// Score ± standard error, both with three decimals at most.
pub(crate) fn score_pm(score: f64, stderr: f64) -> String {
    format!("{} ± {}", num(score, 3), num(stderr, 3))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(0.66666, 3), "0.667");
        assert_eq!(num(1.0, 3), "1");
        assert_eq!(num(-0.0001, 3), "0");
        assert_eq!(num(f64::NAN, 3), "n/a");
        assert_eq!(pct(2.0 / 3.0), "66.7%");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(seconds(12_345), "12.345");
        assert_eq!(cost(0.01234), "$0.0123");
    }

    #[test]
    fn wilson_intervals() {
        assert_eq!(wilson_95(0, 0), None);
        // Reference values (Newcombe 1998, table I): 0/10, 10/10, 1/3 (rounded to 4 places).
        let round = |(l, h): (f64, f64)| ((l * 1e4).round() / 1e4, (h * 1e4).round() / 1e4);
        assert_eq!(wilson_95(0, 10).map(round), Some((0.0, 0.2775)));
        assert_eq!(wilson_95(10, 10).map(round), Some((0.7225, 1.0)));
        assert_eq!(wilson_95(81, 263).map(round), Some((0.2553, 0.3662)));
        assert_eq!(wilson_95(2, 1), wilson_95(1, 1));
    }

    #[test]
    fn pass_at_k_intervals_carry_wilson_through_one_minus_one_minus_p_to_the_k() {
        let round = |(l, h): (f64, f64)| ((l * 1e4).round() / 1e4, (h * 1e4).round() / 1e4);
        // At k = 1, Wilson's own.
        assert_eq!(pass_at_k_95(1, 3, 1), wilson_95(1, 3));
        // 1/3: Wilson 0.0615-0.7923, so pass@2 is 1-(1-0.0615)^2 to 1-(1-0.7923)^2.
        assert_eq!(pass_at_k_95(1, 3, 2).map(round), Some((0.1192, 0.9569)));
        assert_eq!(pass_at_k_95(0, 4, 2).map(round), Some((0.0, 0.7398)));
        assert_eq!(pass_at_k_95(1, 10, 5).map(round), Some((0.0862, 0.9249)));
        // 2/3 at k = 3: one failure cannot fill three draws, so the estimate is 1, above
        // 1-(1-0.9385)^3 = 0.9998: the interval is widened to hold it.
        assert_eq!(crate::score::pass_at_k(3, 2, 3), 1.0);
        assert_eq!(pass_at_k_95(2, 3, 3).map(round), Some((0.5026, 1.0)));
        // No estimate, no interval.
        assert_eq!(pass_at_k_95(1, 3, 4), None);
        assert_eq!(pass_at_k_95(1, 3, 0), None);
        assert_eq!(pass_at_k_95(0, 0, 1), None);
        // Each end rises with k and always holds the estimate.
        for n in 1..=12u32 {
            for c in 0..=n {
                let mut last = (0.0, 0.0);
                for k in 1..=n {
                    let Some((l, h)) = pass_at_k_95(c, n, k) else {
                        panic!("no interval for {c}/{n} at {k}");
                    };
                    let estimate = crate::score::pass_at_k(n, c, k);
                    assert!(l <= estimate && estimate <= h, "{c}/{n} at {k}");
                    assert!(l >= last.0 - 1e-12 && h >= last.1 - 1e-12, "{c}/{n} at {k}");
                    assert!((0.0..=1.0).contains(&l) && (0.0..=1.0).contains(&h));
                    last = (l, h);
                }
            }
        }
    }
}
