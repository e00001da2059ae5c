//! The session's timers: what a due `wake_at` does (a retry's backoff over, the pause after a
//! compaction, a failed summary call sent again, the runs extensions' messages start while
//! idle), and how each is set and dropped.

use crate::agent::{Input, StepError};

use super::contract::SessionError;
use super::machine::SessionMachine;

/// What a due `wake_at` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wake {
    /// The retry backoff is over: continue the agent.
    Retry,
    /// 100 ms after a compaction: continue to retry the overflowed call or deliver queued messages.
    AfterCompaction,
    /// A failed summary call's backoff is over: send it again.
    SummaryRetry,
    /// The hook point that sent messages starting a run while idle has gone on: start them.
    IdleRuns,
}

impl SessionMachine {
    /// Asks for a wake at once for the held idle runs, unless a timer is set (its wake, or
    /// the run it continues, comes first).
    pub(super) fn wake_for_idle_runs(&mut self) {
        if self.wake.is_none() {
            self.wake = Some((self.now, Wake::IdleRuns));
        }
    }

    pub(super) fn wake(&mut self) -> Result<(), SessionError> {
        let Some((at, kind)) = self.wake else {
            return Ok(());
        };
        if self.now < at {
            return Ok(());
        }
        self.wake = None;
        if kind == Wake::IdleRuns {
            return self.start_idle_runs();
        }
        if kind == Wake::SummaryRetry {
            self.retry_summary_call()?;
            return self.retry_navigation_call();
        }
        // The transcript is being replaced: continuing it now would race the replacement.
        if self.compaction.is_some() || self.navigating() {
            return Ok(());
        }
        // Pi ignores a failing `continue()` here (e.g. nothing left to continue from).
        match self.agent.step(self.now, Input::Continue) {
            Ok(step) => self.route(step),
            Err(StepError::Rejected(_)) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Drops a pending continue after a compaction.
    pub(super) fn cancel_continue(&mut self) {
        if matches!(self.wake, Some((_, Wake::AfterCompaction))) {
            self.wake = None;
        }
    }

    /// Continue the agent shortly after a compaction (to retry, or to deliver queued messages).
    pub(super) fn continue_soon(&mut self) {
        self.wake = Some((self.now.saturating_add(100), Wake::AfterCompaction));
    }

    /// Wakes the machine after `delay` ms to send a failed summary call again.
    pub(super) fn retry_summary_soon(&mut self, delay: u64) {
        self.wake = Some((self.now.saturating_add(delay), Wake::SummaryRetry));
    }

    /// Drops a summary call's pending retry; whether there was one.
    pub(super) fn cancel_summary_retry(&mut self) -> bool {
        let pending = matches!(self.wake, Some((_, Wake::SummaryRetry)));
        if pending {
            self.wake = None;
        }
        pending
    }
}
