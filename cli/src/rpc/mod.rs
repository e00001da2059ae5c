//! RPC mode (Pi's `runRpcMode`): commands as JSON lines on stdin, responses and every session
//! event as JSON lines on stdout, until stdin ends.
//!
//! One task owns the session and runs one loop (see [`run_loop`]), live, recording or replaying
//! alike: what differs is the interpreter, which stamps, records or supplies the command lines
//! and `bash` results as it does the session's inputs.

mod batch;
mod command_replace;
mod commands;
mod framing;
mod lifecycle;
mod replace;
mod started;
mod state;
mod user_bash;

use std::collections::VecDeque;

use std::path::{Path, PathBuf};

use pi_cassettes::{Divergence, Record, Replay};
use pi_core::agent_session::{BusyAnswer, Reply, RPC_SOURCE};
use pi_core::event::Event;
use pi_core::rpc::{ResponseType, RpcResponse};
use pi_effects::agent_session::{AgentSession, CancellationToken};
use pi_effects::driver::{
    DriveError, FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash,
};
use pi_effects::live::Live;
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::args::Mode;
use crate::cassette::{self, CassettePlan, Io, RunInfo};
use crate::output::Stdout;
use crate::replacement::{self, Leaves};
use crate::setup::{Runtime, SessionChoice};
use crate::signals::{stop, Signals};
use crate::CliError;

/// Runs RPC mode until stdin ends (or, replaying, until the cassette's lines do); returns the
/// exit code.
pub async fn run(
    mut runtime: Runtime,
    choice: &SessionChoice,
    plan: CassettePlan,
    command: Vec<String>,
) -> Result<i32, CliError> {
    let built = runtime.build(choice, plan.start(), plan.records())?;
    // A command that replaces the session is refused when another process holds the new file:
    // waiting would stop the loop from answering.
    runtime.wait_for_session = false;
    let info = RunInfo {
        mode: Mode::Rpc,
        command,
        runtime: &runtime,
    };
    let (machine, file, io) = cassette::prepare(plan, built, info)?;
    let out = cassette::output(&io);
    let code = match io {
        Io::Live(live) => {
            let session = AgentSession::from_parts(machine, live, file);
            let mut rpc = Rpc::new(runtime, session, out, Role::Live);
            rpc.reopen = Some(replacement::live());
            run_live(rpc).await
        }
        Io::Record(io) => {
            // The sessions replacing commands open are recorded into the same cassette.
            let session = AgentSession::from_parts(machine, io, file);
            let mut rpc = Rpc::new(runtime, session, out, Role::Live);
            rpc.reopen = Some(cassette::reopen_recorded());
            run_live(rpc).await
        }
        Io::Hybrid(io) => {
            let session = AgentSession::from_parts(machine, io, file);
            run_live(Rpc::new(runtime, session, out, Role::Live)).await
        }
        Io::Replay(io) => {
            let session = AgentSession::from_parts(machine, io, file);
            let (models, scoped) = cassette::recorded_models(session.interpreter().cassette());
            let runtime = runtime.with_recorded_models(models, scoped);
            // In place: later sessions would be written over the user's files.
            let replayed = replay(runtime, session, out, None).await;
            replayed.result.unwrap_or_else(|d| cassette::report(&d))
        }
    };
    Ok(code)
}

/// The commands that replace the session.
const REPLACING: [&str; 4] = ["new_session", "switch_session", "fork", "clone"];

/// Whether `line` is a command that replaces the session. Most lines are told apart without
/// parsing them (see [`may_replace_session`]).
fn replaces_session(line: &str) -> bool {
    if !may_replace_session(line) {
        return false;
    }
    let Ok(command) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let kind = command.get("type").and_then(Value::as_str);
    kind.is_some_and(|kind| REPLACING.contains(&kind))
}

/// Whether `line` may be a command that replaces the session: false only when it cannot be.
/// A JSON string without escapes is its value's text as it is, so a line whose `type` is
/// one of [`REPLACING`] holds that name or a backslash (`"new_\u0073ession"`).
fn may_replace_session(line: &str) -> bool {
    line.contains('\\') || REPLACING.iter().any(|name| line.contains(name))
}

/// RPC mode on stdin, with real processes for `bash`.
async fn run_live<I: Front>(mut rpc: Rpc<I>) -> i32 {
    let sources = Sources {
        lines: Some(framing::spawn_line_reader(std::io::stdin())),
        bash_finished: rpc.bash_results.take(),
        signals: Some(Signals::new()),
        extension_ui: rpc.enable_extension_ui(),
    };
    let code = match run_loop(&mut rpc, sources).await {
        Ended::Input | Ended::Replaced => 0,
        Ended::Signal(code) => code,
        Ended::Diverged(divergence) => cassette::report(&divergence),
    };
    rpc.end(code)
}

/// What replaying an RPC session did.
pub struct ReplayedRpc {
    /// The exit code, or where the replay parted from its recording.
    pub result: Result<i32, Divergence>,
    /// SHA-256 of what it printed.
    pub stdout: String,
    /// What it printed, when its output keeps the text (a check's does).
    pub stdout_text: Option<String>,
    /// The session file it wrote, if any.
    pub session_file: Option<PathBuf>,
    /// The steps of the sessions it went on in after replacements (the first one's are its
    /// replay's).
    pub later_steps: usize,
}

/// RPC mode answered from a cassette: its stdin lines and `bash` results in the recorded
/// order, the session's answers from the recording; nothing runs, and nothing is written but
/// the output and the session files. The sessions a replacing command opened are rebuilt in
/// `later_sessions` from the recording; without it, the replay ends at the first replacement.
pub async fn replay(
    runtime: Runtime,
    session: AgentSession<Replay>,
    out: Stdout,
    later_sessions: Option<PathBuf>,
) -> ReplayedRpc {
    let mut rpc = Rpc::new(runtime, session, out, Role::Replaying);
    rpc.reopen = Some(replacement::replayed(later_sessions, true));
    // Stdin comes from the cassette, and `bash` results too unless they run for real (live
    // tools); a signal ends the process as usual.
    let sources = Sources {
        lines: None,
        bash_finished: rpc.bash_results.take(),
        signals: None,
        extension_ui: None,
    };
    let result = match run_loop(&mut rpc, sources).await {
        Ended::Input => rpc.session.interpreter().finish().map(|()| 0),
        // At a replacement it does not go past (in place): its part of the recording used.
        Ended::Replaced => rpc.session.interpreter().finish_part().map(|()| 0),
        Ended::Signal(code) => Ok(code),
        Ended::Diverged(divergence) => Err(divergence),
    };
    rpc.out.flush();
    ReplayedRpc {
        result,
        stdout: rpc.out.digest().unwrap_or_default(),
        stdout_text: rpc.out.text().map(str::to_owned),
        session_file: rpc.session.written_file().map(PathBuf::from),
        later_steps: rpc.later_steps,
    }
}

/// What the RPC loop asks of its interpreter besides [`Interpreter`] and [`Leaves`]: whether a
/// run it replays has parted from its recording (after `error`, when driving stopped on one).
/// Other interpreters never part from anything: their errors are reported and the loop goes on.
trait Front: Leaves {
    fn diverged(&self, error: Option<&DriveError>) -> Option<Divergence>;

    /// How many recorded steps it answers (a replay's; none for the others).
    fn steps(&self) -> usize {
        0
    }

    /// The extensions' UI request recorded next, if the recording goes on with one (a
    /// replay's): where a live run printed what a handler asked as the front end drove the
    /// session itself, a replay prints it too; none for the others.
    fn recorded_ui(&mut self) -> Option<(u64, Value)> {
        None
    }
}

impl Front for Live {
    fn diverged(&self, _error: Option<&DriveError>) -> Option<Divergence> {
        None
    }
}

impl<I: Interpreter + Send> Front for Record<I> {
    fn diverged(&self, _error: Option<&DriveError>) -> Option<Divergence> {
        None
    }
}

impl Front for Replay {
    fn diverged(&self, error: Option<&DriveError>) -> Option<Divergence> {
        match (self.divergence(), error) {
            (Some(divergence), _) => Some(divergence.clone()),
            (None, Some(error)) => Some(Divergence::of_run(error, self.cassette())),
            (None, None) => None,
        }
    }

    fn steps(&self) -> usize {
        Replay::steps(self)
    }

    fn recorded_ui(&mut self) -> Option<(u64, Value)> {
        self.take_recorded_ui()
    }
}

/// What the loop reads besides the interpreter: stdin (each line with whether its read brought
/// the next line too), finished `bash` commands (with the
/// [`generation`](Rpc::generation) they ran for) and the signals that end a run. A replay
/// reads neither stdin nor signals: the interpreter holds the lines (and the `bash` results,
/// unless they run for real, and the extensions' UI requests).
struct Sources {
    lines: Option<UnboundedReceiver<(String, bool)>>,
    bash_finished: Option<UnboundedReceiver<(u64, UserBash)>>,
    signals: Option<Signals>,
    /// The extensions' UI requests (`extension_ui_request` lines), read beside stdin so that an
    /// extension waiting for its client's answer holds up nothing.
    extension_ui: Option<UnboundedReceiver<Value>>,
}

/// Why the loop ended.
enum Ended {
    /// The input is over: stdin closed, or the recording is used up.
    Input,
    /// The replayed session was replaced where its recording ends (one made before a
    /// recording went on across replacements, or a replay in place).
    Replaced,
    /// A signal stopped the run; the exit code.
    Signal(i32),
    /// The replay parted from its recording.
    Diverged(Divergence),
}

/// The one RPC loop, live, recording or replaying alike. It waits on the interpreter's own
/// front-end inputs first (a replay's recorded lines and `bash` results, in recorded order),
/// then on the next command line, the session's next answer or timer (while it is busy), a
/// finished `bash` command and a signal, all at once. So commands are taken while a run
/// streams (steer, abort, get_state...), and the responses of commands that wait (abort,
/// compact, bash) come when what they wait for is done, as in Pi, where each line is handled
/// concurrently.
async fn run_loop<I: Front>(rpc: &mut Rpc<I>, sources: Sources) -> Ended {
    if let Some(ended) = rpc.bind_extensions().await {
        return ended;
    }
    let mut sources = sources;
    let ended = serve(rpc, &mut sources).await;
    if !matches!(ended, Ended::Input | Ended::Signal(_)) {
        return ended;
    }
    // Stdin's end or a signal (after its abort): Pi disposes the runtime either way, and a
    // second signal does not wait for the handlers.
    let ended = tokio::select! {
        told = rpc.shut_down() => told.unwrap_or(ended),
        code = received(&mut sources.signals) => Ended::Signal(code),
    };
    // What the `session_shutdown` handlers asked of the UI is said before the process ends
    // (a replay's, as recorded).
    rpc.print_ui(&mut sources.extension_ui);
    ended
}

/// Serves the commands until the input ends (or a signal, or the replay parts from its
/// recording).
async fn serve<I: Front>(rpc: &mut Rpc<I>, sources: &mut Sources) -> Ended {
    // Set when the session is busy with nothing that could answer it (a defect, reported once);
    // the next command may move it again.
    let mut stuck = false;
    loop {
        // A replacing command read last is carried out first: what follows reads the session
        // it leaves.
        if let Some(ended) = rpc.replace_for_command(&mut sources.extension_ui).await {
            return ended;
        }
        if let Some(ended) = rpc.replace_pending(&mut sources.extension_ui).await {
            return ended;
        }
        if rpc.may_shut_down() {
            rpc.end_batch();
            return Ended::Input;
        }
        // A warm of the prompt cache due or in flight needs the session's timer and answers
        // while it is idle.
        let machine = rpc.session.machine();
        let busy = machine.is_busy() || machine.is_warming();
        // The rest of a read is on its way: nothing else comes between its lines.
        let reading = rpc.in_batch();
        match rpc.session.interpreter_mut().front_end(busy) {
            FrontEndNext::Input(t, input) => rpc.front_end_input(t, input),
            FrontEndNext::End => {
                rpc.end_batch();
                return Ended::Input;
            }
            // The recorded run was stopped by a signal here: stopped again the same way.
            FrontEndNext::Signal(code) => {
                let out = &mut rpc.out;
                stop(&mut rpc.session, &mut |event: &Event| out.json_line(event)).await;
                return Ended::Signal(code);
            }
            // Stdin's end stops the run at once, whatever events are ready (Pi shuts down on
            // it); the lines read before it have all been taken.
            FrontEndNext::Nothing
                if sources
                    .lines
                    .as_ref()
                    .is_some_and(|l| l.is_closed() && l.is_empty()) =>
            {
                rpc.end_batch();
                return Ended::Input;
            }
            FrontEndNext::Nothing => {
                // What the session already has comes first: the events decoded from one read
                // of a model's stream go out together, before a command read meanwhile (in Pi
                // they are handled in one turn of its event loop).
                tokio::select! {
                    biased;
                    // An extension's UI request goes out before the answer of the hook point
                    // whose handler asked it, which the host wrote after it: in Pi a handler's
                    // `notify` comes before what its event leads to.
                    Some(request) = recv(&mut sources.extension_ui), if !reading => {
                        rpc.ui_request(request);
                    }
                    advanced = rpc.session.advance(|event| started::print_event(&mut rpc.out, &mut rpc.started_waiters, event)), if busy && !stuck && !reading => {
                        match advanced {
                            Ok(Ok(replies)) => {
                                rpc.replies(replies);
                                rpc.release_held_ui();
                                rpc.answer_unstarted();
                            }
                            // Commands go in through `submit`, never through the session's channel.
                            Ok(Err(_)) => {}
                            Err(error) => {
                                if let Some(divergence) = rpc.session.interpreter().diverged(Some(&error)) {
                                    return Ended::Diverged(divergence);
                                }
                                stuck = matches!(error, DriveError::Interpret(InterpretError::Idle));
                                rpc.out.say(&error);
                            }
                        }
                    }
                    line = recv(&mut sources.lines) => match line {
                        Some((line, with_next)) => {
                            stuck = false;
                            rpc.arrived(FrontEndInput::Stdin { line, with_next });
                        }
                        None => {
                            rpc.end_batch();
                            return Ended::Input;
                        }
                    },
                    Some((generation, bash)) = recv(&mut sources.bash_finished), if !reading => {
                        if generation == rpc.generation {
                            rpc.arrived(FrontEndInput::UserBash(bash));
                        } else {
                            // Its session was replaced: answered, recorded in neither.
                            rpc.bash_finished(bash, None);
                        }
                    }
                    code = received(&mut sources.signals) => {
                        if let Some(bash) = rpc.bash.take() {
                            bash.cancel();
                        }
                        let out = &mut rpc.out;
                        stop(&mut rpc.session, &mut |event: &Event| out.json_line(event)).await;
                        return Ended::Signal(code);
                    }
                }
            }
        }
        if let Some(divergence) = rpc.session.interpreter().diverged(None) {
            return Ended::Diverged(divergence);
        }
        // An `abort` read with other lines answers after what they printed.
        if !rpc.in_batch() {
            rpc.answer_abort_waiters();
            rpc.answer_model_waiters();
        }
    }
}

/// The next message of `source`; never, when there is no source.
async fn recv<T>(source: &mut Option<UnboundedReceiver<T>>) -> Option<T> {
    match source {
        Some(source) => source.recv().await,
        None => std::future::pending().await,
    }
}

/// The exit code of the next signal; never, when signals are not listened to.
async fn received(signals: &mut Option<Signals>) -> i32 {
    match signals {
        Some(signals) => signals.received().await,
        None => std::future::pending().await,
    }
}

/// What RPC mode does with a cassette.
enum Role {
    /// Stdin, real `bash` commands, settings written; the interpreter may record the run
    /// (stdin lines and `bash` results with it), ending its cassette when the loop says the
    /// run or its session is over.
    Live,
    /// Lines and results come from the cassette (a `bash` runs only with live tools), settings
    /// are not written.
    Replaying,
}

/// The RPC front end's state around the session.
struct Rpc<I: Front> {
    runtime: Runtime,
    session: AgentSession<I>,
    out: Stdout,
    role: Role,
    /// How replacing commands build their session ([`replacement`]); `None` where none is
    /// built (a hybrid run).
    reopen: Option<replacement::Reopen<I>>,
    /// Ids of `abort` commands waiting for the run to end.
    abort_waiters: Vec<Option<Value>>,
    /// Answers of model changes (`set_model`, `cycle_model`) waiting for their `model_select`
    /// handlers, and of commands waiting for the session notifications they caused, oldest
    /// first.
    model_waiters: Vec<RpcResponse>,
    /// Ids of `compact` commands waiting for their result, oldest first, with their numbers
    /// (`compacts_accepted` once each was).
    compact_waiters: VecDeque<(u64, Option<Value>)>,
    /// Ids of `prompt` commands whose extension command runs, oldest first.
    command_waiters: VecDeque<Option<Value>>,
    /// Whether an extension asked the run to end (`ctx.shutdown()`): it ends as stdin's end
    /// ends it once nothing needs the process ([`Rpc::may_shut_down`]).
    shutdown_asked: bool,
    /// Ids of `prompt` commands sent while streaming without a behaviour, waiting for their
    /// `input` decision, oldest first.
    busy_waiters: VecDeque<Option<Value>>,
    /// The `started` answers of prompts waiting for their run's `agent_start`.
    started_waiters: started::Waiting,
    /// The running `bash` command's cancel switch (Pi keeps one: the latest).
    bash: Option<CancellationToken>,
    /// Each `bash` command the `user_bash` handlers are asked about: its id, command line and
    /// `excludeFromContext`, oldest first.
    user_bash_waiters: VecDeque<(Option<Value>, String, Option<bool>)>,
    /// How many of the oldest waiter's output chunks its extension's `exec` already streamed.
    user_bash_streamed: usize,
    /// Each running `bash` command's id, command line and `excludeFromContext`, oldest first.
    bash_excluded: Vec<(Option<Value>, String, Option<bool>)>,
    /// Where `bash` commands report, with the [`generation`](Self::generation) they ran for.
    bash_done: UnboundedSender<(u64, UserBash)>,
    /// What the loop reads their reports from (taken by it).
    bash_results: Option<UnboundedReceiver<(u64, UserBash)>>,
    /// Counts session replacements: a `bash` that finishes after its session was replaced is
    /// answered but not recorded in the new one (Pi records it in the old session object).
    generation: u64,
    /// The lines of the read being taken, until its last line.
    batch: Option<batch::Batch>,
    /// A replacing command read, which the loop carries out next (it waits for the
    /// extensions).
    pending_replace: VecDeque<replace::PendingReplace>,
    /// A command that asked for the session to be replaced (`ctx.newSession`), which the loop
    /// carries out next (`command_replace.rs`).
    command_replacing: Option<pi_core::agent_session::CarriedCommand>,
    /// Notices (`notify`, `setStatus`...) the `session_before_*` handlers of a replacement or
    /// the tree hooks' handlers sent, printed once their answer applied what they asked for
    /// (their entries come first, as in Pi, where `appendEntry` writes at once); a dialog goes
    /// out at once.
    held_ui: Vec<Value>,
    /// The tree hook point whose handlers' notices are held (see `replace.rs`'s `ui_request`).
    held_for_tree: Option<pi_core::agent::CallId>,
    /// The recorded steps of the sessions opened after the first (a replay's).
    later_steps: usize,
}

impl<I: Front> Rpc<I> {
    fn new(runtime: Runtime, mut session: AgentSession<I>, out: Stdout, role: Role) -> Self {
        // Pi's RPC mode prompts with `source: "rpc"`, which its `input` handlers read; a replay
        // builds its session here too, so it asks as the recording did.
        session.set_input_source(RPC_SOURCE);
        let (bash_done, bash_results) = unbounded_channel();
        Rpc {
            runtime,
            session,
            out,
            role,
            reopen: None,
            abort_waiters: Vec::new(),
            model_waiters: Vec::new(),
            compact_waiters: VecDeque::new(),
            command_waiters: VecDeque::new(),
            shutdown_asked: false,
            busy_waiters: VecDeque::new(),
            started_waiters: VecDeque::new(),
            bash: None,
            bash_excluded: Vec::new(),
            user_bash_waiters: VecDeque::new(),
            user_bash_streamed: 0,
            bash_done,
            bash_results: Some(bash_results),
            generation: 0,
            batch: None,
            pending_replace: VecDeque::new(),
            command_replacing: None,
            held_ui: Vec::new(),
            held_for_tree: None,
            later_steps: 0,
        }
    }

    /// Hands what the front end read or ran to the interpreter, which stamps it (and records
    /// it), then handles it.
    fn arrived(&mut self, input: FrontEndInput) {
        match self.session.interpreter_mut().arrived(input) {
            Ok(Some((t, input))) => self.front_end_input(t, input),
            // Kept by the interpreter, which gives it back in its place.
            Ok(None) => {}
            Err(error) => {
                self.out.say(&error);
            }
        }
    }

    /// Handles a front-end input stamped `t`: a command line, or a finished `bash`.
    pub(super) fn front_end_input(&mut self, t: u64, input: FrontEndInput) {
        match input {
            FrontEndInput::Stdin { line, with_next } => {
                // The lines read before a replacing command are taken to their end first: the
                // replacement is carried out next, and what they printed comes before it.
                // Outside a read of several lines there is nothing to take: the line is not
                // looked at (it is parsed once, when it is handled).
                if self.reopen.is_some() && self.in_batch() && replaces_session(&line) {
                    self.end_batch();
                }
                self.read_line(&line, with_next)
            }
            FrontEndInput::UserBash(bash) => self.bash_finished(bash, Some(t)),
            FrontEndInput::ExtensionUi(request) if request["type"] == "bash_execution_update" => {
                self.user_bash_chunk(&request["delta"]);
            }
            FrontEndInput::ExtensionUi(request) => self.out.json_line(&request),
        }
    }

    /// Gives the run's extensions RPC mode's UI; their requests come on the receiver.
    /// Pi's MCP warning of the session's start comes first on it, as Pi's MCP extension says
    /// it when the session starts.
    fn enable_extension_ui(&mut self) -> Option<UnboundedReceiver<Value>> {
        let warning = self.runtime.mcp_warning.take();
        let host = self.runtime.host()?;
        match host.enable_ui() {
            Ok(requests) => {
                if let Some(warning) = warning {
                    host.notify(warning, "warning");
                }
                Some(requests)
            }
            Err(error) => {
                self.out.say(&error);
                None
            }
        }
    }

    /// Flushes what is left to say and ends the session before the process exits with `code`;
    /// the interpreter is told (a recording gets its outcome).
    fn end(self, code: i32) -> i32 {
        let Rpc {
            mut out,
            mut session,
            ..
        } = self;
        out.flush();
        let file = session.written_file().map(Path::to_path_buf);
        let code = cassette::end_run(session.interpreter_mut(), code, &out, file.as_deref());
        session.end_before_exit();
        code
    }

    fn respond(&mut self, response: &RpcResponse) {
        self.out.json_line(response);
    }

    /// Handles what finished operations report (a compaction's result, an extension
    /// command's run).
    fn replies(&mut self, replies: Vec<Reply>) {
        for reply in replies {
            match reply {
                Reply::Compacted(number, result) => {
                    // A failed compaction is answered once its `session_compact_failed`
                    // handlers ran, possibly after a `compact` sent meanwhile.
                    let at = self.compact_waiters.iter().position(|(n, _)| *n == number);
                    let id = at
                        .and_then(|at| self.compact_waiters.remove(at))
                        .or_else(|| self.compact_waiters.pop_front())
                        .and_then(|(_, id)| id);
                    let response = match result {
                        Ok(result) => success(id, "compact", Some(state::to_value(&result))),
                        Err(message) => failure(id, "compact", message),
                    };
                    self.respond(&response);
                }
                Reply::CommandRan { errors } => {
                    for error in &errors {
                        self.out.json_line(&serde_json::json!({
                            "type": "extension_error",
                            "extensionPath": error.extension,
                            "event": error.event,
                            "error": error.error,
                        }));
                    }
                    let id = self.command_waiters.pop_front().flatten();
                    let handled = commands::disposition(commands::Disposition::Handled);
                    let response = success(id, "prompt", Some(handled));
                    // A custom message's run the command asked for starts within it in Pi
                    // 1.5.2: the answer follows its `before_agent_start`, before `agent_start`.
                    // The session notifications its actions caused (`mcp_servers_change`, a
                    // `model_select`) are heard first: Pi's handlers ran within the command.
                    if self.session.machine().holds_custom_idle_run() {
                        self.started_waiters
                            .push_back((response, started::Before::AgentStartOrError));
                    } else if self.session.machine().hearing_session() {
                        self.model_waiters.push(response);
                    } else {
                        self.respond(&response);
                    }
                }
                Reply::BusyPrompt(decided) => {
                    let id = self.busy_waiters.pop_front().flatten();
                    let response = match decided {
                        Ok(BusyAnswer::Handled) => {
                            let handled = commands::disposition(commands::Disposition::Handled);
                            success(id, "prompt", Some(handled))
                        }
                        // The run ended while its handlers decided: its own run starts in the
                        // step after, and the answer goes out before its `agent_start`.
                        Ok(BusyAnswer::Started) => {
                            let started = commands::disposition(commands::Disposition::Started);
                            self.started_waiters.push_back((
                                success(id, "prompt", Some(started)),
                                started::Before::AgentStart,
                            ));
                            continue;
                        }
                        Err(refusal) => failure(id, "prompt", refusal),
                    };
                    self.respond(&response);
                }
                // A replacement reads its answer where it asked (`replace.rs`).
                Reply::Replacing { cancelled } => self.replacement_answered(cancelled),
                Reply::Navigated(_) => {}
                Reply::CommandReplacing(carried) => self.command_replacing = Some(carried),
                Reply::UserBash(answer) => self.user_bash_answered(answer),
                Reply::ShutdownAsked => self.shutdown_asked = true,
            }
        }
    }

    /// Whether an extension asked the run to end and nothing needs the process any more, as
    /// Pi's RPC mode checks it: no command is being handled (a prompt's extension command, one
    /// waiting for its `input` handlers, a replacement) and the session is idle.
    fn may_shut_down(&self) -> bool {
        self.shutdown_asked
            && self.command_waiters.is_empty()
            && self.busy_waiters.is_empty()
            && self.pending_replace.is_empty()
            && self.command_replacing.is_none()
            && !self.session.machine().is_busy()
    }

    /// A model change answers once its `model_select` handlers are done (Pi awaits them).
    fn answer_model_waiters(&mut self) {
        if self.session.machine().hearing_session() {
            return;
        }
        for response in std::mem::take(&mut self.model_waiters) {
            self.respond(&response);
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::{replaces_session, REPLACING};

    /// The judgment made by parsing every line, as before the textual pre-check.
    fn parsed_replaces(line: &str) -> bool {
        let command = serde_json::from_str::<Value>(line).ok();
        let kind = command.as_ref().and_then(|c| c.get("type")?.as_str());
        kind.is_some_and(|kind| REPLACING.contains(&kind))
    }

    /// `text` as a JSON string's content, each character escaped as `\uXXXX` where `escaped`
    /// says so (and always where JSON needs it).
    fn encoded(text: &str, escaped: &[bool]) -> String {
        let mut out = String::new();
        for (i, c) in text.chars().enumerate() {
            let needed = c == '"' || c == '\\' || c < ' ';
            if needed || escaped.get(i).copied().unwrap_or(false) {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn an_escaped_or_spaced_replacing_command_is_seen() {
        for line in [
            r#"{"type":"new_\u0073ession"}"#,
            r#"{ "id" : 1 , "type" :	"\u0066ork" }"#,
            r#"{"type":"clon\u0065","sessionPath":"a\\b"}"#,
            r#"{"type":"switch_session","type":"prompt"}"#,
        ] {
            assert_eq!(replaces_session(line), parsed_replaces(line), "{line}");
        }
        assert!(replaces_session(r#"{"type":"new_\u0073ession"}"#));
        assert!(!replaces_session(r#"{"type":"prompt","message":"fork"}"#));
    }

    proptest! {
        /// The pre-check never changes the judgment: a line is taken for a replacing
        /// command exactly when parsing it says so, however its type is spelled.
        #[test]
        fn the_pre_check_agrees_with_parsing(
            kind in prop_oneof![
                proptest::sample::select(REPLACING.to_vec()).prop_map(str::to_owned),
                "[a-z_]{0,16}",
                any::<String>(),
            ],
            escaped in proptest::collection::vec(any::<bool>(), 0..16),
            space in "[ \t\r\n]{0,3}",
            message in any::<String>(),
        ) {
            let kind = encoded(&kind, &escaped);
            let message = encoded(&message, &[]);
            let line = format!(
                r#"{{{space}"message":{space}"{message}",{space}"type"{space}:{space}"{kind}"{space}}}"#
            );
            prop_assert_eq!(replaces_session(&line), parsed_replaces(&line));
        }
    }
}
