//! The interpreter's one clock: every time the Live interpreter puts on an input, the time a
//! model call starts (its message's `timestamp`, Gemini's tool-call ids), the waits of timers
//! and of SDK retries, and the retries' jitter all come from a [`Clock`], so that a run can be
//! recorded and replayed with the same times.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pi_providers::retry::RetryClock;
use pi_providers::transport::BoxFuture;

/// Time and chance for an interpreter. It is exactly what a model call's SDK retries need
/// ([`RetryClock`]: the time, jitter, waits), so one clock serves the interpreter and the
/// calls it starts; every [`RetryClock`] (such as
/// [`pi_providers::retry::FixedClock`]) is a `Clock`.
pub trait Clock: RetryClock {}

impl<C: RetryClock + ?Sized> Clock for C {}

/// Milliseconds since the epoch by the system clock; what [`SystemClock`] reads.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The real clock, the default: the wall clock, random jitter, real waits.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl RetryClock for SystemClock {
    fn now_ms(&self) -> u64 {
        now_ms()
    }

    /// A fresh random number in `[0, 1)` (the SDKs use `Math.random()`).
    fn jitter(&self) -> f64 {
        let bits = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        (bits >> 11) as f64 / (1u64 << 53) as f64
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }
}
