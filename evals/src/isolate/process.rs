//! Running one command in its own process group with a timeout: stdout and stderr share one
//! pipe (so they interleave as written), a thread keeps the output's tail, and the whole group
//! is killed when the command ends or its time is up. The leader is reaped only after the group
//! is killed, so the group id cannot have been reused by then.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::CommandOutcome;

/// How many characters of output an outcome keeps (the last ones).
pub const OUTPUT_TAIL_CHARS: usize = 4_000;

/// Bytes kept while reading: enough for `OUTPUT_TAIL_CHARS` characters of up to 4 bytes, and one
/// character cut in half at the front.
const TAIL_BYTES: usize = OUTPUT_TAIL_CHARS * 4 + 4;

/// How long to wait, once the group is killed, for the output pipe to reach its end. Only a
/// process that left the group (and, under `none`, escaped the kill) can hold it open longer;
/// then the output read so far is returned and the reader thread is left to finish alone.
const DRAIN: Duration = Duration::from_secs(2);

/// Kills and reaps the child's group if the run ends early (an error after the spawn).
struct Group {
    child: Option<Child>,
    pgid: Pid,
}

impl Group {
    fn kill(&self) {
        // ESRCH (the group is already gone) is the only expected failure, and is fine.
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }

    /// Kills the group (while the leader is unreaped, so its id is still ours) and reaps it.
    fn finish(mut self) -> io::Result<std::process::ExitStatus> {
        self.kill();
        match self.child.take() {
            Some(mut child) => child.wait(),
            None => Err(io::Error::other("child already reaped")),
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `cmd` (stdin null) in a new process group until it exits or `timeout` passes, then kills
/// the group and returns the exit code and the output's tail.
pub(crate) fn run_in_group(mut cmd: Command, timeout: Duration) -> io::Result<CommandOutcome> {
    let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let write_err = write_end.try_clone()?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(write_err))
        .process_group(0);
    let spawned = cmd.spawn();
    // The command holds our copies of the pipe's write end: drop them, or the end never comes.
    drop(cmd);
    let child = spawned?;
    let pgid = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);
    let group = Group {
        child: Some(child),
        pgid,
    };

    let tail = Arc::new(Mutex::new(Vec::new()));
    let (done_tx, done_rx) = mpsc::channel();
    let reader_tail = Arc::clone(&tail);
    std::thread::Builder::new()
        .name("pi-evals-output".into())
        .spawn(move || {
            read_tail(File::from(read_end), &reader_tail);
            let _ = done_tx.send(());
        })?;

    let timed_out = wait_until(pgid, Instant::now() + timeout)?;
    let status = group.finish()?;
    let _ = done_rx.recv_timeout(DRAIN);
    let bytes = tail.lock().unwrap_or_else(PoisonError::into_inner).clone();
    Ok(CommandOutcome {
        exit: if timed_out { None } else { status.code() },
        timed_out,
        output: tail_text(&bytes),
    })
}

/// Waits, without reaping it, until the process `pid` exits (`false`) or `deadline` passes
/// (`true`).
fn wait_until(pid: Pid, deadline: Instant) -> io::Result<bool> {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    let mut step = Duration::from_millis(1);
    loop {
        match waitid(Id::Pid(pid), flags) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) => return Ok(false),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(true);
        }
        std::thread::sleep(step.min(deadline - now));
        step = (step * 2).min(Duration::from_millis(20));
    }
}

/// Reads `from` to its end, keeping at least the last `TAIL_BYTES` bytes in `tail`.
fn read_tail(mut from: File, tail: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * TAIL_BYTES {
                    let cut = kept.len() - TAIL_BYTES;
                    kept.drain(..cut);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The last `OUTPUT_TAIL_CHARS` characters of `bytes`, decoded as lossy UTF-8.
pub(crate) fn tail_text(bytes: &[u8]) -> String {
    let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
    let text = String::from_utf8_lossy(bytes);
    let chars = text.chars().count();
    text.chars()
        .skip(chars.saturating_sub(OUTPUT_TAIL_CHARS))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_characters_even_when_cut_mid_character() {
        assert_eq!(tail_text(b"short"), "short");
        let long = "é".repeat(OUTPUT_TAIL_CHARS * 3) + "end";
        let tail = tail_text(long.as_bytes());
        assert_eq!(tail.chars().count(), OUTPUT_TAIL_CHARS);
        assert!(tail.ends_with("éend"));
        assert!(!tail.contains('\u{FFFD}'));
        // Invalid bytes are replaced, not dropped.
        assert_eq!(tail_text(b"a\xffb"), "a\u{FFFD}b");
    }
}
