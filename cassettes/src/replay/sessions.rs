//! A replay that goes on across the recorded run's session replacements: each session after
//! the first is rebuilt from its `replaced` line alone (never from the files the recorded run
//! opened), and the session it replaces must have used its whole part of the recording, for
//! the recorded reason, leaving its file as the recorded run left it. The `pi` binary's RPC
//! and print-mode replays and the SDK's replay share these two steps.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_core::agent_session::SessionMachine;
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::Interpreter;
use pi_effects::run_config::build_machine;
use pi_effects::session::SessionFile;

use super::Replay;
use crate::divergence::Divergence;
use crate::read::Cassette;

/// One session of a replayed run, rebuilt and not yet started.
#[derive(Debug)]
pub struct ReplayedSession {
    machine: SessionMachine,
    file: SessionFile,
    replay: Replay,
    /// The path the recorded run's session had (a replay writes its own copy elsewhere).
    reported: Option<PathBuf>,
}

impl ReplayedSession {
    /// The session `cassette` (one session's part of a recording, e.g. a
    /// [`Cassette::next_session`]) starts in, rebuilt in `dir` from what the recording holds.
    pub fn rebuild(cassette: Arc<Cassette>, dir: &Path) -> Result<Self, Divergence> {
        let unusable = |what: String| Divergence::unusable_cassette(&cassette, what);
        let store = cassette
            .starting_session(&cassette.config, dir)
            .map_err(unusable)?;
        let (machine, file) =
            build_machine(&cassette.config, store).map_err(|e| unusable(e.to_string()))?;
        let reported = cassette.header.session.path.as_ref().map(PathBuf::from);
        let replay = Replay::new(cassette)?;
        Ok(ReplayedSession {
            machine,
            file,
            replay,
            reported,
        })
    }

    /// Checks that the new session `cassette` starts (a [`Cassette::next_session`]) is a
    /// child of `asked`, the session the replacement named as its parent (`None`: no parent),
    /// as the recorded header of it says: a replay builds the session from the recording, so
    /// an ask that differs from what was built must not pass for the recorded run.
    pub fn check_parent(cassette: &Cassette, asked: Option<&str>) -> Result<(), Divergence> {
        let content = cassette
            .session_content()
            .map_err(|what| Divergence::unusable_cassette(cassette, what))?;
        let recorded = content
            .as_deref()
            .and_then(|text| text.lines().next())
            .and_then(|header| serde_json::from_str::<serde_json::Value>(header).ok())
            .and_then(|header| header["parentSession"].as_str().map(str::to_owned));
        if recorded.as_deref() == asked {
            return Ok(());
        }
        let shown = |parent: Option<&str>| parent.unwrap_or("no parent").to_owned();
        Err(Divergence::output(
            cassette,
            "parent session of the session a replacement opened",
            &shown(recorded.as_deref()),
            &shown(asked),
        ))
    }

    /// The session over `wrap`'s interpreter (the replay, or an enum holding it), reporting
    /// the recorded path. Nothing else writes the replayed session while it runs, so its file
    /// is held open.
    pub fn into_session<I: Interpreter>(self, wrap: impl FnOnce(Replay) -> I) -> AgentSession<I> {
        AgentSession::from_parts(self.machine, wrap(self.replay), self.file.held_open())
            .reporting_path(self.reported)
    }
}

impl Replay {
    /// This session was replaced: for the recorded reason, having used its whole part of the
    /// recording, and leaving its file (`left_file`, as the replay wrote it) as the recorded run
    /// left it. A recording that ends without a `replaced` line (one in place, or from before
    /// recordings went on across replacements) checks only that its lines were used.
    pub fn left(&self, reason: &str, left_file: Option<&Path>) -> Result<(), Divergence> {
        self.finish_part()?;
        let Some(left) = self.cassette().left() else {
            return Ok(());
        };
        if left.reason != reason {
            let what = "reason of the session's replacement";
            return Err(Divergence::output(
                self.cassette(),
                what,
                &left.reason,
                reason,
            ));
        }
        let recorded = &left.file;
        let written = left_file.and_then(|path| std::fs::read(path).ok());
        let digest = written
            .as_deref()
            .map(crate::sha256_hex)
            .unwrap_or_default();
        let recorded_digest = recorded.session.clone().unwrap_or_default();
        let text = written.and_then(|bytes| String::from_utf8(bytes).ok());
        let shown = crate::printed::shown_difference(
            &recorded_digest,
            recorded.session_text.as_deref(),
            &digest,
            text,
        );
        let Some((expected, actual)) = shown else {
            return Ok(());
        };
        Err(Divergence::output(
            self.cassette(),
            "session file (of the session replaced)",
            &expected,
            &actual,
        ))
    }
}
