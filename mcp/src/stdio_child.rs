//! A stdio server's process, stopped as Pi 1.5.2's MCP client stops one (its stdio transport's
//! `close`): its stdin closed, then SIGTERM to its process group half a second later
//! (`STDIN_CLOSE_GRACE_MS`), then SIGKILL to the group two seconds after that
//! (`DEFAULT_CLOSE_TIMEOUT_MS`); once the server has closed, the group is sent SIGTERM once
//! more so nothing a wrapper (`npx`, `uvx`, a shell) started outlives it. Pi counts a server
//! closed when its process exited and its pipes closed; here, when no process of its group
//! runs any more.
//!
//! The stop is async ([`StdioChild::stop`], awaited where the session ends): it sleeps on the
//! runtime's timer, never on a worker thread, so a session's servers stop together, in one
//! grace, as Pi stops them. A server dropped without that stop is stopped in a task of its own
//! (the same grace) when a runtime runs, else killed at once; a stop cut short (its runtime
//! ended) kills the group: no server outlives its process either way.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// How long a server has after its stdin closed before SIGTERM (Pi's `STDIN_CLOSE_GRACE_MS`).
const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How long after SIGTERM before SIGKILL (Pi's `DEFAULT_CLOSE_TIMEOUT_MS`).
const CLOSE_TIMEOUT: Duration = Duration::from_millis(2_000);
/// How long the stop waits for the group to go after SIGKILL; Pi waits without bound, but a
/// process that left the group cannot be killed through it and must not hold the session.
const AFTER_KILL: Duration = Duration::from_secs(1);
/// How often the stop looks whether the server has gone.
const POLL: Duration = Duration::from_millis(5);

/// The server's stdin as the MCP transport writes it, closable from outside the transport:
/// the stop closes it while rmcp's task may still hold the writer.
#[derive(Clone, Debug)]
pub(crate) struct SharedStdin(Arc<Mutex<Option<ChildStdin>>>);

impl SharedStdin {
    fn close(&self) {
        let mut stdin = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        stdin.take();
    }

    /// Runs `write` on the open stdin; a closed one is a broken pipe.
    fn with<T>(
        &self,
        closed: io::Result<T>,
        write: impl FnOnce(Pin<&mut ChildStdin>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut stdin = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match stdin.as_mut() {
            Some(stdin) => write(Pin::new(stdin)),
            None => Poll::Ready(closed),
        }
    }
}

impl AsyncWrite for SharedStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.with(Err(io::ErrorKind::BrokenPipe.into()), |stdin| {
            stdin.poll_write(cx, buf)
        })
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(Ok(()), |stdin| stdin.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(Ok(()), |stdin| stdin.poll_shutdown(cx))
    }
}

/// A running stdio server, leading its own process group, until it is stopped.
#[derive(Debug)]
pub(crate) struct StdioChild {
    /// Taken by the stop that ends it.
    process: Mutex<Option<Process>>,
}

/// The server's process and what stops it.
#[derive(Debug)]
struct Process {
    child: Child,
    stdin: SharedStdin,
    /// The server's process id, which is its group's id: kept because the child forgets its
    /// id once reaped, while what it started may still run in the group.
    group: Option<u32>,
    /// The stop ran to its end: nothing is left to kill.
    stopped: bool,
}

/// What a started server talks through: its stdout and stdin for the transport, its stderr
/// for the error report.
pub(crate) type Pipes = (ChildStdout, SharedStdin, Option<ChildStderr>);

impl StdioChild {
    /// Starts `command` with piped stdio, in a process group of its own.
    pub(crate) fn spawn(mut command: Command) -> io::Result<(Self, Pipes)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn()?;
        let taken = (child.stdin.take(), child.stdout.take());
        let stderr = child.stderr.take();
        let stdin = SharedStdin(Arc::new(Mutex::new(taken.0)));
        let process = Process {
            group: child.id(),
            child,
            stdin: stdin.clone(),
            stopped: false,
        };
        let stdout = taken
            .1
            .ok_or_else(|| io::Error::other("the server's stdout was not piped"))?;
        let server = StdioChild {
            process: Mutex::new(Some(process)),
        };
        Ok((server, (stdout, stdin, stderr)))
    }

    /// Stops the server as Pi does (see [`Process::stop`]); once stopped, nothing more.
    pub(crate) async fn stop(&self) {
        let process = self
            .process
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(mut process) = process {
            process.stop().await;
        }
    }
}

impl Process {
    /// Pi's stop: stdin closed, SIGTERM after the grace, SIGKILL after the timeout, SIGTERM
    /// to whatever is left. A group seen empty is not signalled again: its id, its leader
    /// reaped, may already name someone else's group.
    async fn stop(&mut self) {
        self.stdin.close();
        let closed_at = Instant::now();
        let gone = self.gone_by(closed_at + STDIN_CLOSE_GRACE).await || {
            self.signal_group(Signal::Term);
            self.gone_by(closed_at + STDIN_CLOSE_GRACE + CLOSE_TIMEOUT)
                .await
                || {
                    self.signal_group(Signal::Kill);
                    self.gone_by(Instant::now() + AFTER_KILL).await
                }
        };
        if !gone {
            self.signal_group(Signal::Term);
        }
        self.stopped = true;
    }

    /// Waits until the server has gone or `deadline` passed; whether it has gone.
    async fn gone_by(&mut self, deadline: Instant) -> bool {
        loop {
            // Reaps the leader once it exited.
            let _ = self.child.try_wait();
            if !self.group_runs() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            tokio::time::sleep(POLL.min(deadline - now)).await;
        }
    }

    /// Whether a process of the server's group still runs (a zombie does not).
    fn group_runs(&self) -> bool {
        self.group.is_some_and(group_runs)
    }

    fn signal_group(&mut self, signal: Signal) {
        #[cfg(unix)]
        if let Some(id) = self.group.and_then(|id| i32::try_from(id).ok()) {
            let signal = match signal {
                Signal::Term => nix::sys::signal::Signal::SIGTERM,
                Signal::Kill => nix::sys::signal::Signal::SIGKILL,
            };
            // Gone already is fine: nothing is left to stop.
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(id), signal);
        }
        #[cfg(not(unix))]
        if matches!(signal, Signal::Kill) {
            let _ = self.child.start_kill();
        }
    }
}

enum Signal {
    Term,
    Kill,
}

impl Drop for StdioChild {
    /// A server nobody stopped: stopped as Pi does in a task of its own when a runtime runs
    /// here (the drop does not wait for it), else killed at once.
    fn drop(&mut self) {
        let process = self
            .process
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(mut process) = process else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { process.stop().await });
        }
    }
}

impl Drop for Process {
    /// The last resort, which never waits: a stop that did not run to its end (never started,
    /// or cut short with its runtime) kills the group.
    fn drop(&mut self) {
        if !self.stopped && self.group_runs() {
            self.stdin.close();
            self.signal_group(Signal::Kill);
            let _ = self.child.try_wait();
        }
    }
}

/// Whether some process of group `group` runs and is not a zombie.
#[cfg(target_os = "linux")]
fn group_runs(group: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold anything, so read after its `)`.
        let mut fields = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace();
        let state = fields.next();
        let group_field = fields.nth(1);
        state != Some("Z") && group_field == Some(group.to_string().as_str())
    })
}

/// Whether some process of group `group` is there (a zombie counts until it is reaped).
#[cfg(all(unix, not(target_os = "linux")))]
fn group_runs(group: u32) -> bool {
    i32::try_from(group)
        .is_ok_and(|id| nix::sys::signal::killpg(nix::unistd::Pid::from_raw(id), None).is_ok())
}

#[cfg(not(unix))]
fn group_runs(_group: u32) -> bool {
    false
}
