//! Replacing the session a run goes on in, as Pi 1.5.2's `AgentSessionRuntime` does it
//! (`newSession`, `switchSession`, `fork`, a command's `ctx.newSession` and the others), for
//! RPC mode and print mode alike: one cassette holds every session of such a run.
//!
//! A front end asks [`Reopen`] for the next session (a live run opens it, a recording records
//! on into the same cassette (`crate::cassette::reopen_recorded`), a replay rebuilds it from the cassette's next part, from recorded
//! data only, never from the files the recorded run opened), then [`replace`] carries the
//! replacement out in Pi's order: the old session hears its end, is dropped and its interpreter
//! says how it was left ([`Leaves`]: a recording writes its `replaced` line, a replay checks
//! that the session used its whole part of the recording and left its file as recorded), the
//! extensions are loaded again and the new session hears its start. What differs between the
//! front ends (how a notification is told and printed, what else waits on the old session) is
//! theirs ([`Replacer`]).

use std::path::{Path, PathBuf};

use pi_cassettes::format::SessionStart;
use pi_cassettes::replay::ReplayedSession;
use pi_cassettes::{Cassette, Divergence, Record, Replay};
use pi_core::agent::hooks::{CommandAsk, HookEvent};
use pi_core::agent_session::SessionInput;
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::Interpreter;
use pi_effects::live::Live;
use pi_effects::session::{plan_fork, ForkPosition, ForkTarget};
use serde_json::Value;

use crate::setup::{Runtime, SessionChoice};
use crate::CliError;

/// An interpreter whose session can be replaced: what it is told of the session that follows,
/// and what it does when its own is left.
pub(crate) trait Leaves: Interpreter + Send + Sized {
    /// What it is told of a session a replacement opened: a recording, what it writes in its
    /// `replaced` line (so that none can be left without one); the others, nothing.
    type Opened;

    /// Its session was replaced (`reason`), leaving its file at `left_file`; the run goes on
    /// in the session `opened` describes.
    fn left(
        self,
        reason: &str,
        left_file: Option<&Path>,
        opened: Self::Opened,
    ) -> Result<(), Divergence>;

    /// Whether the session it runs, just opened by a replacement, is sent the `replaced`
    /// input (see [`replace`]) as its recording says: `None` where the front end decides (a
    /// live run, a recording).
    fn recorded_replaced(&self) -> Option<bool> {
        None
    }
}

impl Leaves for Live {
    type Opened = ();

    fn left(self, _: &str, _: Option<&Path>, (): ()) -> Result<(), Divergence> {
        Ok(())
    }
}

impl<I: Interpreter + Send> Leaves for Record<I> {
    type Opened = Opened;

    fn left(
        self,
        reason: &str,
        left_file: Option<&Path>,
        opened: Opened,
    ) -> Result<(), Divergence> {
        let Opened { config, session } = opened;
        self.replaced(reason, left_file, config, session);
        Ok(())
    }
}

impl Leaves for Replay {
    type Opened = ();

    fn left(self, reason: &str, left_file: Option<&Path>, (): ()) -> Result<(), Divergence> {
        // For the recorded reason, its part used, its file left as recorded.
        Replay::left(&self, reason, left_file)
    }

    fn recorded_replaced(&self) -> Option<bool> {
        Some(self.goes_on_replaced())
    }
}

/// What a run that cannot build another session (a hybrid run) answers a replacement.
pub(crate) const NOT_WHILE_REPLAYING: &str =
    "Replacing the session is not supported while replaying a cassette";

/// What a new session was built from, as a recording's `replaced` line holds it.
pub(crate) struct Opened {
    config: Value,
    session: SessionStart,
}

impl Opened {
    /// The session started from `config` as `session` (see [`crate::cassette::reopen_recorded`]).
    pub(crate) fn new(config: Value, session: SessionStart) -> Self {
        Opened { config, session }
    }
}

/// Why a replacement did not happen: Pi's error (the old session goes on), or the replay
/// parted from its recording.
pub(crate) enum Refused {
    Failed(String),
    Diverged(Divergence),
}

/// A session a replacement opened, with what its interpreter is told of it.
pub(crate) type Reopened<I> = (AgentSession<I>, <I as Leaves>::Opened);

/// Builds the session a replacement asks for: `Ok(None)` when there is none to build (a
/// replay whose recording ends at the replacement).
pub(crate) type Reopen<I> =
    Box<dyn Fn(&Runtime, &SessionChoice, &I) -> Result<Option<Reopened<I>>, Refused> + Send>;

/// A replacement that failed, in Pi's words (without the command line's advice: a
/// replacement never waits for a file another process holds).
pub(crate) fn failed(error: CliError) -> Refused {
    Refused::Failed(match error {
        CliError::SessionHeld(held) => held.to_string(),
        other => other.to_string(),
    })
}

/// How a live run opens the next session.
pub(crate) fn live() -> Reopen<Live> {
    Box::new(|runtime, choice, _| {
        // Pi builds the new session's runtime: extensions the settings name since load.
        runtime.start_late_host();
        let opened = runtime.open(choice).map_err(failed)?;
        Ok(Some((opened, ())))
    })
}

/// How a replay opens the next session: the cassette's next part, its session rebuilt in
/// `dir` from what the recording holds of it. `None` for `dir`: the replay ends at the
/// replacement (one in place, whose later sessions would be written over the user's), saying
/// so when `say` is set.
pub(crate) fn replayed(dir: Option<PathBuf>, say: bool) -> Reopen<Replay> {
    Box::new(move |_, choice, replay: &Replay| {
        let Some(next) = replay.cassette().next_session() else {
            return Ok(None);
        };
        let asked_parent = match choice {
            SessionChoice::New => Some(None),
            SessionChoice::Child(parent) => Some(Some(parent.as_str())),
            _ => None,
        };
        if let Some(parent) = asked_parent {
            ReplayedSession::check_parent(&next, parent).map_err(Refused::Diverged)?;
        }
        let Some(dir) = &dir else {
            if say {
                eprintln!("{}", in_place_ends(replay.cassette()));
            }
            return Ok(None);
        };
        let rebuilt = ReplayedSession::rebuild(next, dir).map_err(Refused::Diverged)?;
        Ok(Some((rebuilt.into_session(|replay| replay), ())))
    })
}

/// What a replay in place says where its recording goes on in a session the recorded run
/// replaced its first with: the later sessions would be written over the user's, so it ends
/// there.
pub(crate) fn in_place_ends(cassette: &Cassette) -> String {
    format!(
        "The recording goes on in the session this command opened; a replay in place ends here (`pi replay {}` replays it whole)",
        cassette.path.display()
    )
}

/// The session a command's `ctx.newSession`, `ctx.fork` or `ctx.switchSession` asks for, and
/// the replacement's reason (`None` for an ask that replaces nothing); a relative path is
/// the working directory's, as Pi resolves it.
pub(crate) fn asked_by_command<I: Interpreter>(
    ask: &CommandAsk,
    session: &AgentSession<I>,
    cwd: &Path,
) -> Option<Result<(SessionChoice, &'static str), String>> {
    Some(match ask {
        CommandAsk::NewSession { parent_session, .. } => {
            let choice = match parent_session {
                Some(parent) => SessionChoice::Child(parent.clone()),
                None => SessionChoice::New,
            };
            Ok((choice, "new"))
        }
        CommandAsk::Fork {
            entry_id, position, ..
        } => {
            let position = match position.as_deref() {
                Some("at") => ForkPosition::At,
                _ => ForkPosition::Before,
            };
            fork_choice(session, entry_id, position).map(|(choice, _)| (choice, "fork"))
        }
        CommandAsk::SwitchSession { session_path, .. } => {
            let path = PathBuf::from(session_path);
            let path = if path.is_absolute() {
                path
            } else {
                cwd.join(path)
            };
            Ok((SessionChoice::Open(path), "resume"))
        }
        CommandAsk::NavigateTree { .. }
        | CommandAsk::Reload
        | CommandAsk::SendUserMessage { .. }
        | CommandAsk::SendMessage { .. }
        | CommandAsk::SetupSession { .. } => return None,
    })
}

/// Pi's `AgentSessionRuntime.fork` of `session` at `entry_id`: the session to open, and the
/// text of the user message forked before, if any (or Pi's refusal). A session kept in memory
/// forks in memory.
pub(crate) fn fork_choice<I: Interpreter>(
    session: &AgentSession<I>,
    entry_id: &str,
    position: ForkPosition,
) -> Result<(SessionChoice, Option<String>), String> {
    let tree = session.machine().tree();
    let plan = plan_fork(tree, session.file(), session.is_saved(), entry_id, position)
        .map_err(str::to_owned)?;
    let choice = match plan.target {
        ForkTarget::New { parent: Some(file) } => SessionChoice::Child(file),
        ForkTarget::New { parent: None } => SessionChoice::InMemory,
        ForkTarget::Branch { from, leaf } => SessionChoice::Branch { from, leaf },
        ForkTarget::BranchInMemory { leaf } => SessionChoice::BranchInMemory {
            tree: Box::new(tree.clone()),
            leaf,
        },
    };
    Ok((choice, plan.text))
}

/// A front end whose session a replacement replaces: how it tells its session one of the
/// session's own notifications (and prints what follows), and what it does besides.
pub(crate) trait Replacer {
    type Io: Leaves;
    /// Why the front end stops (a replay that parted from its recording among its reasons).
    type Stop;

    fn runtime(&self) -> &Runtime;

    /// The session the run goes on in.
    fn session(&mut self) -> &mut AgentSession<Self::Io>;

    /// The runtime and the session at once (to load the extensions again for the session).
    fn runtime_and_session(&mut self) -> (&Runtime, &mut AgentSession<Self::Io>);

    /// Feeds `input` and drives the session until it is idle; every event printed when
    /// `print_all`, else only the handlers' errors.
    async fn tell(&mut self, input: SessionInput, print_all: bool) -> Result<(), Self::Stop>;

    /// The stop of a replay that parted from its recording.
    fn diverged(divergence: Divergence) -> Self::Stop;

    /// Says `error` on stderr, after what the front end printed.
    fn say(&mut self, error: &dyn std::fmt::Display);

    /// The old session is gone: what waited on it is answered.
    fn left_old(&mut self) {}

    /// The extensions were loaded again for the new session, the host started for them if the
    /// run had none: what the front end gives a host (RPC mode's UI) it gives it now.
    fn extensions_loaded(&mut self) {}
}

/// Replaces `front`'s session with `opened`: tells the old one's extensions it ends (`reason`,
/// the new file; its run aborted first, Pi's `teardownCurrent`), drops it (its interpreter
/// says how it was left), loads the extensions again and tells the new one's they start, once
/// for each of `binds` (`true`: what that bind's handlers do is printed, Pi's printer
/// subscribed before it), the first telling with what the new load registered (and the
/// resources read again), which the session takes before they hear it.
pub(crate) async fn replace<R: Replacer>(
    front: &mut R,
    (session, opened): Reopened<R::Io>,
    reason: &str,
    binds: &[bool],
) -> Result<(), R::Stop> {
    let previous = front.session().file().map(|f| f.display().to_string());
    // Building the new session pointed the extensions' session manager at its file; the
    // old session's handlers still read the old one.
    let old_file = front.session().file().map(Path::to_path_buf);
    front.runtime().mirror_for_extensions(old_file.as_deref());
    if front.session().machine().hears(HookEvent::SessionShutdown) {
        if front.session().machine().is_busy() {
            front.tell(SessionInput::Abort, true).await?;
        }
        let leave = SessionInput::Leave {
            reason: reason.to_owned(),
            target_session_file: session.file().map(|f| f.display().to_string()),
        };
        front.tell(leave, true).await?;
    }
    front.runtime().mirror_for_extensions(session.file());
    // The old session is gone (what it started with it) before its interpreter says how
    // it was left: a recording's `replaced` line, a replay's check of its part.
    let old = std::mem::replace(front.session(), session);
    let left_file = old.written_file().map(Path::to_path_buf);
    old.into_interpreter()
        .left(reason, left_file.as_deref(), opened)
        .map_err(R::diverged)?;
    front.left_old();
    // Pi builds the new session's runtime again: the extensions are loaded again, and what
    // they register (with the resources read again) is the new session's.
    let (runtime, session) = front.runtime_and_session();
    let mut providers = Vec::new();
    let mut loaded = match crate::reload::reload(runtime, session) {
        Ok((SessionInput::Reloaded(Some(mut loaded)), registrations)) => {
            // A new runtime has no tools to add to; the servers the new load registered that
            // nothing connects (`--no-mcp`) are its start's errors, as Pi's new runner's.
            loaded.added_default_tools.clear();
            providers = registrations.map(|r| r.providers).unwrap_or_default();
            Some(loaded)
        }
        Ok(_) => None,
        Err(error) => {
            front.say(&error);
            None
        }
    };
    front.extensions_loaded();
    if let Err(error) = front.runtime().forget_provider_changes() {
        front.say(&error);
    }
    // The new runtime's registry has the providers its extensions registered while loading.
    let (adopted, refused) = front.runtime().adopt_loaded_providers(&providers);
    for error in &refused {
        front.say(error);
    }
    if let Some(loaded) = loaded.as_mut() {
        loaded.providers = adopted;
    }
    // What the new load registered is the new session's though no handler hears its start
    // (Pi's new runtime has only the new load); a replay sends it where its recording has it.
    let mut tell = match front.session().interpreter().recorded_replaced() {
        Some(recorded) => recorded,
        None => loaded.is_some() || front.session().machine().hears_start(),
    };
    for &print_all in binds {
        if !tell {
            return Ok(());
        }
        let start = SessionInput::Replaced {
            reason: reason.to_owned(),
            previous_session_file: previous.clone(),
            loaded: loaded.take(),
        };
        front.tell(start, print_all).await?;
        tell = front.session().machine().hears_start();
    }
    Ok(())
}
