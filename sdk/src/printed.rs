//! What `pi --mode json` would have printed for a run the library records, digested as the
//! binary digests its own output: the session header, then every event, one JSON line each with
//! the recording's secrets replaced. The recording's outcome holds that digest, so that
//! `pi replay --check` (which prints those lines) finds the run reproduced.

use pi_cassettes::Recorder;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The digests of the lines printed so far: of all of them, and without the `message_update`
/// ones (what the outcome holds when the model streamed a secret in pieces, as the binary's
/// does).
#[derive(Debug)]
pub(crate) struct Printed {
    recorder: Recorder,
    all: Sha256,
    without_updates: Sha256,
}

impl Printed {
    /// Nothing printed yet, redacted as `recorder` redacts.
    pub(crate) fn new(recorder: Recorder) -> Self {
        Printed {
            recorder,
            all: Sha256::new(),
            without_updates: Sha256::new(),
        }
    }

    /// `value` printed as its JSON line (a value that does not serialize prints nothing, as in
    /// the binary).
    pub(crate) fn line<T: Serialize + ?Sized>(&mut self, value: &T) {
        let mut line = Vec::new();
        if pi_core::json::to_writer(&mut line, value).is_err() {
            return;
        }
        let line = match std::str::from_utf8(&line) {
            Ok(text) => self.recorder.redact_text(text).into_bytes(),
            Err(_) => line,
        };
        self.all.update(&line);
        self.all.update(b"\n");
        if !line.starts_with(br#"{"type":"message_update""#) {
            self.without_updates.update(&line);
            self.without_updates.update(b"\n");
        }
    }

    /// The digest the outcome holds, in lower-case hex.
    pub(crate) fn digest(&self) -> String {
        let chosen = if self.recorder.rewrote_streamed_secret() {
            &self.without_updates
        } else {
            &self.all
        };
        pi_cassettes::hex(&chosen.clone().finalize())
    }
}
