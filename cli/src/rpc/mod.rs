//! RPC mode (Pi's `runRpcMode`): commands as JSON lines on stdin, responses and every session
//! event as JSON lines on stdout, until stdin ends.
//!
//! One task owns the session and waits on three things at once: the next command line, the
//! session's next answer or timer (while it is busy), and a finished `bash` command. So commands
//! are taken while a run streams (steer, abort, get_state...), and the responses of commands that
//! wait (abort, compact, bash) come when what they wait for is done, as in Pi, where each line is
//! handled concurrently.

mod commands;
mod framing;
mod json_error;
mod replace;
mod state;

use std::collections::VecDeque;

use pi_core::agent_session::Reply;
use pi_core::event::Event;
use pi_core::rpc::{ResponseType, RpcResponse};
use pi_effects::agent_session::{AgentSession, CancellationToken};
use pi_effects::driver::{DriveError, InterpretError};
use pi_effects::tools::user_bash::BashResult;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::output::Stdout;
use crate::setup::{Runtime, SessionChoice};
use crate::signals::{stop, Signals};
use crate::CliError;

/// Runs RPC mode until stdin ends; returns the exit code.
pub async fn run(runtime: Runtime, choice: SessionChoice) -> Result<i32, CliError> {
    let session = runtime.open(&choice)?;
    let (bash_done, mut bash_finished) = unbounded_channel();
    let mut rpc = Rpc {
        runtime,
        session,
        out: Stdout::new(),
        abort_waiters: Vec::new(),
        compact_waiters: VecDeque::new(),
        bash: None,
        bash_done,
        generation: 0,
    };
    let mut lines = framing::spawn_line_reader(std::io::stdin());
    let mut signals = Signals::new();
    // Set when the session is busy with nothing that could answer it (a defect, reported once);
    // the next command may move it again.
    let mut stuck = false;
    loop {
        let busy = rpc.session.machine().is_busy() && !stuck;
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => {
                    stuck = false;
                    rpc.handle_line(&line);
                }
                None => break,
            },
            advanced = rpc.session.advance(|event| rpc.out.json_line(event)), if busy => {
                match advanced {
                    Ok(Ok(replies)) => rpc.replies(replies),
                    // Commands go in through `submit`, never through the session's channel.
                    Ok(Err(_)) => {}
                    Err(error) => {
                        stuck = matches!(error, DriveError::Interpret(InterpretError::Idle));
                        rpc.out.flush();
                        eprintln!("{error}");
                    }
                }
            }
            Some(done) = bash_finished.recv() => rpc.bash_finished(done),
            code = signals.received() => {
                if let Some(bash) = rpc.bash.take() {
                    bash.cancel();
                }
                let out = &mut rpc.out;
                stop(&mut rpc.session, &mut |event: &Event| out.json_line(event)).await;
                return Ok(rpc.end(code));
            }
        }
        rpc.answer_abort_waiters();
    }
    Ok(rpc.end(0))
}

/// A `bash` command that finished, with the id it came with.
struct BashDone {
    id: Option<Value>,
    /// The session it ran for (see [`Rpc::generation`]).
    generation: u64,
    command: String,
    result: Result<BashResult, String>,
}

/// The RPC front end's state around the session.
struct Rpc {
    runtime: Runtime,
    session: AgentSession,
    out: Stdout,
    /// Ids of `abort` commands waiting for the run to end.
    abort_waiters: Vec<Option<Value>>,
    /// Ids of `compact` commands waiting for their result, oldest first.
    compact_waiters: VecDeque<Option<Value>>,
    /// The running `bash` command's cancel switch (Pi keeps one: the latest).
    bash: Option<CancellationToken>,
    bash_done: UnboundedSender<BashDone>,
    /// Counts session replacements: a `bash` that finishes after its session was replaced is
    /// answered but not recorded in the new one (Pi records it in the old session object).
    generation: u64,
}

impl Rpc {
    /// Flushes what is left to say and ends the session before the process exits with `code`.
    fn end(self, code: i32) -> i32 {
        let Rpc {
            mut out, session, ..
        } = self;
        out.flush();
        session.end_before_exit();
        code
    }

    fn respond(&mut self, response: &RpcResponse) {
        self.out.json_line(response);
    }

    /// Handles what finished operations report (a compaction's result).
    fn replies(&mut self, replies: Vec<Reply>) {
        for reply in replies {
            if let Reply::Compacted(result) = reply {
                let id = self.compact_waiters.pop_front().flatten();
                let response = match result {
                    Ok(result) => success(id, "compact", Some(state::to_value(&result))),
                    Err(message) => failure(id, "compact", message),
                };
                self.respond(&response);
            }
        }
    }

    /// `abort` answers once the agent stopped (Pi awaits `agent.waitForIdle()`).
    fn answer_abort_waiters(&mut self) {
        if self.abort_waiters.is_empty() || self.session.machine().agent().is_streaming() {
            return;
        }
        for id in std::mem::take(&mut self.abort_waiters) {
            self.respond(&success(id, "abort", None));
        }
    }
}

/// `{id?, type: "response", command, success: true, data?}`.
fn success(id: Option<Value>, command: &str, data: Option<Value>) -> RpcResponse {
    RpcResponse {
        id,
        kind: ResponseType::Response,
        command: command.to_owned(),
        success: true,
        data,
        error: None,
    }
}

/// `{id?, type: "response", command, success: false, error}`.
fn failure(id: Option<Value>, command: &str, error: impl Into<String>) -> RpcResponse {
    RpcResponse {
        id,
        kind: ResponseType::Response,
        command: command.to_owned(),
        success: false,
        data: None,
        error: Some(error.into()),
    }
}
