//! Retrying errored trials (`--retry-errors N`), as Inspect's eval sets retry their failed
//! samples: an error (the model could not be reached, the agent crashed) says nothing about the
//! model, and is often gone a few seconds later. Each retry waits longer than the one before
//! ([`backoff`]), and a cancelled run stops waiting at once. Only errors are retried: a failed
//! or limited trial is a verdict, and a divergence is the same on every replay.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::results::{TrialResult, TrialStatus};

/// The wait before retry `n` (1-based): 1 s, 2 s, 4 s, ... up to 30 s.
pub fn backoff(n: u32) -> Duration {
    Duration::from_secs(1u64 << n.saturating_sub(1).min(5)).min(Duration::from_secs(30))
}

/// Runs `attempt` until it gives a trial that did not error, `retries` more times at most; the
/// last result, with the attempts made and the earlier attempts' errors. `None` when an
/// attempt was cancelled (or the run was while waiting to retry).
pub fn retried(
    retries: u32,
    cancel: &AtomicBool,
    mut attempt: impl FnMut() -> Option<TrialResult>,
) -> Option<TrialResult> {
    let mut earlier = Vec::new();
    let mut n = 0;
    loop {
        let mut result = attempt()?;
        if result.status != TrialStatus::Error || n == retries {
            result.attempts = n + 1;
            result.earlier_errors = earlier;
            return Some(result);
        }
        n += 1;
        earlier.push(result.reason.unwrap_or_else(|| "an error".into()));
        let until = Instant::now() + backoff(n);
        while Instant::now() < until {
            if cancel.load(Ordering::SeqCst) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::test_support::trial;

    #[test]
    fn backoff_doubles_up_to_half_a_minute() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }

    fn errored(reason: &str) -> TrialResult {
        let mut t = trial("s", "t", "m", 0, TrialStatus::Error, 0.0);
        t.reason = Some(reason.into());
        t
    }

    #[test]
    fn errors_are_retried_until_one_is_not_or_the_retries_are_spent() {
        let cancel = AtomicBool::new(false);
        let mut given = vec![
            trial("s", "t", "m", 0, TrialStatus::Passed, 1.0),
            errored("boom"),
        ];
        let result = retried(2, &cancel, || given.pop()).unwrap();
        assert_eq!(result.status, TrialStatus::Passed);
        assert_eq!(result.attempts, 2);
        assert_eq!(result.earlier_errors, ["boom"]);

        let mut calls = 0;
        let result = retried(0, &cancel, || {
            calls += 1;
            Some(errored("boom"))
        })
        .unwrap();
        assert_eq!((calls, result.attempts), (1, 1));
        assert!(result.earlier_errors.is_empty());
    }

    #[test]
    fn a_verdict_is_not_retried_and_a_cancelled_run_stops_waiting() {
        let cancel = AtomicBool::new(false);
        let mut calls = 0;
        let failed = retried(3, &cancel, || {
            calls += 1;
            Some(trial("s", "t", "m", 0, TrialStatus::Failed, 0.0))
        })
        .unwrap();
        assert_eq!((calls, failed.attempts), (1, 1));

        cancel.store(true, Ordering::SeqCst);
        let mut calls = 0;
        let none = retried(3, &cancel, || {
            calls += 1;
            Some(errored("boom"))
        });
        assert!(none.is_none());
        assert_eq!(calls, 1, "no retry once cancelled");
    }
}
