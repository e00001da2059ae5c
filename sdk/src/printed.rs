//! What `pi --mode json` would have printed for a run the library records, digested as the
//! binary digests its own output (`pi_cassettes::printed`): the session header, then every
//! event print mode prints (not those of the extensions' start and end, nor their errors, which
//! it says on stderr), one JSON line each with the recording's secrets replaced. The recording's outcome
//! holds that digest, so that `pi replay --check` (which prints those lines) finds the run
//! reproduced.

use pi_cassettes::printed::Digested;
use pi_cassettes::Recorder;
use serde::Serialize;

/// The digests of the lines printed so far.
#[derive(Debug)]
pub(crate) struct Printed {
    recorder: Recorder,
    digested: Digested,
}

impl Printed {
    /// Nothing printed yet, redacted as `recorder` redacts.
    pub(crate) fn new(recorder: Recorder) -> Self {
        Printed {
            recorder,
            digested: Digested::both().without_text(),
        }
    }

    /// `value` printed as its JSON line (a value that does not serialize prints nothing, as in
    /// the binary).
    pub(crate) fn line<T: Serialize + ?Sized>(&mut self, value: &T) {
        let mut line = Vec::new();
        if pi_core::json::to_writer(&mut line, value).is_err() {
            return;
        }
        self.digested.redacted_line(Some(&self.recorder), &line);
    }

    /// The digest the outcome holds, in lower-case hex.
    pub(crate) fn digest(&self) -> String {
        self.digested.chosen(Some(&self.recorder)).hex()
    }
}
