#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;

use super::*;
use crate::test_support::trial;

const EPS: f64 = 1e-9;

/// pass@k and pass^k by enumerating every k-subset of n trials, the first c of them passed.
fn brute_force(n: u32, c: u32, k: u32) -> (f64, f64) {
    let (mut subsets, mut any, mut all) = (0u32, 0u32, 0u32);
    let passed_mask = (1u32 << c) - 1;
    for mask in 0u32..(1 << n) {
        if mask.count_ones() != k {
            continue;
        }
        subsets += 1;
        if mask & passed_mask != 0 {
            any += 1;
        }
        if mask & passed_mask == mask {
            all += 1;
        }
    }
    (
        f64::from(any) / f64::from(subsets),
        f64::from(all) / f64::from(subsets),
    )
}

fn n_c() -> impl Strategy<Value = (u32, u32)> {
    (1u32..200).prop_flat_map(|n| (Just(n), 0..=n))
}

proptest! {
    #[test]
    fn estimators_are_probabilities((n, c) in n_c(), k in 1u32..200) {
        let k = k.min(n);
        let at = pass_at_k(n, c, k);
        let hat = pass_hat_k(n, c, k);
        prop_assert!((0.0..=1.0).contains(&at), "pass@{k} = {at}");
        prop_assert!((0.0..=1.0).contains(&hat), "pass^{k} = {hat}");
    }

    #[test]
    fn monotone_in_k((n, c) in n_c()) {
        for k in 1..n {
            prop_assert!(pass_at_k(n, c, k + 1) >= pass_at_k(n, c, k) - EPS);
            prop_assert!(pass_hat_k(n, c, k + 1) <= pass_hat_k(n, c, k) + EPS);
        }
    }

    #[test]
    fn hat_below_pass_at_1_below_at((n, c) in n_c(), k in 1u32..200) {
        let k = k.min(n);
        let at1 = pass_at_k(n, c, 1);
        prop_assert!(pass_hat_k(n, c, k) <= at1 + EPS);
        prop_assert!(at1 <= pass_at_k(n, c, k) + EPS);
    }

    #[test]
    fn at_one_is_the_pass_rate((n, c) in n_c()) {
        let rate = f64::from(c) / f64::from(n);
        prop_assert!((pass_at_k(n, c, 1) - rate).abs() < EPS);
        prop_assert!((pass_hat_k(n, c, 1) - rate).abs() < EPS);
    }

    #[test]
    fn equal_brute_force(n in 1u32..=10, c in 0u32..=10, k in 1u32..=10) {
        let (c, k) = (c.min(n), k.min(n));
        let (at, hat) = brute_force(n, c, k);
        prop_assert!((pass_at_k(n, c, k) - at).abs() < EPS, "pass@{k} n={n} c={c}");
        prop_assert!((pass_hat_k(n, c, k) - hat).abs() < EPS, "pass^{k} n={n} c={c}");
    }
}

#[test]
fn edge_cases_do_not_panic() {
    assert_eq!(pass_at_k(0, 0, 1), 0.0);
    assert_eq!(pass_hat_k(0, 0, 1), 0.0);
    assert_eq!(pass_at_k(5, 0, 3), 0.0);
    assert_eq!(pass_at_k(5, 5, 1), 1.0);
    assert_eq!(pass_at_k(5, 3, 3), 1.0, "n - c < k: some draw must pass");
    assert_eq!(pass_at_k(3, 9, 1), 1.0, "c clamped to n");
    assert_eq!(pass_hat_k(3, 3, 9), 1.0, "k clamped to n");
    assert_eq!(pass_hat_k(4, 2, 3), 0.0);
    assert_eq!(pass_at_k(u32::MAX, 1, u32::MAX), 1.0);
}

#[test]
fn mean_and_stderr_values() {
    assert_eq!(mean_and_stderr(&[]), (0.0, 0.0));
    assert_eq!(mean_and_stderr(&[0.5]), (0.5, 0.0));
    let (mean, stderr) = mean_and_stderr(&[1.0, 0.0, 1.0, 0.0]);
    assert!((mean - 0.5).abs() < EPS);
    // Sample variance 1/3, over n = 4: sqrt(1/12).
    assert!((stderr - (1.0f64 / 12.0).sqrt()).abs() < EPS);
}

#[test]
fn summarize_counts_only_verdicts() {
    let trials = vec![
        trial("s", "b", "m1", 0, TrialStatus::Passed, 1.0),
        trial("s", "b", "m1", 1, TrialStatus::Failed, 0.5),
        trial("s", "b", "m1", 2, TrialStatus::Error, 0.0),
        trial("s", "b", "m1", 3, TrialStatus::Diverged, 0.0),
        trial("s", "b", "m1", 4, TrialStatus::Limit, 0.0),
        trial("s", "a", "m1", 0, TrialStatus::Passed, 1.0),
        trial("s", "a", "m0", 0, TrialStatus::Error, 0.0),
    ];
    let (tasks, models) = summarize(&trials);
    let keys: Vec<(&str, &str)> = tasks
        .iter()
        .map(|t| (t.task.as_str(), t.model.as_str()))
        .collect();
    assert_eq!(keys, [("a", "m0"), ("a", "m1"), ("b", "m1")]);

    let b = &tasks[2];
    assert_eq!((b.trials, b.counted, b.passed), (5, 3, 1));
    assert_eq!((b.errors, b.diverged), (1, 1));
    assert_eq!(b.pass_at_k.len(), 3);
    assert!((b.pass_at_k[0].value - 1.0 / 3.0).abs() < EPS);
    assert_eq!(b.pass_at_k[2].value, 1.0);
    assert_eq!(b.pass_hat_k[1].value, 0.0);
    assert!(
        (b.mean_score - 0.5).abs() < EPS,
        "errors' zero scores are not averaged"
    );
    assert!((b.stderr - 0.5 / 3.0f64.sqrt()).abs() < EPS);
    assert_eq!(b.usage.total_tokens, 20, "every trial's tokens are counted");
    assert!((b.cost - 0.05).abs() < EPS);
    assert!((b.mean_turns - 2.0).abs() < EPS);
    assert!((b.mean_wall_ms - 100.0).abs() < EPS);

    let only_errors = &tasks[0];
    assert_eq!((only_errors.counted, only_errors.passed), (0, 0));
    assert!(only_errors.pass_at_k.is_empty() && only_errors.pass_hat_k.is_empty());
    assert_eq!(only_errors.mean_score, 0.0);

    let names: Vec<&str> = models.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(names, ["m0", "m1"]);
    let m0 = &models[0];
    assert_eq!((m0.tasks, m0.trials, m0.errors), (1, 1, 1));
    assert_eq!((m0.pass_at_1, m0.score), (0.0, 0.0));
    let m1 = &models[1];
    assert_eq!((m1.tasks, m1.trials, m1.passed), (2, 6, 2));
    assert_eq!((m1.errors, m1.diverged), (1, 1));
    assert!((m1.pass_at_1 - (1.0 + 1.0 / 3.0) / 2.0).abs() < EPS);
    assert!((m1.score - 0.75).abs() < EPS);
    assert!((m1.stderr - 0.25).abs() < EPS);
    assert_eq!(m1.usage.total_tokens, 24);
}

#[test]
fn summarize_nothing() {
    let (tasks, models) = summarize(&[]);
    assert!(tasks.is_empty() && models.is_empty());
}
