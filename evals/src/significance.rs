//! The statistics run comparison uses: the exact tests (Fisher's, the sign test), computed in
//! log space from log-factorials so they stay exact (no normal approximation) and do not
//! overflow however many trials a run holds; Holm's adjustment for testing many rows at once;
//! and the 95% intervals of pass-rate differences (Wilson, Newcombe, MOVER).

/// `ln(i!)` for `i` in `0..=n`, summed once per test rather than per term.
struct LnFactorials(Vec<f64>);

impl LnFactorials {
    fn up_to(n: u64) -> Self {
        let mut table = Vec::with_capacity(usize::try_from(n).unwrap_or(0).saturating_add(1));
        let mut sum = 0.0;
        table.push(0.0);
        for i in 1..=n {
            sum += (i as f64).ln();
            table.push(sum);
        }
        LnFactorials(table)
    }

    fn ln_factorial(&self, i: u64) -> f64 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// `ln C(n, k)`; callers keep `k <= n`.
    fn ln_choose(&self, n: u64, k: u64) -> f64 {
        self.ln_factorial(n) - self.ln_factorial(k) - self.ln_factorial(n.saturating_sub(k))
    }
}

/// `ln(sum(exp(terms)))` without overflow or underflow of the largest term.
fn ln_sum_exp(terms: impl Iterator<Item = f64> + Clone) -> f64 {
    let max = terms.clone().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return max;
    }
    max + terms.map(|t| (t - max).exp()).sum::<f64>().ln()
}

/// One-sided Fisher exact tests on the 2x2 table of passes and failures of runs A and B:
/// `(p_worse, p_better)`, the chances, were both runs drawn from one pass rate, that B would
/// pass as few (resp. as many) of its trials as it did. Passes are capped at their trial count.
/// With no trials on a side there is nothing to test and both are 1.
pub(crate) fn fisher_one_sided(a_passed: u32, a_n: u32, b_passed: u32, b_n: u32) -> (f64, f64) {
    if a_n == 0 || b_n == 0 {
        return (1.0, 1.0);
    }
    let (a_passed, b_passed) = (u64::from(a_passed.min(a_n)), u64::from(b_passed.min(b_n)));
    let (a_n, b_n) = (u64::from(a_n), u64::from(b_n));
    let total = a_n + b_n;
    let passes = a_passed + b_passed;
    let table = LnFactorials::up_to(total);
    // B's passes follow a hypergeometric law: b_n draws from `total` trials, `passes` of them
    // passed.
    let lo = b_n.saturating_sub(total - passes);
    let hi = passes.min(b_n);
    let ln_all = table.ln_choose(total, b_n);
    let ln_pmf =
        |x: u64| table.ln_choose(passes, x) + table.ln_choose(total - passes, b_n - x) - ln_all;
    let p_worse = ln_sum_exp((lo..=b_passed).map(ln_pmf)).exp();
    let p_better = ln_sum_exp((b_passed..=hi).map(ln_pmf)).exp();
    (p_worse.clamp(0.0, 1.0), p_better.clamp(0.0, 1.0))
}

/// Exact one-sided sign test: the chance, were rises and drops equally likely, of at least
/// `drops` drops among the `rises + drops` changes (the p-value of "B is worse"; swap the
/// arguments for "B is better"). Ties are left out by the caller; with nothing left it is 1.
pub(crate) fn sign_test_worse(rises: u32, drops: u32) -> f64 {
    let m = u64::from(rises) + u64::from(drops);
    if m == 0 {
        return 1.0;
    }
    let table = LnFactorials::up_to(m);
    let ln_half_m = m as f64 * std::f64::consts::LN_2;
    let tail = ln_sum_exp((u64::from(drops)..=m).map(|i| table.ln_choose(m, i) - ln_half_m));
    tail.exp().clamp(0.0, 1.0)
}

/// Holm's step-down adjustment of `p` (Holm, 1979): sorted ascending, the i-th smallest of m
/// becomes `max over j <= i of min(1, (m - j + 1) * p_(j))`, returned in the input's order. A
/// test is significant at level alpha when its adjusted value is below alpha; the chance of one
/// or more false alarms among all of them stays at most alpha, however the tests depend on
/// each other.
pub(crate) fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = p.len() as f64;
    let mut adjusted = vec![1.0; p.len()];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank as f64) * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The normal quantile of a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// Wilson's score interval (95%) for a proportion of `x` in `n`: the rates whose score test
/// does not reject `x / n`, `(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`. Unlike
/// the Wald interval it stays inside 0..1 and is not empty at 0 or n. With `n` 0 it is 0..1.
pub(crate) fn wilson(x: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p) = (f64::from(n), f64::from(x.min(n)) / f64::from(n));
    let z2 = Z_95 * Z_95;
    let centre = p + z2 / (2.0 * n);
    let half = Z_95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z2 / n;
    (
        ((centre - half) / denominator).max(0.0),
        ((centre + half) / denominator).min(1.0),
    )
}

/// A difference of pass rates (B - A) and its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    pub delta: f64,
    pub low: f64,
    pub high: f64,
}

/// The mean over tasks of B's pass rate minus A's, `(1/T) Σ (b_i - a_i)`, with a 95% interval
/// by Zou and Donner's MOVER (2008) from the Wilson intervals (l, u) of every rate:
/// `d - (1/T) sqrt(Σ (b_i - l_b,i)² + (u_a,i - a_i)²)` to
/// `d + (1/T) sqrt(Σ (u_b,i - b_i)² + (a_i - l_a,i)²)`. For one task it is Newcombe's hybrid
/// score interval (1998, method 10). The tasks are taken as given: the interval is the trials'
/// noise, not the choice of tasks; it stays within -1..1. Each item is
/// `(passed_a, counted_a, passed_b, counted_b)`; with none, the difference is 0 in -1..1.
pub(crate) fn rate_difference(tasks: &[(u32, u32, u32, u32)]) -> Effect {
    if tasks.is_empty() {
        return Effect {
            delta: 0.0,
            low: -1.0,
            high: 1.0,
        };
    }
    let rate = |x: u32, n: u32| f64::from(x.min(n)) / f64::from(n.max(1));
    let (mut delta, mut below, mut above) = (0.0, 0.0, 0.0);
    for &(x_a, n_a, x_b, n_b) in tasks {
        let (a, b) = (rate(x_a, n_a), rate(x_b, n_b));
        let ((l_a, u_a), (l_b, u_b)) = (wilson(x_a, n_a), wilson(x_b, n_b));
        delta += b - a;
        below += (b - l_b).powi(2) + (u_a - a).powi(2);
        above += (u_b - b).powi(2) + (a - l_a).powi(2);
    }
    let t = tasks.len() as f64;
    let delta = delta / t;
    Effect {
        delta,
        low: (delta - below.sqrt() / t).max(-1.0),
        high: (delta + above.sqrt() / t).min(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
    }

    #[test]
    fn fisher_known_values() {
        // 10/10 then 0/10: only one table is as extreme, 1 / C(20,10).
        let (worse, better) = fisher_one_sided(10, 10, 0, 10);
        assert!(close(worse, 1.0 / 184_756.0), "{worse}");
        assert!(close(better, 1.0));
        // 1/1 then 0/1: a coin toss.
        let (worse, better) = fisher_one_sided(1, 1, 0, 1);
        assert!(close(worse, 0.5) && close(better, 1.0));
        // The tea-tasting table (3/4 vs 1/4): P(X <= 1) = 17/70.
        let (worse, better) = fisher_one_sided(3, 4, 1, 4);
        assert!(close(worse, 17.0 / 70.0), "{worse}");
        assert!(close(better, 69.0 / 70.0), "{better}");
        assert_eq!(fisher_one_sided(0, 0, 3, 4), (1.0, 1.0));
    }

    #[test]
    fn fisher_large_counts_stay_finite() {
        let (worse, better) = fisher_one_sided(9_000, 10_000, 8_800, 10_000);
        // 90% against 88% of 10,000: about 4.5 standard errors, p near 3e-6.
        assert!(worse > 1e-7 && worse < 1e-5, "{worse}");
        assert!(better > 0.999 && better <= 1.0, "{better}");
    }

    #[test]
    fn sign_test_known_values() {
        assert_eq!(sign_test_worse(0, 0), 1.0);
        assert!(close(sign_test_worse(0, 1), 0.5));
        assert!(close(sign_test_worse(1, 0), 1.0));
        assert!(close(sign_test_worse(0, 5), 1.0 / 32.0));
        assert!(close(sign_test_worse(0, 20), 1.0 / f64::powi(2.0, 20)));
        // 1 rise, 9 drops: (1 + 10) / 1024; the other way, all but the 9-or-10-rises tail.
        assert!(close(sign_test_worse(1, 9), 11.0 / 1024.0));
        assert!(close(sign_test_worse(9, 1), 1.0 - 1.0 / 1024.0));
        // 2 rises, 8 drops: (1 + 10 + 45) / 1024.
        assert!(close(sign_test_worse(2, 8), 56.0 / 1024.0));
        assert!(close(sign_test_worse(5, 5), 638.0 / 1024.0));
    }

    #[test]
    fn holm_on_a_hand_computed_example() {
        // Sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised
        // to 0.06 (adjusted values never fall down the order).
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (got, want) in adjusted.iter().zip(expected) {
            assert!(close(*got, want), "{adjusted:?}");
        }
        assert_eq!(holm(&[0.6, 0.5]), [1.0, 1.0], "capped at 1");
        assert_eq!(holm(&[0.02]), [0.02], "one test is left alone");
        assert!(holm(&[]).is_empty());
    }

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn wilson_known_values() {
        // Newcombe (1998), "Two-sided confidence intervals for the single proportion", table I.
        for (x, n, low, high) in [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
        ] {
            let (l, h) = wilson(x, n);
            assert!(near(l, low) && near(h, high), "{x}/{n}: {l} {h}");
        }
        assert_eq!(wilson(3, 0), (0.0, 1.0));
    }

    #[test]
    fn newcombe_known_values() {
        // Newcombe (1998), "Interval estimation for the difference between independent
        // proportions", table II, method 10; A and B swapped, as the difference is B - A.
        for (x_a, n_a, x_b, n_b, low, high) in [
            (48, 80, 56, 70, 0.0524, 0.3339),
            (3, 10, 9, 10, 0.1705, 0.8090),
            (2, 7, 6, 7, 0.0582, 0.8062),
            (0, 29, 5, 56, -0.0381, 0.1926),
        ] {
            let e = rate_difference(&[(x_a, n_a, x_b, n_b)]);
            let delta = f64::from(x_b) / f64::from(n_b) - f64::from(x_a) / f64::from(n_a);
            assert!(close(e.delta, delta));
            assert!(near(e.low, low) && near(e.high, high), "{e:?}");
        }
        let same = rate_difference(&[(5, 10, 5, 10)]);
        assert!(same.low < 0.0 && same.high > 0.0 && close(same.delta, 0.0));
    }

    #[test]
    fn the_mean_over_tasks_narrows_as_the_square_root_of_their_count() {
        // Four copies of one task: the same difference, half the one task's half-widths.
        let one = rate_difference(&[(48, 80, 56, 70)]);
        let four = rate_difference(&[(48, 80, 56, 70); 4]);
        assert!(close(four.delta, one.delta));
        assert!(close(four.delta - four.low, (one.delta - one.low) / 2.0));
        assert!(close(four.high - four.delta, (one.high - one.delta) / 2.0));
        // Every task moved by -1 (all passed, then none): still inside -1..1.
        let crash = rate_difference(&[(10, 10, 0, 10); 3]);
        assert!(close(crash.delta, -1.0) && close(crash.low, -1.0) && crash.high < -0.5);
        assert_eq!(
            rate_difference(&[]),
            Effect {
                delta: 0.0,
                low: -1.0,
                high: 1.0
            }
        );
    }
}
