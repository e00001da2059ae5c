//! An exclusive advisory lock (`flock`) on an open file: how session files and cassettes keep to
//! one writer. The kernel releases it when the file is closed, so a process killed with SIGKILL
//! never leaves a file locked.
//!
//! A claim on something that is not a file of its own (a session file not written yet, an
//! eval's output folder) is a lock on a lock file holding the holder's pid ([`try_claim`]):
//! the pid only names the holder in a message, the lock is the proof, so a lock file a killed
//! process left behind is simply taken over.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::Path;
use std::time::Duration;

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

    /// Writes this process's pid as the file's only content: the holder a refused claimant
    /// names.
    pub fn write_pid(&self) -> io::Result<()> {
        let mut file: &File = &self.0;
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{}", std::process::id())
    }
}

/// A lock file another process holds.
#[derive(Debug)]
pub struct HeldBy {
    /// The lock file, open: [`LockedFile::lock`] waits for it.
    pub file: File,
    /// The pid its holder wrote, `None` when it holds none.
    pub pid: Option<u32>,
}

/// The holder of a lock file as a refusal names it: `process <pid>`, or `another process`.
pub fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_owned(),
    }
}

/// Opens the lock file `path` (created if missing, its content kept) and locks it now; or,
/// when another process holds it, the open file and the holder's pid. The caller writes its
/// pid ([`LockedFile::write_pid`]) once the claim is its own.
pub fn try_claim(path: &Path) -> io::Result<Result<LockedFile, HeldBy>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    Ok(LockedFile::try_lock(file)?.map_err(|file| HeldBy {
        file,
        pid: holder_pid(path),
    }))
}

/// The pid a holder wrote in its lock file. A holder writes it just after locking, so an empty
/// file is read again a few times.
fn holder_pid(path: &Path) -> Option<u32> {
    for _ in 0..20 {
        let mut text = String::new();
        let read = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
        if read.is_ok() {
            if let Ok(pid) = text.trim().parse() {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}
