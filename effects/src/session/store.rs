//! A session bound to its file (Pi's `SessionManager` with persistence).
//!
//! The tree in `pi-core` decides when the file must be written (nothing before the first
//! assistant message, then everything, then each new entry); the store writes exactly the lines
//! not yet on disk. Nothing already on disk is rewritten, except by a migration of an old file,
//! which first keeps a copy of the original beside it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use pi_core::session::file::{line, parse_session, whole_file, SessionFileError};

use super::lock::{LockError, SessionLock};
use super::read::{read_session, ReadError};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::{Persist, SessionError, SessionTree};
use serde_json::Value;

use super::paths::file_name;

/// Why a session could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    File {
        path: PathBuf,
        source: SessionFileError,
    },
    #[error("Cannot fork: source session file is empty or invalid: {0}")]
    ForkSourceInvalid(String),
    /// A file with content but no session header, refused untouched (Pi 1.5.2's text).
    #[error("Session file is not a valid pi session: {}", .0.display())]
    NotASession(PathBuf),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Lock(#[from] LockError),
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A session and where it is kept.
#[derive(Debug)]
pub struct SessionStore {
    tree: SessionTree,
    /// `None` for an in-memory session (`--no-session`).
    file: Option<PathBuf>,
    dir: PathBuf,
    ids: IdGenerator,
    /// Whether the header line is in the file.
    header_on_disk: bool,
    /// How many entries (in order) are in the file.
    entries_on_disk: usize,
    /// The file ends without a newline (a torn last line): the next write starts a new line so
    /// the torn text stays on its own line instead of swallowing the new entry.
    torn_tail: bool,
    warnings: Vec<String>,
    /// The claim on the file (see [`SessionStore::holding`]).
    lock: Option<SessionLock>,
}

impl SessionStore {
    /// A new session in `dir`; its file appears with the first user or assistant message.
    pub fn create(cwd: &str, dir: &Path, now: u64, ids: IdGenerator) -> Result<Self, StoreError> {
        SessionStore::create_child(cwd, dir, now, ids, None)
    }

    /// A new session whose header names the session it came from (`parentSession`), as Pi's
    /// `newSession({parentSession})` and a fork at the first message create it.
    pub fn create_child(
        cwd: &str,
        dir: &Path,
        now: u64,
        mut ids: IdGenerator,
        parent_session: Option<String>,
    ) -> Result<Self, StoreError> {
        fs::create_dir_all(dir).map_err(io_error(dir))?;
        let tree = SessionTree::new(cwd, now, &mut ids, parent_session);
        let file = dir.join(file_name(tree.header()));
        Ok(SessionStore::with_tree(
            tree,
            Some(file),
            dir.to_path_buf(),
            ids,
            false,
            0,
        ))
    }

    /// This new session with `id` instead of the generated one (Pi 1.5's `--session-id`): the
    /// header and, for a session with a file, the file's name carry it.
    pub fn with_session_id(mut self, id: &str) -> Self {
        self.tree.set_session_id(id);
        if self.file.is_some() {
            self.file = Some(self.dir.join(file_name(self.tree.header())));
        }
        self
    }

    /// Appends the session's display name (`--name`), written with the session's next lines.
    pub fn append_session_info(&mut self, name: &str, now: u64) {
        self.tree.append_session_info(name, now, &mut self.ids);
    }

    /// A session that is never written (`--no-session`).
    pub fn in_memory(cwd: &str, now: u64, ids: IdGenerator) -> Self {
        SessionStore::in_memory_child(cwd, now, ids, None)
    }

    /// A session never written whose header names the session it came from.
    pub fn in_memory_child(
        cwd: &str,
        now: u64,
        mut ids: IdGenerator,
        parent_session: Option<String>,
    ) -> Self {
        let tree = SessionTree::new(cwd, now, &mut ids, parent_session);
        SessionStore::with_tree(tree, None, PathBuf::new(), ids, false, 0)
    }

    /// A session never written holding the path of `source` to `leaf_id` (Pi's
    /// `createBranchedSession` on an in-memory manager: a fork of a session kept in memory).
    pub fn in_memory_branched(
        source: &SessionTree,
        leaf_id: &str,
        now: u64,
        mut ids: IdGenerator,
    ) -> Result<Self, StoreError> {
        let tree = source.branched(leaf_id, now, &mut ids, None)?;
        Ok(SessionStore::with_tree(
            tree,
            None,
            PathBuf::new(),
            ids,
            false,
            0,
        ))
    }

    fn with_tree(
        tree: SessionTree,
        file: Option<PathBuf>,
        dir: PathBuf,
        ids: IdGenerator,
        header_on_disk: bool,
        entries_on_disk: usize,
    ) -> Self {
        SessionStore {
            tree,
            file,
            dir,
            ids,
            header_on_disk,
            entries_on_disk,
            torn_tail: false,
            warnings: Vec::new(),
            lock: None,
        }
    }

    /// Opens `path` (Pi's `SessionManager.open` / `setSessionFile`). The cwd comes from the
    /// header (else `fallback_cwd`, or `cwd_override` when given); the session directory defaults
    /// to the file's folder. A missing file starts a new session at that path. Unparsable lines
    /// are skipped and reported in [`warnings`](Self::warnings). A file with content that is not
    /// a session is refused and left as it is ([`StoreError::NotASession`]), as Pi 1.5.2 refuses
    /// it; an empty one gets a header. An old-version file is migrated and rewritten after a copy is kept
    /// (`<name>.v<version>.bak`).
    pub fn open(
        path: &Path,
        dir: Option<&Path>,
        cwd_override: Option<&str>,
        fallback_cwd: &str,
        now: u64,
        mut ids: IdGenerator,
    ) -> Result<Self, StoreError> {
        let dir = dir
            .map(Path::to_path_buf)
            .unwrap_or_else(|| path.parent().map_or_else(PathBuf::new, Path::to_path_buf));
        let cwd = |header_cwd: Option<&str>| {
            cwd_override
                .or(header_cwd)
                .unwrap_or(fallback_cwd)
                .to_owned()
        };
        let (parsed, original) = match read_session(path, &mut ids) {
            Ok(read) => read,
            Err(ReadError::Io(error)) if error.kind() == io::ErrorKind::NotFound => {
                let tree = SessionTree::new(&cwd(None), now, &mut ids, None);
                return Ok(SessionStore::with_tree(
                    tree,
                    Some(path.to_path_buf()),
                    dir,
                    ids,
                    false,
                    0,
                ));
            }
            Err(ReadError::Io(error)) => return Err(io_error(path)(error)),
            Err(ReadError::NotASession) => {
                let empty = fs::metadata(path).map_err(io_error(path))?.len() == 0;
                if !empty {
                    return Err(StoreError::NotASession(path.to_path_buf()));
                }
                let tree = SessionTree::new(&cwd(None), now, &mut ids, None);
                let mut store =
                    SessionStore::with_tree(tree, Some(path.to_path_buf()), dir, ids, false, 0);
                store.write_header_now()?;
                return Ok(store);
            }
        };
        let mut warnings: Vec<String> = parsed
            .problems
            .iter()
            .map(|p| format!("{}:{}: {}", path.display(), p.line, p.message))
            .collect();
        let torn_tail = original.is_none() && !ends_with_newline(path);
        if let Some(text) = &original {
            let version =
                serde_json::from_str::<Value>(text.trim_start().lines().next().unwrap_or(""))
                    .ok()
                    .and_then(|h| h.get("version").and_then(Value::as_u64))
                    .unwrap_or(1);
            let backup = sibling(path, &format!(".v{version}.bak"));
            fs::copy(path, &backup).map_err(io_error(path))?;
            fs::write(path, whole_file(&parsed.header, &parsed.entries)).map_err(io_error(path))?;
            warnings.push(format!(
                "{}: migrated to version 3; the original is {}",
                path.display(),
                backup.display()
            ));
        }
        let mut header = parsed.header;
        if let Some(cwd) = cwd_override {
            header.cwd = cwd.to_owned();
        }
        let count = parsed.entries.len();
        let tree = SessionTree::from_entries(header, parsed.entries, true);
        let mut store =
            SessionStore::with_tree(tree, Some(path.to_path_buf()), dir, ids, true, count);
        store.torn_tail = torn_tail;
        store.warnings = warnings;
        Ok(store)
    }

    /// A copy of `source` as a new session for `target_cwd` in `dir`, pointing back at its source,
    /// with the session id `id` when given (Pi 1.5's `--fork` with `--session-id`).
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        dir: &Path,
        now: u64,
        mut ids: IdGenerator,
        id: Option<&str>,
    ) -> Result<Self, StoreError> {
        let text = read_text(source)
            .map_err(|_| StoreError::ForkSourceInvalid(source.display().to_string()))?;
        let parsed = parse_session(&text, &mut ids)
            .map_err(|_| StoreError::ForkSourceInvalid(source.display().to_string()))?;
        fs::create_dir_all(dir).map_err(io_error(dir))?;
        let mut fresh = SessionTree::new(
            target_cwd,
            now,
            &mut ids,
            Some(source.display().to_string()),
        );
        if let Some(id) = id {
            fresh.set_session_id(id);
        }
        let path = dir.join(file_name(fresh.header()));
        fs::write(&path, whole_file(fresh.header(), &parsed.entries)).map_err(io_error(&path))?;
        SessionStore::open(&path, Some(dir), None, target_cwd, now, ids)
    }

    /// A session holding what `text` (a session file's text) holds, none of it written yet:
    /// at `file` once it has something to write (as a branch is kept until then), or never
    /// (`None`). A replay rebuilds with it a session a replacement started with entries
    /// (Pi's `createBranchedSession` before the first message, or of a session in memory).
    /// `text` is what [`Self::unwritten_text`] gave: one that is not exactly that (a line that
    /// does not read, or one written otherwise) is refused, never read leniently as a user's
    /// file is.
    pub fn unwritten(
        text: &str,
        file: Option<PathBuf>,
        dir: &Path,
        mut ids: IdGenerator,
    ) -> Result<Self, String> {
        let parsed = parse_session(text, &mut ids).map_err(|e| e.to_string())?;
        if whole_file(&parsed.header, &parsed.entries) != text {
            let why = parsed.problems.first().map_or_else(
                || "a line is not as a session's entries are written".to_owned(),
                |problem| format!("line {}: {}", problem.line, problem.message),
            );
            return Err(format!("not a session's start as it was written ({why})"));
        }
        let tree = SessionTree::from_entries(parsed.header, parsed.entries, false);
        Ok(SessionStore::with_tree(
            tree,
            file,
            dir.to_path_buf(),
            ids,
            false,
            0,
        ))
    }

    /// What the session holds that is not on disk yet, as its file will start, when nothing
    /// of it is written and it holds entries (a branch kept until it has a message to write,
    /// a session in memory) or a header that names its parent (a new session a replacement
    /// made a child of another), which a new session drawn afresh would not.
    pub fn unwritten_text(&self) -> Option<String> {
        let entries = self.tree.entries();
        let parented = self.tree.header().parent_session.is_some();
        (!self.header_on_disk && (!entries.is_empty() || parented))
            .then(|| whole_file(self.tree.header(), entries))
    }

    /// The store keeping `lock`, the claim on its file (taken before the file was read, so no
    /// other writer's half-written run is loaded), for as long as the store, or the
    /// [`SessionFile`] it is split into, lives. A branched session the store continues in is
    /// claimed in turn.
    pub fn holding(mut self, lock: SessionLock) -> Self {
        self.lock = Some(lock);
        self
    }

    /// The state of the store's id generator (see [`IdGenerator::state`]).
    pub fn id_state(&self) -> u64 {
        self.ids.state()
    }

    /// The store with its id generator at `state`: a replay continues from the recorded state.
    pub fn with_id_state(mut self, state: u64) -> Self {
        self.ids = IdGenerator::new(state);
        self
    }

    /// The session.
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// The session file (`None` in memory). It may not exist yet.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The directory new sessions go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What went wrong while reading, line by line (skipped lines, kept raw lines, migrations).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// What to tell the user about a file whose last line is torn (it ends mid-line, as a
    /// crash during a write leaves it), if it is: the one thing opening a file reports that Pi
    /// keeps quiet about (its other warnings, skipped lines and migrations, Pi does not print).
    pub fn torn_report(&self) -> Option<String> {
        let file = self.file.as_ref().filter(|_| self.torn_tail)?;
        Some(format!(
            "{}: the last line is torn (the file ends mid-line, as a crash during a write leaves it); it is kept as it is and the next entry starts on a new line",
            file.display()
        ))
    }

    fn write_header_now(&mut self) -> Result<(), StoreError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        fs::write(file, line(self.tree.header())).map_err(io_error(file))?;
        self.header_on_disk = true;
        self.tree.mark_flushed();
        Ok(())
    }

    /// Writes what the tree's decision asks for: the lines not yet on disk.
    fn persist(&mut self, decision: Persist) -> Result<(), StoreError> {
        if decision == Persist::Nothing {
            return Ok(());
        }
        SessionWriter {
            file: self.file.as_deref(),
            header_on_disk: &mut self.header_on_disk,
            entries_on_disk: &mut self.entries_on_disk,
            torn_tail: &mut self.torn_tail,
            held: None,
        }
        .flush(&self.tree)
    }

    /// Splits the store into the session (for a session machine to own and change) and what
    /// writes it; [`SessionFile::flush`] then writes the changes the machine asks to persist.
    pub fn into_parts(self) -> (SessionTree, IdGenerator, SessionFile) {
        let file = SessionFile {
            file: self.file,
            header_on_disk: self.header_on_disk,
            entries_on_disk: self.entries_on_disk,
            torn_tail: self.torn_tail,
            held: None,
            hold: false,
            _lock: self.lock,
        };
        (self.tree, self.ids, file)
    }

    /// Moves the leaf.
    pub fn branch(&mut self, id: &str) -> Result<(), StoreError> {
        Ok(self.tree.branch(id)?)
    }

    /// Moves the leaf before the first entry.
    pub fn reset_leaf(&mut self) {
        self.tree.reset_leaf();
    }

    /// Moves the leaf and attaches a branch summary.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
        now: u64,
    ) -> Result<String, StoreError> {
        let (id, decision) = self.tree.branch_with_summary(
            from,
            summary,
            details,
            None,
            from_hook,
            now,
            &mut self.ids,
        )?;
        self.persist(decision)?;
        Ok(id)
    }

    /// Continues in a new session holding the path to `leaf_id` (Pi's `createBranchedSession`);
    /// returns the new file, written now if the path has an assistant message.
    pub fn create_branched_session(
        &mut self,
        leaf_id: &str,
        now: u64,
    ) -> Result<Option<PathBuf>, StoreError> {
        let parent = self.file.as_ref().map(|f| f.display().to_string());
        let tree = self.tree.branched(leaf_id, now, &mut self.ids, parent)?;
        let file = self
            .file
            .as_ref()
            .map(|_| self.dir.join(file_name(tree.header())));
        if let (Some(_), Some(file)) = (&self.lock, &file) {
            self.lock = Some(SessionLock::acquire(file)?);
        }
        self.tree = tree;
        self.file = file.clone();
        self.header_on_disk = false;
        self.entries_on_disk = 0;
        if self.tree.has_conversation() {
            self.persist(Persist::All)?;
        }
        Ok(file)
    }
}

/// Whether the file's last byte is a newline (an empty file counts as ending cleanly).
fn ends_with_newline(path: &Path) -> bool {
    let Ok(mut file) = fs::File::open(path) else {
        return true;
    };
    let Ok(len) = file.seek(SeekFrom::End(0)) else {
        return true;
    };
    if len == 0 {
        return true;
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::End(-1)).is_ok() && file.read_exact(&mut last).is_ok() && last[0] == b'\n'
}

fn read_text(path: &Path) -> io::Result<String> {
    let mut bytes = Vec::new();
    fs::File::open(path)?.read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Whether the first line (within the first 512 bytes) is a session header with a string id.
fn is_session_file(path: &Path) -> bool {
    let mut buf = [0u8; 512];
    let Ok(n) = fs::File::open(path).and_then(|mut f| f.read(&mut buf)) else {
        return false;
    };
    let text = String::from_utf8_lossy(&buf[..n]);
    let first = text.split('\n').next().unwrap_or("");
    serde_json::from_str::<Value>(first).is_ok_and(|h| {
        h.get("type").and_then(Value::as_str) == Some("session")
            && h.get("id").is_some_and(Value::is_string)
    })
}

/// The most recently modified valid session file of `dir` (the one `--continue` opens); of files
/// modified at the same time, the one whose name sorts last (names start with their creation
/// time), whatever order the directory is read in. Pi takes whichever its unsorted read lists
/// first.
pub fn most_recent_session(dir: &Path) -> Option<PathBuf> {
    let entries = fs::read_dir(dir).ok()?;
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && is_session_file(p))
        .filter_map(|p| {
            fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()
                .map(|t| (t, p))
        })
        .max()
        .map(|(_, p)| p)
}

/// Where a session owned elsewhere is written, and how much of it already is.
#[derive(Debug)]
pub struct SessionFile {
    file: Option<PathBuf>,
    header_on_disk: bool,
    entries_on_disk: usize,
    torn_tail: bool,
    /// The open file, when it is held between appends.
    held: Option<Held>,
    hold: bool,
    /// The claim on the file, released when this is dropped.
    _lock: Option<SessionLock>,
}

/// A session file kept open, and its length as far as this process wrote it.
#[derive(Debug)]
struct Held {
    file: File,
    length: u64,
}

impl SessionFile {
    /// The session file (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Keeps the file open between appends instead of opening it for each, as Pi's
    /// `appendFileSync` does. Only for a file nothing else touches while the session runs (a
    /// replay's scratch copy): a held file removed meanwhile is not created again.
    pub fn held_open(mut self) -> Self {
        self.hold = true;
        self
    }

    /// Appends the lines of `tree` not yet on disk. Call it when an append's decision was not
    /// [`Persist::Nothing`]; lines already written are never rewritten.
    pub fn flush(&mut self, tree: &SessionTree) -> Result<(), StoreError> {
        SessionWriter {
            file: self.file.as_deref(),
            header_on_disk: &mut self.header_on_disk,
            entries_on_disk: &mut self.entries_on_disk,
            torn_tail: &mut self.torn_tail,
            held: self.hold.then_some(&mut self.held),
        }
        .flush(tree)
    }
}

/// The append-only write shared by the store and [`SessionFile`].
struct SessionWriter<'a> {
    file: Option<&'a Path>,
    header_on_disk: &'a mut bool,
    entries_on_disk: &'a mut usize,
    torn_tail: &'a mut bool,
    /// Where a file held open between appends is kept; `None`: opened for each append.
    held: Option<&'a mut Option<Held>>,
}

impl SessionWriter<'_> {
    fn flush(mut self, tree: &SessionTree) -> Result<(), StoreError> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let entries = tree.entries();
        if *self.header_on_disk && *self.entries_on_disk >= entries.len() {
            return Ok(());
        }
        let mut text = String::new();
        if *self.torn_tail {
            text.push('\n');
        }
        if !*self.header_on_disk {
            text.push_str(&line(tree.header()));
        }
        for entry in entries.get(*self.entries_on_disk..).unwrap_or_default() {
            text.push_str(&line(entry));
        }
        let open = || -> Result<Held, StoreError> {
            let file_handle = OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
                .map_err(io_error(file))?;
            let length = file_handle.metadata().map_err(io_error(file))?.len();
            Ok(Held {
                file: file_handle,
                length,
            })
        };
        let mut out = match self.held.as_mut().and_then(|held| held.take()) {
            Some(held) => held,
            None => open()?,
        };
        if let Err(error) = out.file.write_all(text.as_bytes()) {
            // Take back a partial write, so the next flush neither glues its first line onto a
            // torn one nor writes entries twice; if that fails too, remember the torn tail.
            if out.file.set_len(out.length).is_err() {
                *self.torn_tail = !ends_with_newline(file);
            }
            return Err(io_error(file)(error));
        }
        out.length += text.len() as u64;
        if let Some(held) = self.held {
            *held = Some(out);
        }
        *self.torn_tail = false;
        *self.header_on_disk = true;
        *self.entries_on_disk = entries.len();
        Ok(())
    }
}
