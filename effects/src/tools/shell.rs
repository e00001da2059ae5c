//! Running one shell command the way Pi's local bash operations do (`utils/shell.ts`,
//! `utils/child-process.ts`, `createLocalBashOperations`): which shell, its `PATH`, a process
//! group of its own so that abort and timeout kill every descendant, and a wait that does not
//! hang on a background process still holding the output open.
//!
//! stdout and stderr come on two pipes, as in Pi, and each chunk read from either is reported as
//! it arrives, so close writes to both can come back out of write order (Pi's
//! `echo a; echo b >&2; echo c` varies from run to run too). When both pipes have output waiting
//! at once, the one not read last goes first, starting with stdout: the command that wrote
//! stdout first is read as it wrote, and neither pipe can starve the other.

use std::collections::hash_map::RandomState;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use pi_core::json::format_number;
use pi_providers::registry::is_credential_variable;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{sleep, Sleep};
use tokio_util::sync::CancellationToken;

use super::temp_file::create_fresh;
use crate::session::{agent_dir_from, AGENT_DIR_ENV};

/// How long the output may stay open after the shell exited (Pi's `EXIT_STDIO_GRACE_MS`): a
/// background process that inherited it does not keep the command running.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);
/// Node's largest timer (Pi 1.5's `MAX_TIMEOUT_MS`).
const NODE_TIMEOUT_MAX_MS: f64 = 2_147_483_647.0;
/// Bytes read at once, as libuv reads a pipe.
const READ_CHUNK: usize = 64 * 1024;

/// The shell to run commands with: the configured one (which must exist), else `/bin/bash`,
/// else `bash` on `PATH`, else `sh` (Pi's `getShellConfig` on Unix).
fn find_shell(custom: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(custom) = custom.filter(|path| !path.as_os_str().is_empty()) {
        return if custom.exists() {
            Ok(custom.to_path_buf())
        } else {
            Err(format!("Custom shell path not found: {}", custom.display()))
        };
    }
    let bin_bash = Path::new("/bin/bash");
    if bin_bash.exists() {
        return Ok(bin_bash.to_path_buf());
    }
    Ok(bash_on_path().unwrap_or_else(|| PathBuf::from("sh")))
}

/// The first executable `bash` on `PATH` (what `which bash` answers).
fn bash_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("bash"))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// `PATH` for the command: Pi's bin directory (`<agent dir>/bin`) in front unless already there
/// (Pi's `getShellEnv`).
fn shell_path(home: &Path) -> OsString {
    let agent_dir = agent_dir_from(std::env::var(AGENT_DIR_ENV).ok().as_deref(), home);
    let bin_dir = agent_dir.join("bin");
    let current = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&current).any(|entry| entry == bin_dir) {
        return current;
    }
    let mut updated = bin_dir.into_os_string();
    if !current.is_empty() {
        updated.push(":");
        updated.push(&current);
    }
    updated
}

/// Pi 1.5's refusal of a timeout that is not a positive number of seconds.
const INVALID_TIMEOUT: &str = "Invalid timeout: must be a finite number of seconds";

/// A timeout in seconds as Pi 1.5's `resolveTimeoutMs` takes it: none when not given, refused
/// when not positive or past Node's largest timer (which 0.73.1 ran as 1 ms instead).
pub(crate) fn resolve_timeout(seconds: Option<f64>) -> Result<Option<Duration>, String> {
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(INVALID_TIMEOUT.to_owned());
    }
    let millis = seconds * 1000.0;
    if millis > NODE_TIMEOUT_MAX_MS {
        let most = format_number(NODE_TIMEOUT_MAX_MS / 1000.0);
        return Err(format!("Invalid timeout: maximum is {most} seconds"));
    }
    Ok(Some(Duration::from_secs_f64(millis / 1000.0)))
}

/// The `pi-bash-<16 hex>.log` path in `dir` for a command's full output: named by `key` (the
/// run and the tool call's id, see [`output_key`]) when there is one, so that a replay
/// names it as the recorded run did; else random, only unlikely to collide (the file is created
/// with `create_new`), from the standard library's randomly keyed hasher over the time and the
/// process id.
pub(crate) fn full_output_path(dir: &Path, key: Option<u64>) -> PathBuf {
    let name = key.unwrap_or_else(|| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        if let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) {
            hasher.write_u128(now.as_nanos());
        }
        hasher.finish()
    });
    dir.join(format!("pi-bash-{name:016x}.log"))
}

/// The name of a call's full-output file from the run (`ToolEnv::run`) and the tool call's id.
pub(crate) fn output_key(run: Option<u64>, tool_call_id: Option<&str>) -> Option<u64> {
    Some(fnv1a(&[&run?.to_le_bytes(), tool_call_id?.as_bytes()]))
}

/// FNV-1a over `parts`: every build and platform gives the same names.
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts.iter().flat_map(|part| part.iter()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Sends SIGKILL to the process group `pid` leads (Pi's `killProcessTree`); false when that
/// failed, e.g. the group is gone.
pub(crate) fn kill_group(pid: u32) -> bool {
    // Group 0 would mean our own group.
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    killpg(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The shell exited with this code; `None` when its status could not be read.
    Exited(Option<i32>),
    /// A signal (this number) ended the shell.
    Signalled(i32),
    /// The cancellation token fired (it wins over a timeout, as in Pi).
    Aborted,
    /// The timeout passed.
    TimedOut,
}

/// What a running command reports next.
#[derive(Debug)]
pub(crate) enum Event {
    /// Bytes it wrote, to stdout or stderr: one read from one pipe.
    Output(Vec<u8>),
    /// It is over; reported once, then again on every later call.
    Done(End),
}

/// A command started with [`spawn`].
#[derive(Debug)]
pub(crate) struct Running {
    child: Child,
    pid: u32,
    /// stdout and stderr, each until it ends or is abandoned.
    output: [Option<pipe::Receiver>; 2],
    /// Which pipe to try first when both have output waiting.
    first: usize,
    cancel: CancellationToken,
    killed: bool,
    timeout: Option<Pin<Box<Sleep>>>,
    timed_out: bool,
    /// How the shell ended, once it did ([`End::Exited`] or [`End::Signalled`]).
    exit: Option<End>,
    grace: Option<Pin<Box<Sleep>>>,
    end: Option<End>,
    buffer: Vec<u8>,
}

/// Starts `<shell> -c <command>` in `env.cwd` with stdin closed, in a process group of its own,
/// without the credential variables unless `env.pass_credentials`. Failures read like Node's
/// spawn errors (`spawn /bin/bash EACCES`).
fn spawn(
    shell: &Path,
    command: &str,
    env: &super::ToolEnv,
    cancel: CancellationToken,
    timeout: Option<Duration>,
) -> Result<Running, String> {
    let spawn_error = |error: io::Error| spawn_error_text(shell, &error);
    let (stdout, stdout_reader) = pipe::pipe().map_err(spawn_error)?;
    let (stderr, stderr_reader) = pipe::pipe().map_err(spawn_error)?;
    let stdout = stdout.into_blocking_fd().map_err(spawn_error)?;
    let stderr = stderr.into_blocking_fd().map_err(spawn_error)?;
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(command)
        .current_dir(&env.cwd)
        .env("PATH", shell_path(&env.home))
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    cmd.envs(&env.variables);
    if let Some(session) = &env.session_variables {
        for name in super::SessionVariables::NAMES {
            cmd.env_remove(name);
        }
        cmd.envs(session.values());
    }
    if !env.pass_credentials {
        for (name, _) in std::env::vars_os() {
            if is_credential_variable(&name.to_string_lossy()) {
                cmd.env_remove(name);
            }
        }
    }
    let child = cmd.spawn().map_err(spawn_error)?;
    // The command holds our copies of the pipes' write ends: without dropping them the output
    // would never end.
    drop(cmd);
    let pid = child.id().unwrap_or_default();
    Ok(Running {
        child,
        pid,
        output: [Some(stdout_reader), Some(stderr_reader)],
        first: 0,
        cancel,
        killed: false,
        timeout: timeout.map(|after| Box::pin(sleep(after))),
        timed_out: false,
        exit: None,
        grace: None,
        end: None,
        buffer: vec![0; READ_CHUNK],
    })
}

/// Pi's local bash operations up to the running command: the timeout (it must be valid), the
/// shell (a configured one must exist), the working directory (it must exist), then the spawn. `None` when the token was
/// cancelled before the start: Pi spawns and kills at once, before the shell can do anything,
/// so the command is simply not started.
pub(crate) fn start(
    env: &super::ToolEnv,
    command: &str,
    cancel: CancellationToken,
    timeout: Option<f64>,
) -> Result<Option<Running>, String> {
    let timeout = resolve_timeout(timeout)?;
    let shell = find_shell(env.shell.as_deref())?;
    if !env.cwd.exists() {
        return Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            env.cwd.display()
        ));
    }
    if cancel.is_cancelled() {
        return Ok(None);
    }
    spawn(&shell, command, env, cancel, timeout).map(Some)
}

/// Node's wording: `spawn <file> <errno name>`.
fn spawn_error_text(shell: &Path, error: &io::Error) -> String {
    let code = match error.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::ENOEXEC) => "ENOEXEC",
        Some(libc::EPERM) => "EPERM",
        Some(libc::ENOMEM) => "ENOMEM",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::EMFILE) => "EMFILE",
        _ => return format!("spawn {} {error}", shell.display()),
    };
    format!("spawn {} {code}", shell.display())
}

impl Running {
    /// The next piece of output, or the end. Cancel-safe: it may be dropped in a `select!`.
    ///
    /// The command ends when the shell has exited and the output is closed, or 100 ms after the
    /// shell exited (what is written later is not read; the background process keeps running,
    /// as in Pi). Abort and timeout kill the whole process group and still wait for the exit.
    pub(crate) async fn next(&mut self) -> Event {
        loop {
            if let Some(end) = self.end {
                return Event::Done(end);
            }
            if let Some(code) = self.exit {
                if self.output.iter().all(Option::is_none) {
                    self.finish(code);
                    continue;
                }
            }
            tokio::select! {
                () = self.cancel.cancelled(), if !self.killed => self.kill(),
                () = wait_for(&mut self.timeout), if self.timeout.is_some() => {
                    self.timeout = None;
                    self.timed_out = true;
                    self.kill();
                }
                status = self.child.wait(), if self.exit.is_none() => {
                    self.exit = Some(status.ok().map_or(End::Exited(None), |status| {
                        match (status.code(), status.signal()) {
                            (None, Some(signal)) => End::Signalled(signal),
                            (code, _) => End::Exited(code),
                        }
                    }));
                    self.grace = Some(Box::pin(sleep(EXIT_STDIO_GRACE)));
                }
                (index, read) = read_either(&mut self.output, self.first, &mut self.buffer) => {
                    match read {
                        Ok(n) if n > 0 => {
                            self.first = 1 - index;
                            return Event::Output(self.buffer[..n].to_vec());
                        }
                        _ => self.output[index] = None,
                    }
                }
                () = wait_for(&mut self.grace), if self.grace.is_some() => {
                    self.output = [None, None];
                }
            }
        }
    }

    /// Kills the process group, or at least the shell when that fails.
    fn kill(&mut self) {
        self.killed = true;
        if !kill_group(self.pid) {
            // Already reaped or never started: nothing to report.
            let _ = self.child.start_kill();
        }
    }

    /// Settles the end once the shell exited and the output is closed or abandoned. The abort
    /// counts when the token is cancelled by then (Pi checks `signal.aborted` at this point).
    fn finish(&mut self, exit: End) {
        self.timeout = None;
        self.grace = None;
        self.end = Some(if self.cancel.is_cancelled() {
            End::Aborted
        } else if self.timed_out {
            End::TimedOut
        } else {
            exit
        });
    }
}

impl Drop for Running {
    /// A command dropped while its shell still runs (the caller stopped waiting) takes its
    /// process group with it, so nothing is left behind.
    fn drop(&mut self) {
        if self.exit.is_none() {
            self.kill();
        }
    }
}

async fn wait_for(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(timer) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}

/// One read from whichever open pipe has something (output or its end), trying `first` first:
/// the pipe's index and what the read gave (0 bytes at the end). Pending while neither is open.
async fn read_either(
    pipes: &mut [Option<pipe::Receiver>; 2],
    first: usize,
    buffer: &mut [u8],
) -> (usize, io::Result<usize>) {
    std::future::poll_fn(|cx| poll_either(pipes, first, buffer, cx)).await
}

fn poll_either(
    pipes: &mut [Option<pipe::Receiver>; 2],
    first: usize,
    buffer: &mut [u8],
    cx: &mut Context<'_>,
) -> Poll<(usize, io::Result<usize>)> {
    for index in [first, 1 - first] {
        let Some(pipe) = pipes[index].as_mut() else {
            continue;
        };
        let mut read = ReadBuf::new(buffer);
        if let Poll::Ready(result) = Pin::new(pipe).poll_read(cx, &mut read) {
            return Poll::Ready((index, result.map(|()| read.filled().len())));
        }
    }
    Poll::Pending
}

/// The file a command's complete output goes to once it is over budget, opened on first use.
/// A write failure is kept and reported when the command is over (Pi's write stream would
/// crash the process instead).
#[derive(Debug)]
pub(crate) struct FullOutputFile {
    path: PathBuf,
    file: Option<tokio::fs::File>,
    error: Option<String>,
}

impl FullOutputFile {
    /// Creates a fresh `pi-bash-<hex>.log` in `dir`, named by `key` when there is one (see
    /// [`full_output_path`]). A named file left by an earlier run of the same call (a replay run
    /// twice) is replaced when it is a regular file this user may remove (in a sticky temp
    /// folder, only its own); anything else there (a link, a folder, another user's file) is
    /// left alone and a random name taken instead.
    pub(crate) async fn create(dir: &Path, key: Option<u64>) -> Self {
        let mut path = full_output_path(dir, key);
        let mut opened = create_fresh(&path);
        if key.is_some() && matches!(&opened, Err(e) if e.kind() == io::ErrorKind::AlreadyExists) {
            path = full_output_path(dir, None);
            opened = create_fresh(&path);
        }
        let (file, error) = match opened {
            Ok(file) => (Some(tokio::fs::File::from_std(file)), None),
            Err(error) => (None, Some(write_error(&path, &error))),
        };
        FullOutputFile { path, file, error }
    }

    /// Where the output is kept.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends bytes; after a failure nothing more is written.
    pub(crate) async fn write(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        let Some(file) = self.file.as_mut() else {
            return;
        };
        if let Err(error) = file.write_all(bytes).await {
            self.error = Some(write_error(&self.path, &error));
            self.file = None;
        }
    }

    /// Flushes and closes the file; the first failure, if any.
    pub(crate) async fn close(mut self) -> Result<PathBuf, String> {
        use tokio::io::AsyncWriteExt;
        if let Some(mut file) = self.file.take() {
            if let Err(error) = file.flush().await {
                self.error
                    .get_or_insert_with(|| write_error(&self.path, &error));
            }
        }
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.path),
        }
    }
}

fn write_error(path: &Path, error: &io::Error) -> String {
    format!(
        "Cannot write the full output to {}: {error}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_calls_full_output_file_is_named_by_the_run_and_the_call() {
        let run = Some(fnv1a(&[b"seed"]));
        let key = output_key(run, Some("call_1")).unwrap();
        assert_eq!(output_key(run, Some("call_1")), Some(key));
        assert_ne!(output_key(run, Some("call_2")), Some(key));
        assert_ne!(
            output_key(Some(fnv1a(&[b"other"])), Some("call_1")),
            Some(key)
        );
        assert_eq!(output_key(None, Some("call_1")), None);
        // The same on every build: FNV-1a's published value for "a".
        assert_eq!(fnv1a(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
    }

    #[tokio::test]
    async fn a_named_file_replaces_an_earlier_one_but_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let key = Some(7);
        let path = full_output_path(dir.path(), key);
        std::fs::write(&path, "an earlier replay's output").unwrap();
        let mut file = FullOutputFile::create(dir.path(), key).await;
        assert_eq!(file.path(), path);
        file.write(b"now").await;
        file.close().await.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "now");

        let target = dir.path().join("target");
        std::fs::write(&target, "not to be written").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let mut file = FullOutputFile::create(dir.path(), key).await;
        assert_ne!(file.path(), path, "another name beside the link");
        file.write(b"elsewhere").await;
        file.close().await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "not to be written"
        );
    }
}
