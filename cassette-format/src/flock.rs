//! An exclusive advisory lock (`flock`) on an open file: how session files and cassettes keep to
//! one writer. The kernel releases it when the file is closed, so a process killed with SIGKILL
//! never leaves a file locked.

use std::fs::File;
use std::io;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// A file locked for as long as this lives.
#[derive(Debug)]
pub struct LockedFile(Flock<File>);

impl LockedFile {
    /// Locks `file` now; `Ok(Err(file))` when another open file holds the lock.
    pub fn try_lock(file: File) -> io::Result<Result<LockedFile, File>> {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => Ok(Ok(LockedFile(locked))),
            Err((file, Errno::EWOULDBLOCK)) => Ok(Err(file)),
            Err((_, errno)) => Err(errno.into()),
        }
    }

    /// Locks `file`, waiting for whoever holds it.
    pub fn lock(mut file: File) -> io::Result<LockedFile> {
        loop {
            match Flock::lock(file, FlockArg::LockExclusive) {
                Ok(locked) => return Ok(LockedFile(locked)),
                Err((again, Errno::EINTR)) => file = again,
                Err((_, errno)) => return Err(errno.into()),
            }
        }
    }

    /// The locked file.
    pub fn file(&self) -> &File {
        &self.0
    }
}
