//! Running a trial's agent: any Pi-compatible command, in the trial's workspace, as a process
//! of its own. Prompts-only tasks run in Pi's print mode (`--mode json`); tasks with steering or
//! follow-ups (or a prompt Pi would read as a flag or a file) run in RPC mode, each step sent when the agent is idle (steering and follow-ups
//! right after their prompt). The events are read as they come, so a limit stops the run the
//! moment it is passed; a cancelled or timed-out run gets SIGINT (Pi aborts and exits), then
//! SIGKILL for its whole process group.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::agent_options::AgentOptions;
use crate::isolate::{AgentSandbox, Isolation};
use crate::outcome::{AgentOutcome, Limits};
use crate::suite::Step;
use crate::workspace::TrialDirs;

/// How long a run has after SIGINT before its process group is killed.
const GRACE: Duration = Duration::from_secs(3);

/// How often the watcher looks at the clock and the cancel flag.
const POLL: Duration = Duration::from_millis(20);

/// The agent command: a program and the words before Pi's own flags (`node cli.js`, say).
#[derive(Clone)]
pub struct AgentCommand {
    pub program: PathBuf,
    pub prefix: Vec<String>,
    /// Replays trials in this process instead of starting `program replay` for each: a
    /// replayed trial is CPU-bound work of a few milliseconds, less than starting a process.
    pub replayer: Option<Arc<dyn Replayer>>,
}

impl std::fmt::Debug for AgentCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCommand")
            .field("program", &self.program)
            .field("prefix", &self.prefix)
            .field("in_process_replay", &self.replayer.is_some())
            .finish()
    }
}

/// Replays a trial's cassette in process, as `pi replay CASSETTE --tools in-place` would in
/// a process of its own.
pub trait Replayer: Send + Sync {
    /// Replays `cassette` with its tools run for real in the trial's workspace, commands
    /// through the invocation's shell with the task's environment (as the recorded agent's
    /// commands inherited it), file tools confined to the workspace, and its session file in
    /// the trial's agent directory (where an agent process would write it); what it printed
    /// and its exit code.
    fn replay(&self, cassette: &Path, inv: &Invocation<'_>) -> InProcessReplay;
}

/// What an in-process replay gave: as `pi replay` would exit and print.
#[derive(Debug, Default)]
pub struct InProcessReplay {
    /// 0 reproduced; 1 diverged; 125 the cassette cannot be used.
    pub exit: i32,
    /// The JSON event lines.
    pub stdout: Vec<u8>,
    /// Why it diverged or could not be used.
    pub stderr: String,
}

/// What the trial does with its cassette.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CassetteUse {
    /// Model calls go to the provider; nothing is written.
    Live,
    /// Model calls go to the provider and are recorded into the file.
    Record(PathBuf),
    /// The run is replayed from the file (`program replay`), tools running for real in the
    /// workspace so that file and command checks see what they did.
    Replay(PathBuf),
}

/// One trial's run, as the command line and environment of the agent describe it.
#[derive(Clone, Debug)]
pub struct Invocation<'a> {
    pub steps: &'a [Step],
    pub model: &'a str,
    pub seed: u64,
    pub tools: Option<&'a [String]>,
    pub thinking: Option<&'a str>,
    pub dirs: &'a TrialDirs,
    /// The shell the agent's bash tool uses (the confinement's wrapper).
    pub shell: Option<&'a Path>,
    /// How the agent process itself is confined, and what it may touch.
    pub isolation: &'a Isolation,
    pub sandbox: &'a AgentSandbox,
    pub cassette: &'a CassetteUse,
    pub limits: &'a Limits,
    /// The task's own flags, environment and system prompt text (a replay answers from what
    /// the cassette recorded, and gives its commands the environment again).
    pub options: &'a AgentOptions,
}

/// What the agent's run gave.
#[derive(Debug, Default)]
pub struct AgentRun {
    pub outcome: AgentOutcome,
    /// The exit code; `None` when a signal ended it or it never started.
    pub exit: Option<i32>,
    /// The end of what it wrote to stderr.
    pub stderr: String,
    /// The limit that stopped it.
    pub limit: Option<String>,
    /// It was stopped because the whole eval was cancelled.
    pub cancelled: bool,
    pub wall: Duration,
    /// Why it could not start.
    pub start_error: Option<String>,
    /// A step the agent refused (an RPC command answered `success: false`), in words: the
    /// trial did not do what the task says, so it is an error, not a failure of the model.
    pub refused: Option<String>,
}

impl AgentCommand {
    /// Runs one trial; `cancel` stops it early (Ctrl-C of the whole eval).
    pub fn run(&self, inv: &Invocation<'_>, cancel: &Arc<AtomicBool>) -> AgentRun {
        if let (CassetteUse::Replay(cassette), Some(replayer)) = (inv.cassette, &self.replayer) {
            if self.replays_in_process(inv.options) {
                return replay_in_process(replayer.as_ref(), cassette, inv, cancel);
            }
        }
        // Print mode takes prompts as words, where Pi would read one starting with `-` or `@`
        // as a flag or a file: those go as RPC messages, like steering and follow-ups.
        let rpc = inv.steps.iter().any(|s| match s {
            Step::Prompt(text) => text.starts_with(['-', '@']),
            Step::Steer(_) | Step::FollowUp(_) => true,
        });
        let replaying = matches!(inv.cassette, CassetteUse::Replay(_));
        let started = Instant::now();
        let spawned = self
            .command(inv, rpc)
            .and_then(|mut command| command.spawn());
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                return AgentRun {
                    start_error: Some(format!("cannot start {}: {e}", self.program.display())),
                    ..AgentRun::default()
                }
            }
        };
        let pid = child.id();
        let stderr = child.stderr.take().map(tail_reader);
        let stdin = if rpc && !replaying {
            child.stdin.take()
        } else {
            None
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let watcher = watch(
            pid,
            inv.limits.wall_time,
            started,
            Arc::clone(&stop),
            finished,
            Arc::clone(cancel),
        );
        let mut run = AgentRun::default();
        let limits = if replaying {
            Limits::default()
        } else {
            *inv.limits
        };
        let mut driver = stdin.map(|stdin| RpcDriver::new(stdin, inv.steps));
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if crate::outcome::is_streaming_update(&line) {
                    continue;
                }
                let Ok(event) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                run.outcome.feed(&event);
                if let Some(driver) = &mut driver {
                    driver.on_event(&event);
                }
                if run.limit.is_none() {
                    if let Some(hit) = run.outcome.passed_limit(&limits) {
                        run.limit = Some(hit);
                        // At once: every event the agent gets ahead is a request more.
                        if let Ok(group) = i32::try_from(pid) {
                            signal_group(group, Signal::SIGINT);
                        }
                        stop.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
        run.refused = driver.and_then(|driver| driver.refused);
        run.exit = wait(&mut child);
        run.wall = started.elapsed();
        // Wakes the watcher at once (a trial must not wait out its poll interval).
        drop(done);
        let timed_out = watcher.join().unwrap_or(false);
        if replaying {
            // The recording holds the limit's abort; the limit is read from what it did.
            run.limit = run.outcome.passed_limit(inv.limits);
        }
        if timed_out && run.limit.is_none() && !cancel.load(Ordering::SeqCst) {
            run.limit = inv
                .limits
                .wall_time
                .map(|t| format!("wall-time limit: more than {:.1} s", t.as_secs_f64()));
        }
        run.cancelled = cancel.load(Ordering::SeqCst);
        run.stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
        run
    }

    /// Whether a replay of a trial with `options` runs in this process. Not when the task has
    /// MCP servers: a replay runs the trial's tools again in its workspace, and the servers
    /// that answer them are started by an agent process from the trial's agent folder, inside
    /// its sandbox.
    pub fn replays_in_process(&self, options: &AgentOptions) -> bool {
        self.replayer.is_some() && options.mcp_servers.is_empty()
    }

    /// The agent's command line, confined by the trial's isolation.
    fn command(&self, inv: &Invocation<'_>, rpc: bool) -> std::io::Result<Command> {
        let mut args: Vec<OsString> = self.prefix.iter().map(OsString::from).collect();
        let words = |args: &mut Vec<OsString>, words: &[&str]| {
            args.extend(words.iter().map(OsString::from));
        };
        let ws = &inv.dirs.workspace;
        match inv.cassette {
            CassetteUse::Replay(cassette) => {
                words(&mut args, &["replay"]);
                args.push(cassette.into());
                words(&mut args, &["--tools", "in-place", "--workspace"]);
                args.push(ws.into());
            }
            CassetteUse::Live | CassetteUse::Record(_) => {
                let mode = if rpc { "rpc" } else { "json" };
                words(&mut args, &["--mode", mode, "--no-session"]);
                args.extend(inv.options.args.iter().map(OsString::from));
                if let Some(text) = &inv.options.append_system_prompt {
                    words(&mut args, &["--append-system-prompt", text]);
                }
                match inv.model.split_once('/') {
                    Some((provider, id)) => {
                        words(&mut args, &["--provider", provider, "--model", id]);
                    }
                    None => words(&mut args, &["--model", inv.model]),
                };
                if let Some(thinking) = inv.thinking {
                    words(&mut args, &["--thinking", thinking]);
                }
                match inv.tools {
                    Some([]) => words(&mut args, &["--no-tools"]),
                    Some(tools) => words(&mut args, &["--tools", &tools.join(",")]),
                    None => {}
                }
                if let CassetteUse::Record(path) = inv.cassette {
                    words(&mut args, &["--record"]);
                    args.push(path.into());
                }
                if !rpc {
                    words(&mut args, &["-p"]);
                    for step in inv.steps {
                        if let Step::Prompt(text) = step {
                            words(&mut args, &[text]);
                        }
                    }
                }
            }
        }
        let mut command = inv
            .isolation
            .agent_command(inv.sandbox, &self.program, &args)?;
        command
            .envs(&inv.options.env)
            .env("PI_CODING_AGENT_DIR", &inv.dirs.agent_dir)
            .env("PI_SEED", inv.seed.to_string())
            .env("PI_TOOLS_SANDBOX", "1")
            .stdin(if rpc { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(shell) = inv.shell {
            command.env("PI_TOOLS_SHELL", shell);
        }
        Ok(command)
    }
}

/// A trial replayed by `replayer`: its events read as a process's would be.
fn replay_in_process(
    replayer: &dyn Replayer,
    cassette: &Path,
    inv: &Invocation<'_>,
    cancel: &AtomicBool,
) -> AgentRun {
    let started = Instant::now();
    let replayed = replayer.replay(cassette, inv);
    let mut run = AgentRun {
        exit: Some(replayed.exit),
        stderr: replayed.stderr,
        ..AgentRun::default()
    };
    for line in String::from_utf8_lossy(&replayed.stdout).lines() {
        run.outcome.feed_line(line);
    }
    run.wall = started.elapsed();
    // The recording holds the limit's abort; the limit is read from what it did.
    run.limit = run.outcome.passed_limit(inv.limits);
    run.cancelled = cancel.load(Ordering::SeqCst);
    run
}

/// Sends an RPC session's steps: each prompt with the steering and follow-ups after it, the
/// next prompt once the agent is idle (no run, retry or compaction going on), then ends stdin.
/// A step the agent refuses ends the session there (see [`AgentRun::refused`]).
struct RpcDriver<'a> {
    stdin: Option<ChildStdin>,
    steps: &'a [Step],
    next: usize,
    /// A `get_state` is out; its answer says whether the agent is idle.
    asked: bool,
    /// The first step the agent refused, and why.
    refused: Option<String>,
    /// A run is due to start by itself: a failed call waits for its retry (from
    /// `auto_retry_start`), or a compaction after a context overflow for its retry (from a
    /// `compaction_end` that will retry), until the run starts (`agent_start`) or the retries
    /// end (`auto_retry_end`). Pi's `get_state` calls the agent idle meanwhile.
    retrying: bool,
}

impl<'a> RpcDriver<'a> {
    fn new(stdin: ChildStdin, steps: &'a [Step]) -> Self {
        let mut driver = RpcDriver {
            stdin: Some(stdin),
            steps,
            next: 0,
            asked: false,
            refused: None,
            retrying: false,
        };
        driver.send_group();
        driver
    }

    /// Sends the next prompt and the steering and follow-ups that come with it; ends stdin
    /// when there is none.
    fn send_group(&mut self) {
        if self.next >= self.steps.len() {
            self.stdin = None;
            return;
        }
        let mut lines = String::new();
        // Where this group starts: `next` moves on as its steps are written.
        let first = self.next;
        for (i, step) in self.steps.iter().enumerate().skip(first) {
            let line = match step {
                Step::Prompt(_) if i > first => break,
                Step::Prompt(text) => json!({"type": "prompt", "message": text}),
                Step::Steer(text) => json!({"type": "steer", "message": text}),
                Step::FollowUp(text) => json!({"type": "follow_up", "message": text}),
            };
            lines.push_str(&line.to_string());
            lines.push('\n');
            self.next = i + 1;
        }
        self.write(&lines);
    }

    fn write(&mut self, text: &str) {
        if let Some(stdin) = &mut self.stdin {
            if stdin
                .write_all(text.as_bytes())
                .and_then(|()| stdin.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }

    fn on_event(&mut self, event: &Value) {
        let kind = event.get("type").and_then(Value::as_str);
        match kind {
            Some("auto_retry_start") => self.retrying = true,
            Some("compaction_end")
                if event.get("willRetry").and_then(Value::as_bool) == Some(true) =>
            {
                self.retrying = true;
            }
            Some("agent_start" | "auto_retry_end") => self.retrying = false,
            _ => {}
        }
        match kind {
            Some("agent_end" | "auto_retry_end" | "compaction_end") if !self.asked => {
                self.asked = true;
                self.write("{\"type\":\"get_state\"}\n");
            }
            Some("response") if event.get("success").and_then(Value::as_bool) == Some(false) => {
                if self.refused.is_none() {
                    let command = event.get("command").and_then(Value::as_str).unwrap_or("?");
                    let error = event
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("no reason given");
                    self.refused = Some(format!("the agent refused the `{command}` step: {error}"));
                }
                // Nothing more is sent: the steps after a refused one would run out of order.
                self.stdin = None;
            }
            Some("response")
                if event.get("command").and_then(Value::as_str) == Some("get_state") =>
            {
                self.asked = false;
                let busy = |key: &str| {
                    event
                        .pointer(&format!("/data/{key}"))
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                };
                if !self.retrying && !busy("isStreaming") && !busy("isCompacting") {
                    self.send_group();
                }
            }
            _ => {}
        }
    }
}

/// Watches a running agent: SIGINT to its process group when the eval is cancelled or
/// `wall_time` has passed; SIGKILL after [`GRACE`] (also after the reader's own SIGINT, which
/// it signals with `stop`); it ends when `finished` is closed. Returns whether the wall time
/// ran out.
fn watch(
    pid: u32,
    wall_time: Option<Duration>,
    started: Instant,
    stop: Arc<AtomicBool>,
    finished: std::sync::mpsc::Receiver<()>,
    cancel: Arc<AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let Ok(group) = i32::try_from(pid) else {
            return false;
        };
        let mut interrupted_at: Option<Instant> = None;
        let mut timed_out = false;
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(POLL) {
            let over = wall_time.is_some_and(|t| started.elapsed() > t);
            timed_out |= over;
            if interrupted_at.is_none() && stop.load(Ordering::SeqCst) {
                // The reader has sent SIGINT already.
                interrupted_at = Some(Instant::now());
            }
            if interrupted_at.is_none() && (cancel.load(Ordering::SeqCst) || over) {
                signal_group(group, Signal::SIGINT);
                interrupted_at = Some(Instant::now());
            }
            if interrupted_at.is_some_and(|at| at.elapsed() > GRACE) {
                signal_group(group, Signal::SIGKILL);
            }
        }
        // Whatever the agent left running in its group goes with it.
        signal_group(group, Signal::SIGKILL);
        timed_out
    })
}

fn signal_group(group: i32, signal: Signal) {
    // The group may be gone already: nothing to do then.
    let _ = killpg(Pid::from_raw(group), signal);
}

fn wait(child: &mut Child) -> Option<i32> {
    child.wait().ok().and_then(|status| status.code())
}

/// Reads a stream to its end on a thread, keeping its last 8 KB.
fn tail_reader(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 8192];
        while let Ok(n) = stream.read(&mut buffer) {
            if n == 0 {
                break;
            }
            kept.extend_from_slice(&buffer[..n]);
            if kept.len() > 16384 {
                kept.drain(..kept.len() - 8192);
            }
        }
        let start = kept.len().saturating_sub(8192);
        String::from_utf8_lossy(&kept[start..]).into_owned()
    })
}
