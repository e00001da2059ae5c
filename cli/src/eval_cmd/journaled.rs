//! The run's journal as `pi eval` keeps it (see `pi_evals::journal`): each finished trial is
//! written to `OUT/journal.jsonl`, with this machine's credentials replaced as in the reports,
//! before it counts as done, so that a `pi eval` killed outright can be resumed. A journal that
//! cannot be written stops the run as Ctrl-C does: a run whose finished trials would be lost
//! to a kill does not go on spending.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pi_evals::journal::Journal;
use pi_evals::results::{EvalResults, TrialResult};

/// An open journal and what redacts its lines.
pub(super) struct Journaled {
    journal: Journal,
    credentials: Vec<(String, String)>,
    rules: pi_cassettes::redact::Rules,
    /// The first write that failed.
    failed: Mutex<Option<String>>,
    cancel: Arc<AtomicBool>,
}

impl Journaled {
    /// Starts the journal of `run` in `out`, holding the trials `kept` from the run it resumes
    /// (written already redacted); a failed write sets `cancel`.
    pub(super) fn start(
        out: &Path,
        run: &EvalResults,
        kept: &[TrialResult],
        cancel: Arc<AtomicBool>,
    ) -> Result<Journaled, String> {
        let credentials = crate::secrets::machine_credentials();
        let rules = crate::secrets::machine_rules()?;
        let head = super::redacted(run)?;
        let journal = Journal::start(out, head.as_ref().unwrap_or(run), kept)
            .map_err(|e| format!("cannot write {}: {e}", journal_path(out)))?;
        Ok(Journaled {
            journal,
            credentials,
            rules,
            failed: Mutex::new(None),
            cancel,
        })
    }

    /// Writes `trial` to the journal and waits for the disk; on failure, stops the run.
    pub(super) fn record(&self, trial: &TrialResult) {
        if let Err(e) = self.redacted(trial).and_then(|trial| {
            self.journal
                .append(&trial)
                .map_err(|e| format!("cannot write the run's journal: {e}"))
        }) {
            self.failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(e);
            self.cancel.store(true, Ordering::SeqCst);
        }
    }

    fn redacted(&self, trial: &TrialResult) -> Result<TrialResult, String> {
        if self.credentials.is_empty() && self.rules.is_empty() {
            return Ok(trial.clone());
        }
        let mut value =
            serde_json::to_value(trial).map_err(|e| format!("cannot redact a trial: {e}"))?;
        crate::secrets::redact_json(&mut value, &self.credentials, &self.rules);
        serde_json::from_value(value).map_err(|e| format!("cannot redact a trial: {e}"))
    }

    /// Why the journal stopped the run, if it did.
    pub(super) fn failure(&self) -> Option<String> {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Removes the journal once `results.json` holds the run.
    pub(super) fn finish(self, out: &Path) -> Result<(), String> {
        self.journal
            .finish()
            .map_err(|e| format!("cannot remove {}: {e}", journal_path(out)))
    }
}

fn journal_path(out: &Path) -> String {
    out.join(pi_evals::journal::JOURNAL_FILE)
        .display()
        .to_string()
}
