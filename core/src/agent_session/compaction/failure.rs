//! A compaction that ends without an entry (it failed, was aborted or cancelled): its
//! `compaction_end`, then the `session_compact_failed` handlers, during which the compaction is
//! held among the failing ones until its caller hears the error. A manual one has ended by then,
//! as Pi's `compact()` has cleared its state before it awaits them, so another `compact` starts at
//! once; an automatic one has not (Pi's `_runAutoCompaction` awaits them before it returns), so
//! a `compact` is held until they ran and the run settled, as Pi's `compact()` waits for idle.

use crate::agent::hooks::{HookEvent, HookPayload};
use crate::event::CompactionReason;

use super::super::contract::{Reply, SessionError};
use super::super::machine::SessionMachine;
use super::{CompactionJob, JobState, CANCELLED};

impl SessionMachine {
    /// Starts the `compact` held while an automatic compaction's `session_compact_failed`
    /// handlers ran, once they have and the run has settled.
    pub(in crate::agent_session) fn start_held_compaction(&mut self) -> Result<(), SessionError> {
        if self.run_active || self.compaction.is_some() || !self.failing.is_empty() {
            return Ok(());
        }
        let Some(job) = self.held_compaction.take() else {
            return Ok(());
        };
        self.compaction = Some(job);
        self.begin_compaction_calls()
    }

    /// Whether an automatic compaction's `session_compact_failed` handlers run (Pi's
    /// `_runAutoCompaction` has not returned yet; a manual `compact()` has).
    pub(in crate::agent_session) fn automatic_failing(&self) -> bool {
        self.failing
            .iter()
            .any(|job| job.reason != CompactionReason::Manual)
    }

    /// The compaction fails with `error`, worded for its `compaction_end` as Pi words it.
    pub(super) fn fail_compaction(
        &mut self,
        job: &CompactionJob,
        error: String,
    ) -> Result<(), SessionError> {
        let text = match job.reason {
            CompactionReason::Manual => format!("Compaction failed: {error}"),
            CompactionReason::Overflow => format!("Context overflow recovery failed: {error}"),
            CompactionReason::Threshold => format!("Auto-compaction failed: {error}"),
        };
        self.compaction_failed(job, Some(text), false, error)
    }

    /// The compaction ends as aborted (Pi's `Compaction cancelled`).
    pub(super) fn abort_ended(&mut self, job: &CompactionJob) -> Result<(), SessionError> {
        self.compaction_failed(job, None, true, CANCELLED.into())
    }

    /// A compaction ends without an entry: `compaction_end`, then the `session_compact_failed`
    /// handlers where there are some (Pi awaits them before its caller hears `error`).
    pub(super) fn compaction_failed(
        &mut self,
        job: &CompactionJob,
        error_message: Option<String>,
        aborted: bool,
        error: String,
    ) -> Result<(), SessionError> {
        self.end_compaction(job, None, aborted, error_message.clone())?;
        if self.notify_failure(job, error_message, aborted, Some(error.clone())) {
            return Ok(());
        }
        self.tell_failure(job, error)
    }

    /// Asks the `session_compact_failed` handlers, where there are some, holding `job` (with
    /// what its caller is to hear) among the failing until they ran; whether they are asked.
    /// The compaction has ended: another may start meanwhile.
    pub(super) fn notify_failure(
        &mut self,
        job: &CompactionJob,
        error_message: Option<String>,
        aborted: bool,
        failure: Option<String>,
    ) -> bool {
        if !self
            .agent
            .handled_hooks()
            .contains(HookEvent::SessionCompactFailed)
        {
            return false;
        }
        let call = self.agent.reserve_call();
        let payload = HookPayload::SessionCompactFailed {
            reason: job.reason,
            error_message,
            aborted,
            will_retry: false,
            from_extension: job.supplied,
        };
        let mut held = job.clone();
        held.state = JobState::Failed;
        held.hook = Some(call);
        held.failure = failure;
        self.failing.push(held);
        self.push_hook(call, payload);
        true
    }

    /// The failed compaction's caller hears `error`: `ctx.compact()`'s `onError`, or RPC's
    /// `compact`.
    pub(super) fn tell_failure(
        &mut self,
        job: &CompactionJob,
        error: String,
    ) -> Result<(), SessionError> {
        if let Some(callback) = job.callback {
            self.call_back(callback, Err(error.clone()));
        }
        if job.replies() {
            self.reply(Reply::Compacted(job.compact, Err(error)));
        }
        Ok(())
    }
}
