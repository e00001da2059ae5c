//! Loading a cassette for a replay: the format's checked reader (UTF-8, size, JSON, fields,
//! order: [`pi_cassette_format::read`]), then what the lines hold of the harness read into its
//! types — the run's configuration, the models, the imported session's ids, every recorded input
//! and call's options — so that a value this build cannot read makes the cassette unusable
//! before anything runs, with an error naming the line and the field.

use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::sync::Arc;

use pi_core::model::{Model, ThinkingLevel};
use pi_core::session::ids::{IdGenerator, Stamp};
use pi_effects::run_config::RunConfig;
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;

pub use pi_cassette_format::read::{parse_line, LoadError, LoadErrorKind, MAX_LINE_BYTES};

use crate::convert::{from_json, from_name, session_input, Unconvertible};
use crate::format::{Line, SessionKind, SessionStart};

/// A cassette in memory, checked, with what its header holds of the harness in the harness's
/// types. Everything of the format ([`pi_cassette_format::CheckedCassette`]: path, header, lines) is
/// reached through it.
#[derive(Clone, Debug)]
pub struct Cassette {
    format: pi_cassette_format::CheckedCassette,
    /// What the run was built from.
    pub config: RunConfig,
    /// The models the run could switch to, when the header names them.
    pub models: Option<Vec<Model>>,
    /// The `--models` scope as the run resolved it.
    pub scoped_models: Vec<(Model, Option<ThinkingLevel>)>,
    /// For an imported cassette: the ids and times its session file holds.
    pub imported: Option<ImportedIds>,
    /// The session the run went on in when it replaced this one, with the rest of the run
    /// (see [`pi_cassette_format::CheckedCassette::sessions`]).
    next: Option<Arc<Cassette>>,
}

impl Deref for Cassette {
    type Target = pi_cassette_format::CheckedCassette;

    fn deref(&self) -> &Self::Target {
        &self.format
    }
}

impl DerefMut for Cassette {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.format
    }
}

impl Cassette {
    /// Reads and checks the cassette at `path`; one made with another Pi edition than
    /// [`crate::PI_EDITION`] is refused ([`LoadErrorKind::OtherEdition`]).
    pub fn load(path: &Path) -> Result<Cassette, LoadError> {
        Cassette::from_format(pi_cassette_format::CheckedCassette::load(path)?)
    }

    /// Checks a cassette's bytes (`path` names it in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Cassette, LoadError> {
        Cassette::from_format(pi_cassette_format::CheckedCassette::parse(path, bytes)?)
    }

    /// A cassette the format's reader checked, read into the harness's types: the header, and
    /// every input and call's options (a replay reads them again as it reaches them). A run
    /// that replaced its session is its first session, the others reached through
    /// [`next_session`](Self::next_session).
    pub fn from_format(format: pi_cassette_format::CheckedCassette) -> Result<Cassette, LoadError> {
        let mut next = None;
        let mut sessions = format.sessions();
        let first = sessions.remove(0);
        for session in sessions.into_iter().rev() {
            next = Some(Arc::new(Cassette::one_session(session, next)?));
        }
        Cassette::one_session(first, next)
    }

    /// The session the run went on in when it replaced this one's, if it did.
    pub fn next_session(&self) -> Option<Arc<Cassette>> {
        self.next.clone()
    }

    /// One session's cassette read into the harness's types; `next`: the rest of the run.
    fn one_session(
        format: pi_cassette_format::CheckedCassette,
        next: Option<Arc<Cassette>>,
    ) -> Result<Cassette, LoadError> {
        let error = |line: usize, kind: &str, e: Unconvertible| LoadError {
            path: format.path.clone(),
            line: Some(line),
            kind: LoadErrorKind::Field(format!("`{kind}` line: {e}")),
        };
        let header = &format.header;
        if header.pi != crate::PI_EDITION {
            return Err(LoadError {
                path: format.path.clone(),
                line: Some(1),
                kind: LoadErrorKind::OtherEdition {
                    recorded: header.pi.clone(),
                    build: crate::PI_EDITION.to_owned(),
                    rerecord: format.path.clone(),
                },
            });
        }
        // A later session's header is its `replaced` line's.
        let header_kind = match format.header_line() {
            1 => "cassette",
            _ => "replaced",
        };
        let at_header = |e| error(format.header_line(), header_kind, e);
        let config = from_json(&header.config, "config").map_err(at_header)?;
        let models = match &header.models {
            Some(models) => Some(
                models
                    .iter()
                    .enumerate()
                    .map(|(i, m)| from_json(m, &format!("models[{i}]")))
                    .collect::<Result<_, _>>()
                    .map_err(at_header)?,
            ),
            None => None,
        };
        let scoped_models = header
            .scoped_models
            .iter()
            .enumerate()
            .map(|(i, scoped)| {
                let model = from_json(&scoped.model, &format!("scopedModels[{i}].model"))?;
                let level = match &scoped.thinking_level {
                    Some(level) => Some(from_name(
                        level,
                        &format!("scopedModels[{i}].thinkingLevel"),
                    )?),
                    None => None,
                };
                Ok((model, level))
            })
            .collect::<Result<_, _>>()
            .map_err(at_header)?;
        let imported = match &header.imported {
            Some(imported) => {
                let session =
                    from_json(&imported.session, "imported.session").map_err(at_header)?;
                let entries = imported
                    .entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| from_json(e, &format!("imported.entries[{i}]")))
                    .collect::<Result<_, _>>()
                    .map_err(at_header)?;
                Some(ImportedIds {
                    session,
                    entries,
                    parent: imported.parent_session.clone(),
                })
            }
            None => None,
        };
        for (number, line) in &format.lines {
            match line {
                Line::Outside { input, .. } => session_input(input)
                    .map(drop)
                    .map_err(|e| error(*number, "outside", e))?,
                Line::Command { input, .. } => session_input(input)
                    .map(drop)
                    .map_err(|e| error(*number, "command", e))?,
                Line::Answer { input, .. } => session_input(input)
                    .map(drop)
                    .map_err(|e| error(*number, "answer", e))?,
                Line::Call { options, .. } => from_json::<CallOptions>(options, "options")
                    .map(drop)
                    .map_err(|e| error(*number, "call", e))?,
                _ => {}
            }
        }
        Ok(Cassette {
            format,
            config,
            models,
            scoped_models,
            imported,
            next,
        })
    }

    /// The format's cassette, for what reads only the format.
    pub fn format(&self) -> &pi_cassette_format::CheckedCassette {
        &self.format
    }

    /// The id generator a replay starts its session with: for an imported cassette, one that
    /// gives back the file's ids and times.
    pub fn id_generator(&self, seed: u64) -> IdGenerator {
        ids(self.imported.as_ref(), seed)
    }

    /// The session an imported cassette's replay names as its parent (forked sessions).
    pub fn parent_session(&self) -> Option<String> {
        self.imported.as_ref()?.parent.clone()
    }

    /// The session the recorded run started in, rebuilt in `dir` for a replay from `config`
    /// (the recorded configuration, or one a replay put in its place): see
    /// [`starting_session`].
    pub fn starting_session(&self, config: &RunConfig, dir: &Path) -> Result<SessionStore, String> {
        let content = self.session_content()?;
        starting_session(
            &self.header.session,
            content.as_deref(),
            self.imported.as_ref(),
            config,
            dir,
            InMemory::Kept,
        )
    }
}

/// What an imported cassette's header says of the session file it came from: the ids and
/// times a replay gives back, and the session it names as its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedIds {
    pub session: Stamp,
    pub entries: Vec<Stamp>,
    pub parent: Option<String>,
}

/// Where a rebuilt session that the recorded run kept in memory (`--no-session`) goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InMemory {
    /// In memory again, as recorded (a replay).
    Kept,
    /// A new file in the directory, so the file can be checked (a chaos run).
    Written,
    /// In memory whatever the recorded run did with it, a new session too (a replay in memory,
    /// which writes no file).
    Always,
}

/// The id generator of a rebuilt session: `imported`'s ids and times given back, or drawn
/// from `seed`.
fn ids(imported: Option<&ImportedIds>, seed: u64) -> IdGenerator {
    match imported {
        Some(ids) => IdGenerator::replaying(seed, ids.session.clone(), ids.entries.clone()),
        None => IdGenerator::new(seed),
    }
}

/// The one way a recorded run's starting session (`start`, with the opened file's `content`)
/// is rebuilt in `dir` for a run built from `config`: kept in memory or written as a new file
/// (`in_memory`), a new file (naming an imported session's parent), or the opened file written
/// again from its content and opened there. A new or in-memory session with `content` (one a
/// replacement started with entries, a branch) holds them, unwritten. The ids are `imported`'s when given, else drawn
/// from the config's seed with the generator's recorded state.
pub fn starting_session(
    start: &SessionStart,
    content: Option<&str>,
    imported: Option<&ImportedIds>,
    config: &RunConfig,
    dir: &Path,
    in_memory: InMemory,
) -> Result<SessionStore, String> {
    let ids = ids(imported, config.seed);
    let (now, cwd) = (config.started_at, config.cwd.as_str());
    let parent = imported.and_then(|i| i.parent.clone());
    let store = match (start.kind, in_memory) {
        (SessionKind::Memory | SessionKind::New, _) if content.is_some() => {
            let file = match (start.kind, in_memory) {
                (SessionKind::New, InMemory::Kept | InMemory::Written) => {
                    Some(dir.join(plain_name(start.file.as_deref())?))
                }
                _ => None,
            };
            if file.is_some() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            let text = content.unwrap_or_default();
            SessionStore::unwritten(text, file, dir, ids)
                .map_err(|e| format!("field `session.content`: {e}"))?
        }
        (SessionKind::Memory, InMemory::Kept) => SessionStore::in_memory(cwd, now, ids),
        (SessionKind::Memory | SessionKind::New, InMemory::Always) => {
            SessionStore::in_memory_child(cwd, now, ids, parent)
        }
        (SessionKind::Memory | SessionKind::New, _) => {
            SessionStore::create_child(cwd, dir, now, ids, parent).map_err(|e| e.to_string())?
        }
        (SessionKind::Open, _) => reopen_session(start.file.as_deref(), content, dir, config, ids)?,
    };
    let store = match (&start.id, start.kind) {
        (Some(id), SessionKind::Memory | SessionKind::New) if content.is_none() => {
            store.with_session_id(id)
        }
        _ => store,
    };
    Ok(match imported {
        // Its ids are the file's, given back in order.
        Some(_) => store,
        None => store.with_id_state(start.id_state),
    })
}

/// A recorded file name that names a file in the replay's own directory, and nothing else.
fn plain_name(file: Option<&str>) -> Result<&str, String> {
    file.filter(|n| !n.contains('/') && !n.contains("..") && !n.is_empty())
        .ok_or_else(|| "field `session.file`: missing or not a plain file name".to_owned())
}

/// The session file a recorded run started in (`open`: resumed, continued or forked), written
/// again as `dir/<file>` from its recorded `content` and opened there, so a replay works on the
/// same file. `file` must be a plain file name: a cassette never says where to write.
fn reopen_session(
    file: Option<&str>,
    content: Option<&str>,
    dir: &Path,
    config: &RunConfig,
    ids: IdGenerator,
) -> Result<SessionStore, String> {
    let name = plain_name(file)?;
    let content = content.ok_or("field `session.content`: missing for an opened session")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, content).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let (cwd, now) = (config.cwd.as_str(), config.started_at);
    SessionStore::open(&path, Some(dir), None, cwd, now, ids).map_err(|e| e.to_string())
}
