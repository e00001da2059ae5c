//! The exact tests run comparison uses, computed in log space from log-factorials so they stay
//! exact (no normal approximation) and do not overflow however many trials a run holds.

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

/// Exact two-sided sign test: the chance, were rises and drops equally likely, of a split at
/// least as lopsided as `rises` to `drops`. Ties are left out by the caller; with nothing left
/// it is 1.
pub(crate) fn sign_test(rises: u32, drops: u32) -> f64 {
    let m = u64::from(rises) + u64::from(drops);
    if m == 0 {
        return 1.0;
    }
    let fewer = u64::from(rises.min(drops));
    let table = LnFactorials::up_to(m);
    let ln_half_m = m as f64 * std::f64::consts::LN_2;
    let tail = ln_sum_exp((0..=fewer).map(|i| table.ln_choose(m, i) - ln_half_m)).exp();
    (2.0 * tail).clamp(0.0, 1.0)
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
        assert_eq!(sign_test(0, 0), 1.0);
        assert!(close(sign_test(0, 1), 1.0));
        assert!(close(sign_test(0, 5), 2.0 / 32.0));
        assert!(close(sign_test(0, 20), 2.0 / f64::powi(2.0, 20)));
        // 2 rises, 8 drops: 2 * (1 + 10 + 45) / 1024.
        assert!(close(sign_test(2, 8), 112.0 / 1024.0));
        assert!(close(sign_test(5, 5), 1.0));
    }
}
