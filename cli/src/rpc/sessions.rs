//! A run that goes on across session replacements (`new_session`, `switch_session`, `fork`,
//! `clone`, an extension command's): one cassette holds every session of it. When the RPC
//! front end replaces its session, a recording writes a `replaced` line (how the session left
//! its file, what the next one was built from) and records on into the same cassette; a
//! replay checks that the session replaced used its whole part of the recording and left its
//! file as recorded, and builds the next session from the cassette's next part, as it built
//! the first from the header: from recorded data only, never from the files the recorded run
//! opened.

use std::path::{Path, PathBuf};

use pi_cassettes::format::SessionStart;
use pi_cassettes::replay::ReplayedSession;
use pi_cassettes::{Record, Replay};
use pi_effects::agent_session::AgentSession;
use pi_effects::live::Live;
use serde_json::Value;

use super::commands::Failure;
use super::replace::Stop;
use super::{Ended, Front};
use crate::setup::{Built, Runtime, SessionChoice, Start};
use crate::CliError;

/// What a new session was built from, as a recording's `replaced` line holds it.
pub(super) struct Opened {
    config: Value,
    session: SessionStart,
}

impl Opened {
    fn of(built: &Built) -> Self {
        // A branch kept until it has a message to write, or kept in memory, starts with
        // entries no file holds yet (its `content`).
        let session = crate::cassette::session_start(built);
        Opened {
            config: pi_cassettes::convert::to_json(&built.config),
            session,
        }
    }
}

/// A session a replacing command opened, with what its interpreter is told of it (see
/// [`Front::Opened`]).
pub(super) type Reopened<I> = (AgentSession<I>, <I as Front>::Opened);

/// Builds the session a replacing command asks for: `Ok(None)` when there is none to build (a
/// replay whose recording ends at the replacement).
pub(super) type Reopen<I> =
    Box<dyn Fn(&Runtime, &SessionChoice, &I) -> Result<Option<Reopened<I>>, Stop> + Send>;

/// A replacement that failed, in Pi's words (without the command line's advice: a
/// replacement never waits for a file another process holds).
fn failed(error: CliError) -> Stop {
    Stop::Failed(Failure::Message(match error {
        CliError::SessionHeld(held) => held.to_string(),
        other => other.to_string(),
    }))
}

/// How a live run opens the next session.
pub(super) fn live() -> Reopen<Live> {
    Box::new(|runtime, choice, _| {
        let opened = runtime.open(choice).map_err(failed)?;
        Ok(Some((opened, ())))
    })
}

/// How a recorded run opens the next session: its file's content captured for the
/// `replaced` line, its calls recorded into the same cassette.
pub(super) fn recorded() -> Reopen<Record<Live>> {
    Box::new(|runtime, choice, recording: &Record<Live>| {
        let built = runtime.build(choice, Start::now(), true).map_err(failed)?;
        let opened = Opened::of(&built);
        let session = crate::cassette::recorded_beside(recording, built);
        Ok(Some((session, opened)))
    })
}

/// How a replay opens the next session: the cassette's next part, its session rebuilt in
/// `dir` from what the recording holds of it. `None` for `dir`: the replay ends at the
/// replacement (one in place, whose later sessions would be written over the user's).
pub(super) fn replayed(dir: Option<PathBuf>) -> Reopen<Replay> {
    Box::new(move |_, _, replay: &Replay| {
        let Some(next) = replay.cassette().next_session() else {
            return Ok(None);
        };
        let Some(dir) = &dir else {
            eprintln!("{}", crate::cassette::in_place_ends(replay.cassette()));
            return Ok(None);
        };
        let rebuilt = ReplayedSession::rebuild(next, dir)
            .map_err(|divergence| Stop::Ended(Ended::Diverged(divergence)))?;
        Ok(Some((rebuilt.into_session(|replay| replay), ())))
    })
}

/// A recording's session was replaced: its part of the cassette ends with a `replaced` line.
pub(super) fn record_left<I>(
    recording: Record<I>,
    reason: &str,
    left_file: Option<&Path>,
    opened: Opened,
) {
    let Opened { config, session } = opened;
    recording.replaced(reason, left_file, config, session);
}
