//! Opening and building sessions: the store for a [`SessionChoice`] with the claim on its file,
//! the session's parts before an interpreter is chosen ([`Built`]), what a recording embeds of
//! the session a run starts in, and a session file named on the command line.

use std::path::{Path, PathBuf};

use pi_core::agent_session::SessionMachine;
use pi_core::session::ids::IdGenerator;
use pi_core::tools::paths::resolve_posix;
use pi_effects::agent_session::{AgentSession, CreateError};
use pi_effects::clock::now_ms;
use pi_effects::live::Live;
use pi_effects::run_config::{build_machine, RunConfig};
use pi_effects::session::SessionFile;
use pi_effects::session::{
    list_all_sessions, list_sessions, most_recent_session, LockError, SessionLock, SessionStore,
    StoreError,
};
use pi_effects::tools::SessionVariables;

use super::{Runtime, SessionChoice};
use crate::CliError;

impl Runtime {
    /// The store for `choice`, created at `start`, holding the claim on its file: taken before
    /// an existing file is read, so a second writer is refused (or waits, with
    /// `--wait-for-session`) before it loads anything or writes a byte. A new session's file
    /// (and a fork's, written under a fresh name) is claimed as soon as its name is known.
    pub fn store(&self, choice: &SessionChoice, start: Start) -> Result<SessionStore, CliError> {
        let now = start.at;
        let ids = IdGenerator::new(start.seed);
        let cwd = self.cwd.to_string_lossy();
        // Pi 1.5.2 throws its refusal of a file that is not a session, naming the resolved path,
        // and `main` prints it as `Error: <message>`.
        let session_error = |e: StoreError| match e {
            StoreError::NotASession(path) => {
                let resolved = resolve_posix(&cwd, &path.to_string_lossy());
                let refusal = StoreError::NotASession(PathBuf::from(resolved));
                CliError::Session(format!("Error: {refusal}"))
            }
            other => CliError::Session(other.to_string()),
        };
        let open = |path: &Path, ids| {
            let lock = self.claim(path)?;
            SessionStore::open(path, Some(&self.session_dir), None, &cwd, now, ids)
                .map(|store| store.holding(lock))
                .map_err(session_error)
        };
        let name = self
            .session_name
            .lock()
            .map(|mut name| name.take())
            .unwrap_or_default();
        let named = |mut store: SessionStore| {
            if let Some(name) = &name {
                store.append_session_info(name, now);
            }
            store
        };
        let store = match choice {
            SessionChoice::InMemory => return Ok(named(SessionStore::in_memory(&cwd, now, ids))),
            SessionChoice::InMemoryWithId(id) => {
                let store = SessionStore::in_memory(&cwd, now, ids).with_session_id(id);
                return Ok(named(store));
            }
            SessionChoice::NewWithId(id) => SessionStore::create(&cwd, &self.session_dir, now, ids)
                .map(|store| store.with_session_id(id)),
            SessionChoice::Open(path) => return open(path, ids).map(named),
            SessionChoice::ContinueRecent => match most_recent_session(&self.session_dir) {
                Some(path) => return open(&path, ids).map(named),
                None => SessionStore::create(&cwd, &self.session_dir, now, ids),
            },
            SessionChoice::New => SessionStore::create(&cwd, &self.session_dir, now, ids),
            SessionChoice::Child(parent) => {
                SessionStore::create_child(&cwd, &self.session_dir, now, ids, Some(parent.clone()))
            }
            SessionChoice::Fork { from, id } => {
                SessionStore::fork_from(from, &cwd, &self.session_dir, now, ids, id.as_deref())
            }
            SessionChoice::BranchInMemory { tree, leaf } => {
                SessionStore::in_memory_branched(tree, leaf, now, ids)
            }
            SessionChoice::Branch { from, leaf } => {
                SessionStore::open(from, Some(&self.session_dir), None, &cwd, now, ids).and_then(
                    |mut source| {
                        source.create_branched_session(leaf, now)?;
                        Ok(source)
                    },
                )
            }
        }
        .map_err(session_error)?;
        let store = named(store);
        match store.file().map(Path::to_path_buf) {
            Some(file) => Ok(store.holding(self.claim(&file)?)),
            None => Ok(store),
        }
    }

    /// Claims `file` for this process, waiting for its holder with `--wait-for-session`.
    fn claim(&self, file: &Path) -> Result<SessionLock, CliError> {
        let claimed = if self.wait_for_session {
            SessionLock::acquire_waiting(file, &mut |pid| {
                let holder =
                    pid.map_or_else(|| "another process".to_owned(), |p| format!("process {p}"));
                eprintln!(
                    "Waiting for {holder} to finish with session file {}",
                    file.display()
                );
            })
        } else {
            SessionLock::acquire(file)
        };
        claimed.map_err(|error| match error {
            held @ LockError::Held { .. } => CliError::SessionHeld(held),
            other => CliError::Session(other.to_string()),
        })
    }

    /// Builds a live session for `choice` (see [`Runtime::build`]).
    pub fn open(&self, choice: &SessionChoice) -> Result<AgentSession, CliError> {
        let built = self.build(choice, Start::now(), false)?;
        Ok(AgentSession::from_parts(
            built.machine,
            built.live,
            built.file,
        ))
    }

    /// The parts of the session for `choice`, started at `start`, with the model and thinking
    /// level Pi's `createAgentSession` would choose (see [`Runtime::choose`]): its
    /// configuration, machine, file, the session as it was before the run, and the Live
    /// interpreter (which a recording wraps).
    pub fn build(
        &self,
        choice: &SessionChoice,
        start: Start,
        capture: bool,
    ) -> Result<Built, CliError> {
        let store = self.store(choice, start)?;
        if let Some(message) = self.missing_session_cwd(&store) {
            return Err(CliError::Session(message));
        }
        if let Some(torn) = store.torn_report() {
            eprintln!("Warning: {torn}");
        }
        self.mirror_for_extensions(store.file());
        let (model, level) = self.choose(&store);
        let mut options = self.session_options(model, level);
        options.seed = Some(start.seed);
        if let Some(tools) = &mut options.tool_env {
            tools.session_variables = Some(SessionVariables {
                id: store.tree().header().id.clone(),
                file: store.file().map(Path::to_path_buf),
                ..SessionVariables::default()
            });
        }
        let session_error = |e: CreateError| CliError::Session(e.to_string());
        let config = options.run_config(start.at).map_err(session_error)?;
        let live = options
            .live()
            .map_err(session_error)?
            .for_run(config.seed, config.started_at);
        let initial = InitialSession::of(&store, capture).map_err(|source| CliError::Io {
            what: "the session file".into(),
            source,
        })?;
        let id_state = store.id_state();
        let unwritten = capture.then(|| store.unwritten_text()).flatten();
        let given_id = match choice {
            SessionChoice::NewWithId(id) | SessionChoice::InMemoryWithId(id) => Some(id.clone()),
            _ => None,
        };
        let (machine, file) =
            build_machine(&config, store).map_err(|e| CliError::Session(e.to_string()))?;
        Ok(Built {
            config,
            machine,
            file,
            live,
            initial,
            id_state,
            unwritten,
            given_id,
        })
    }

    /// Pi's refusal of a session file whose stored working directory is gone (outside
    /// interactive mode, which would ask instead): the text it prints, or `None` when the
    /// directory exists or the session has no file.
    fn missing_session_cwd(&self, store: &SessionStore) -> Option<String> {
        let file = store.file()?;
        let session_cwd = &store.tree().header().cwd;
        if session_cwd.is_empty() || Path::new(session_cwd).exists() {
            return None;
        }
        Some(format!(
            "Stored session working directory does not exist: {session_cwd}\nSession file: {}\nCurrent working directory: {}",
            resolve_posix(&self.cwd.to_string_lossy(), &file.to_string_lossy()),
            self.cwd.display()
        ))
    }

    /// A session file named by `--session` / `--fork`: a path, else an id prefix looked up in
    /// this directory's sessions, then in every session.
    pub fn find_session(&self, reference: &str) -> Result<PathBuf, CliError> {
        if reference.contains('/') || reference.ends_with(".jsonl") {
            let path = Path::new(reference);
            return Ok(if path.is_absolute() {
                path.to_path_buf()
            } else {
                self.cwd.join(path)
            });
        }
        let here = list_sessions(&self.session_dir);
        let found = here
            .iter()
            .find(|s| s.id.starts_with(reference))
            .map(|s| s.path.clone())
            .or_else(|| {
                list_all_sessions(&self.agent_dir)
                    .into_iter()
                    .find(|s| s.id.starts_with(reference))
                    .map(|s| s.path)
            });
        found.ok_or_else(|| CliError::Usage(format!("No session found matching '{reference}'")))
    }
}

/// The seed of a run's ids, when given (not Pi's).
pub const SEED_ENV: &str = "PI_SEED";

/// When a session starts and the seed of its ids: the one clock reading and the one seed of
/// each session the CLI builds (a recording keeps both; a replay reuses them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub at: u64,
    pub seed: u64,
}

impl Start {
    /// Now, seeded from the time and the process id, so two processes started in the same
    /// millisecond still differ; or from [`SEED_ENV`] when it is set (an eval gives each
    /// trial its own).
    pub fn now() -> Self {
        let at = now_ms();
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(at ^ u64::from(std::process::id()).rotate_left(32));
        Start { at, seed }
    }
}

/// A session's parts, before an interpreter is chosen.
#[derive(Debug)]
pub struct Built {
    pub config: RunConfig,
    pub machine: SessionMachine,
    pub file: SessionFile,
    pub live: Live,
    pub initial: InitialSession,
    /// The id generator's state once the session was opened.
    pub id_state: u64,
    /// When captured for a recording: what the session holds that its file does not yet (a
    /// branch kept until it has a message to write, a session in memory), as the file will
    /// start.
    pub unwritten: Option<String>,
    /// The id a new session was given (`--session-id`), which a recording keeps for its replay.
    pub given_id: Option<String>,
}

/// The session a run starts in, as it is on disk before the run: what a recording embeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitialSession {
    /// No file.
    InMemory,
    /// A file not written yet.
    New { file: PathBuf },
    /// A file that exists (opened, continued or forked), with its content when it was
    /// captured for a recording.
    Existing {
        file: PathBuf,
        content: Option<Vec<u8>>,
    },
}

impl InitialSession {
    /// The session of `store`; its content is read only when `capture` (a recording embeds
    /// it; an ordinary start does not read a large session twice).
    fn of(store: &SessionStore, capture: bool) -> std::io::Result<Self> {
        let Some(file) = store.file() else {
            return Ok(InitialSession::InMemory);
        };
        let file = file.to_path_buf();
        if !file.exists() {
            return Ok(InitialSession::New { file });
        }
        let content = if capture {
            Some(std::fs::read(&file)?)
        } else {
            None
        };
        Ok(InitialSession::Existing { file, content })
    }
}
