//! What a run printed, digested as a recording's outcome holds it and a replay compares it:
//! each JSON line with the recording's secrets replaced (as a replay, which sees only the
//! placeholders, prints it), hashed with SHA-256 and kept as text while it fits in
//! [`MAX_KEPT_TEXT`], so that a check can show how it differs. A recording digests the lines
//! also without their `message_update` ones: when the model streamed a secret in pieces, the
//! recording rewrites those to pieces of its placeholder, which the run did not print, and its
//! outcome holds that digest instead ([`RecordedOutcome::updates_omitted`]).
//!
//! The `pi` binary's standard output and the SDK's recorded sessions digest through this one
//! type, so a run recorded by either checks the same way.
//!
//! [`RecordedOutcome::updates_omitted`]: crate::format::RecordedOutcome

use std::borrow::Cow;

use pi_core::agent_session::SessionInput;
use pi_core::event::{Event, SessionEvent};
use sha2::{Digest, Sha256};

use crate::format::MAX_KEPT_TEXT;
use crate::Recorder;

/// Whether what `input`'s handlers cause is printed: not for the session's start and end (Pi's
/// print mode subscribes its printer once the extensions are bound and is gone before they
/// hear of the run's end), nor for a replacement's new session's start (bound before the
/// printer subscribes to it), but for a session left for a replacement or a reload (the
/// printer still listens: Pi's runtime tells the old session's `session_shutdown` before it
/// rebinds); their errors are said all the same, on stderr.
pub fn prints_events(input: &SessionInput) -> bool {
    !matches!(
        input,
        SessionInput::Start | SessionInput::Replaced { .. } | SessionInput::Shutdown
    )
}

/// Whether `event` is printed as a line of output: an extension's error is said on stderr
/// instead, as Pi's print mode says it.
pub fn is_printed(event: &Event) -> bool {
    !matches!(event, Event::Session(SessionEvent::ExtensionError { .. }))
}

/// Whether `line` is a `message_update` event: the message so far while it streams (Pi writes
/// `type` first, so the line's start says).
pub fn is_message_update(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"message_update""#)
}

/// Lines digested, and kept as text while they fit in [`MAX_KEPT_TEXT`].
#[derive(Clone)]
pub struct Digested {
    sha: Sha256,
    /// Whether any line was digested.
    used: bool,
    /// `None` once the text outgrew the limit, or when no text is kept.
    text: Option<String>,
    /// `message_update` lines are left out.
    skips_updates: bool,
    /// A recording's: the same lines but `message_update` ones.
    without_updates: Option<Box<Digested>>,
}

impl std::fmt::Debug for Digested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Digested")
            .field("used", &self.used)
            .field("skips_updates", &self.skips_updates)
            .finish_non_exhaustive()
    }
}

impl Default for Digested {
    fn default() -> Self {
        Digested::new()
    }
}

impl Digested {
    /// Every line digested.
    pub fn new() -> Self {
        Digested {
            sha: Sha256::new(),
            used: false,
            text: Some(String::new()),
            skips_updates: false,
            without_updates: None,
        }
    }

    /// Digests that leave out `message_update` lines (checking a replay whose recording left
    /// them out of its outcome).
    pub fn without_updates() -> Self {
        Digested {
            skips_updates: true,
            ..Digested::new()
        }
    }

    /// Digests kept both with and without `message_update` lines (a recording's).
    pub fn both() -> Self {
        Digested {
            without_updates: Some(Box::new(Digested::without_updates())),
            ..Digested::new()
        }
    }

    /// The same digests, keeping no text (nothing will show how it differs).
    pub fn without_text(mut self) -> Self {
        self.text = None;
        self.without_updates = self.without_updates.map(|d| Box::new(d.without_text()));
        self
    }

    /// Digests `line` (without its newline) as it is.
    pub fn line(&mut self, line: &[u8]) {
        if let Some(without) = &mut self.without_updates {
            without.line(line);
        }
        if self.skips_updates && is_message_update(line) {
            return;
        }
        self.used = true;
        self.sha.update(line);
        self.sha.update(b"\n");
        let fits = self
            .text
            .as_ref()
            .is_some_and(|text| text.len() + line.len() < MAX_KEPT_TEXT);
        match (fits, std::str::from_utf8(line)) {
            (true, Ok(line)) => {
                if let Some(text) = &mut self.text {
                    text.push_str(line);
                    text.push('\n');
                }
            }
            _ => self.text = None,
        }
    }

    /// Digests `line` with the secrets `recorder` replaces replaced (a recording's), as it is
    /// without one.
    pub fn redacted_line(&mut self, recorder: Option<&Recorder>, line: &[u8]) {
        let line = match (recorder, std::str::from_utf8(line)) {
            (Some(recorder), Ok(text)) => Cow::Owned(recorder.redact_text(text).into_bytes()),
            _ => Cow::Borrowed(line),
        };
        self.line(&line);
    }

    /// What the digest of these lines is: without their `message_update` lines when they are
    /// a recording's (`recorder`) in which the model streamed a secret in pieces.
    pub fn chosen(&self, recorder: Option<&Recorder>) -> &Digested {
        let streamed = recorder.is_some_and(Recorder::rewrote_streamed_secret);
        match (&self.without_updates, streamed) {
            (Some(without), true) => without,
            _ => self,
        }
    }

    /// The SHA-256 of the lines, in lower-case hex.
    pub fn hex(&self) -> String {
        crate::hex(&self.sha.clone().finalize())
    }

    /// Whether any line was digested.
    pub fn used(&self) -> bool {
        self.used
    }

    /// The lines as text, when kept and not over the limit.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// What a check shows of something a replay did otherwise than the recording (`None` when its
/// digest is the recorded one): the recorded and replayed texts when both are known, else their
/// digests. The recorded text is shown only when it is what the recorded digest is of: a
/// cassette's text may have been edited, its digest is what was compared.
pub fn shown_difference(
    recorded_digest: &str,
    recorded_text: Option<&str>,
    digest: &str,
    text: Option<String>,
) -> Option<(String, String)> {
    if recorded_digest == digest {
        return None;
    }
    let recorded_text =
        recorded_text.filter(|text| crate::sha256_hex(text.as_bytes()) == recorded_digest);
    Some(match (recorded_text, text) {
        (Some(expected), Some(actual)) => (expected.to_owned(), actual),
        _ => (
            format!("SHA-256 {recorded_digest}"),
            format!("SHA-256 {digest}"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_are_left_out_of_the_second_digest_only() {
        let update = br#"{"type":"message_update","x":1}"#;
        let end = br#"{"type":"message_end"}"#;
        let mut both = Digested::both();
        both.line(update);
        both.line(end);
        let mut all = Digested::new();
        all.line(update);
        all.line(end);
        let mut without = Digested::new();
        without.line(end);
        assert_eq!(both.hex(), all.hex());
        assert_eq!(both.chosen(None).hex(), all.hex());
        assert_eq!(
            both.without_updates.as_ref().map(|d| d.hex()),
            Some(without.hex())
        );
        assert_eq!(
            both.text().map(str::len),
            Some(update.len() + end.len() + 2)
        );
        assert_eq!(Digested::both().without_text().text(), None);
    }

    /// A difference is shown as texts only when the recorded text is what its digest is of:
    /// an edited text (its digest left as recorded) is shown as digests.
    #[test]
    fn a_recorded_text_is_shown_only_when_its_digest_is_the_recorded_one() {
        let recorded = "a\n";
        let digest = crate::sha256_hex(recorded.as_bytes());
        let replayed = crate::sha256_hex(b"b\n");
        assert_eq!(
            shown_difference(&digest, Some(recorded), &digest, Some("a\n".into())),
            None
        );
        assert_eq!(
            shown_difference(&digest, Some(recorded), &replayed, Some("b\n".into())),
            Some(("a\n".to_owned(), "b\n".to_owned()))
        );
        let as_digests = Some((format!("SHA-256 {digest}"), format!("SHA-256 {replayed}")));
        assert_eq!(
            shown_difference(&digest, Some("edited\n"), &replayed, Some("b\n".into())),
            as_digests
        );
        assert_eq!(
            shown_difference(&digest, Some(recorded), &replayed, None),
            as_digests
        );
    }
}
