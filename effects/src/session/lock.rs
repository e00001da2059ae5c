//! One writer at a time: a process claims a session file before it reads it for writing, and
//! keeps the claim for as long as it may write the file.
//!
//! The claim is an advisory `flock` on a lock file beside the session file, `<file>.lock`,
//! holding the holder's pid. A lock file rather than a lock on the session file itself, because
//! Pi creates the session file lazily (with the first user or assistant message): a new
//! session, or a `--session` path that does not exist yet, has no file to lock, and creating one
//! early would change the file Pi expects. The session file's bytes are never touched.
//!
//! The lock file is removed when the claim ends (a clean exit). A process killed with SIGKILL
//! leaves it behind, but the kernel drops its `flock`, so the next writer takes it over and
//! writes its own pid: the pid is only for the message naming the holder, never the proof. The
//! lock is only advisory: a process that does not take it (Pi itself) is not kept out.
//!
//! A claim is per process: claiming a file this process already holds (an RPC session switched
//! to its own file) shares the claim instead of waiting on itself.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::flock::{holder, try_claim, LockedFile};

/// Why a session file could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the file; `pid` is `None` when its lock file names none.
    #[error("Session file {} is in use by {}", file.display(), holder(*pid))]
    Held { file: PathBuf, pid: Option<u32> },
    #[error("cannot lock session file {}: {source}", file.display())]
    Io { file: PathBuf, source: io::Error },
}

/// A claim on one session file, held until the last clone is dropped.
#[derive(Clone, Debug)]
pub struct SessionLock {
    held: Arc<Held>,
}

/// The locked lock file.
#[derive(Debug)]
struct Held {
    /// The lock file.
    path: PathBuf,
    /// Locked for as long as the claim lives; closing it releases the lock.
    _file: LockedFile,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while still locked: a writer waiting on this file then finds it is no longer
        // the one at the path, and locks the path afresh.
        let _ = fs::remove_file(&self.path);
    }
}

/// The claims this process holds, by lock file.
static HELD: Mutex<Vec<(PathBuf, Weak<Held>)>> = Mutex::new(Vec::new());

impl SessionLock {
    /// Claims `session_file` now, or fails with [`LockError::Held`] naming the holder.
    pub fn acquire(session_file: &Path) -> Result<SessionLock, LockError> {
        claim(session_file, None)
    }

    /// Claims `session_file`, waiting for the holder to finish; `waiting` is told the holder's
    /// pid each time the wait starts.
    pub fn acquire_waiting(
        session_file: &Path,
        waiting: &mut dyn FnMut(Option<u32>),
    ) -> Result<SessionLock, LockError> {
        claim(session_file, Some(waiting))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.held.path
    }
}

fn claim(
    session_file: &Path,
    mut waiting: Option<&mut dyn FnMut(Option<u32>)>,
) -> Result<SessionLock, LockError> {
    let io_error = |source| LockError::Io {
        file: session_file.to_path_buf(),
        source,
    };
    let path = lock_path(session_file).map_err(io_error)?;
    if let Some(held) = held_here(&path) {
        return Ok(SessionLock { held });
    }
    loop {
        let file = match try_claim(&path).map_err(io_error)? {
            Ok(locked) => locked,
            Err(held) => {
                let Some(waiting) = waiting.as_mut() else {
                    return Err(LockError::Held {
                        file: session_file.to_path_buf(),
                        pid: held.pid,
                    });
                };
                waiting(held.pid);
                LockedFile::lock(held.file).map_err(io_error)?
            }
        };
        // The holder we waited for (or one that finished just before) removed the file it
        // locked: lock the file now at the path instead.
        if !is_at(file.file(), &path) {
            continue;
        }
        file.write_pid().map_err(io_error)?;
        let held = Arc::new(Held { path, _file: file });
        let mut registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        registry.retain(|(_, claim)| claim.strong_count() > 0);
        registry.push((held.path.clone(), Arc::downgrade(&held)));
        return Ok(SessionLock { held });
    }
}

/// This process's claim on the lock file `path`, if it holds one.
fn held_here(path: &Path) -> Option<Arc<Held>> {
    let registry = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    registry
        .iter()
        .filter(|(held, _)| held == path)
        .find_map(|(_, claim)| claim.upgrade())
}

/// `<file>.lock` beside the session file, its folder resolved (and created, as a session's
/// folder is), so every spelling of one file's path names one lock file.
fn lock_path(session_file: &Path) -> io::Result<PathBuf> {
    let name = session_file.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
    })?;
    let parent = session_file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let file = match fs::canonicalize(session_file) {
        Ok(real) => real,
        Err(_) => fs::canonicalize(parent)?.join(name),
    };
    let mut lock_name = file.file_name().unwrap_or(name).to_os_string();
    lock_name.push(".lock");
    Ok(file.with_file_name(lock_name))
}

/// Whether `file` is still the file at `path`.
fn is_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_shared_within_the_process_and_its_file_removed_with_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        let first = SessionLock::acquire(&session).unwrap();
        let spelled = dir.path().join(".").join("s.jsonl");
        let second = SessionLock::acquire(&spelled).unwrap();
        assert_eq!(first.path(), second.path());
        let lock = first.path().to_path_buf();
        assert_eq!(
            fs::read_to_string(&lock).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(!session.exists(), "the session file is not created");
        drop(first);
        assert!(lock.exists());
        drop(second);
        assert!(!lock.exists());
    }

    #[test]
    fn a_lock_file_left_behind_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        fs::write(dir.path().join("s.jsonl.lock"), "999999999\n").unwrap();
        let lock = SessionLock::acquire(&session).unwrap();
        assert_eq!(
            fs::read_to_string(lock.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
    }
}
