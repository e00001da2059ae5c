//! One run per `--out` folder: a run claims the folder before it reads or writes anything there,
//! and keeps the claim until its reports are written, so that two runs never overwrite each
//! other's results (nor does a `--resume` finish a run that is still going).
//!
//! The claim is an advisory `flock` on `.pi-eval.lock` in the folder, which holds the holder's
//! pid for the message naming it. The kernel drops the lock of a process that died, even by
//! SIGKILL, so the next run takes the folder over; the pid in the file is never the proof. The
//! file is left in place: removing it while a second run has it open would let a third lock a
//! new file beside the second's.

use std::io;
use std::path::{Path, PathBuf};

use pi_cassette_format::flock::{holder, try_claim, LockedFile};
use thiserror::Error;

/// The lock file's name in the folder.
pub const LOCK_FILE: &str = ".pi-eval.lock";

/// Why an `--out` folder could not be claimed.
#[derive(Debug, Error)]
pub enum OutLockError {
    /// Another run holds the folder; `pid` is `None` when its lock file names none.
    #[error("{} is in use by {}, another pi eval writing its results there: wait for it to end or give another --out", folder.display(), holder(*pid))]
    Held { folder: PathBuf, pid: Option<u32> },
    #[error("cannot lock {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// A claimed `--out` folder, held for as long as this lives.
#[derive(Debug)]
pub struct OutLock {
    _file: LockedFile,
}

impl OutLock {
    /// Creates `folder` if needed and claims it now, or fails naming the holder's pid.
    pub fn acquire(folder: &Path) -> Result<OutLock, OutLockError> {
        let path = folder.join(LOCK_FILE);
        let io_error = |source| OutLockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(folder).map_err(io_error)?;
        match try_claim(&path).map_err(io_error)? {
            Ok(locked) => {
                locked.write_pid().map_err(io_error)?;
                Ok(OutLock { _file: locked })
            }
            Err(held) => Err(OutLockError::Held {
                folder: folder.to_path_buf(),
                pid: held.pid,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_held_folder_is_refused_naming_the_holder_and_free_again_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let held = OutLock::acquire(&out).unwrap();
        let err = OutLock::acquire(&out).unwrap_err();
        assert!(
            matches!(err, OutLockError::Held { pid: Some(pid), .. } if pid == std::process::id()),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains(&format!("process {}", std::process::id())));
        drop(held);
        OutLock::acquire(&out).unwrap();
    }

    #[test]
    fn a_lock_file_nobody_holds_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "999999999\n").unwrap();
        let _held = OutLock::acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text, format!("{}\n", std::process::id()));
    }
}
