//! The driver: feeds a session machine's effects to an interpreter and the interpreter's answers
//! back to the machine, until the machine is idle. The interpreter decides what the answers are
//! (real HTTP and processes, or a recording); the machine decides everything else.

use std::cell::Cell;
use std::future::Future;

use pi_core::agent::Effect;
use pi_core::agent_session::{
    feed, Refused, Reply, SessionError, SessionInput, SessionMachine, SessionStep,
};
use pi_core::event::{AgentEvent, Event};

use tokio_util::sync::CancellationToken;

use crate::session::{SessionFile, StoreError};
use crate::tools::user_bash::BashResult;

/// Why an interpreter could not produce the next input.
#[derive(Debug, thiserror::Error)]
pub enum InterpretError {
    /// Nothing is in progress and no timer is set, so no input can ever come.
    #[error("the interpreter has nothing in progress and no timer to wait for")]
    Idle,
    /// The interpreter stopped the run: a replay met something its recording does not hold
    /// (the error says what), or a recording could not be written.
    #[error(transparent)]
    Halted(Box<dyn std::error::Error + Send + Sync>),
}

/// What reaches a front end (RPC mode) from outside rather than the machine: it decides what the
/// machine is then told. It passes through the interpreter like every input, so that a recorder
/// writes it down and a replayer supplies it.
#[derive(Clone, Debug, PartialEq)]
pub enum FrontEndInput {
    /// A line of the front end's input (an RPC command), as read; `with_next` when the read that
    /// brought it brought the next line too (Pi answers the lines of one read before the steers
    /// among them are queued).
    Stdin { line: String, with_next: bool },
    /// A user command (RPC `bash`) finished.
    UserBash(UserBash),
    /// An extension asked the front end's UI (Pi's `extension_ui_request` line, which RPC mode
    /// writes as it is): recorded, so that a replay writes it in its place with no extension
    /// running.
    ExtensionUi(serde_json::Value),
}

/// A finished user command (RPC `bash`), with the id of the command that asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct UserBash {
    /// The RPC command's `id`, as sent.
    pub id: Option<serde_json::Value>,
    /// The command line run.
    pub command: String,
    /// What it gave, or why it could not run.
    pub result: Result<BashResult, String>,
}

/// A user command (RPC `bash`) for the interpreter to run beside the session: Live runs it for
/// real, a replay answers it from its recording (or runs it, with live tools).
pub struct UserCommand {
    /// The RPC command's `id`, as sent.
    pub id: Option<serde_json::Value>,
    /// The command line to run.
    pub command: String,
    /// Stops it (RPC `abort_bash`, a signal).
    pub cancel: CancellationToken,
    /// Takes the result once the command finished; the front end then hands it to
    /// [`Interpreter::arrived`], which stamps and records it.
    pub done: Box<dyn FnOnce(UserBash) + Send>,
}

impl std::fmt::Debug for UserCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserCommand")
            .field("id", &self.id)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

/// What an interpreter holds for the front end now (see [`Interpreter::front_end`]).
#[derive(Clone, Debug, PartialEq)]
pub enum FrontEndNext {
    /// An input it holds (a recorded one), with its time.
    Input(u64, FrontEndInput),
    /// Nothing: the front end's own sources and the machine come next.
    Nothing,
    /// The front end's input is over: a replay's recording is used up, or the session is idle
    /// where the recording goes on (its end reports what was left).
    End,
    /// A signal stopped the recorded run here (its abort, asked by no command, comes next):
    /// the front end stops the run as on the signal, and exits with this code (the recorded).
    Signal(i32),
}

/// What a run left when it ended (or when its session is about to be replaced): what a
/// recording's outcome line says of it.
#[derive(Clone, Copy, Debug)]
pub struct RunEnding<'a> {
    /// The exit code.
    pub exit: i32,
    /// SHA-256 of everything the front end printed.
    pub stdout: &'a str,
    /// SHA-256 of the events, when the output does not show them (text mode).
    pub events: Option<&'a str>,
    /// What the front end printed, when its output keeps the text.
    pub stdout_text: Option<&'a str>,
    /// The events' text, when kept.
    pub events_text: Option<&'a str>,
    /// The session file the run wrote, if any.
    pub session_file: Option<&'a std::path::Path>,
}

/// Performs effects and reports their outcomes as inputs. Every input reaches the machine
/// through it, with the time the interpreter gives it: those from outside through
/// [`outside`](Self::outside), answers, timers and commands through [`next`](Self::next). That
/// one passage is what a recorder writes down and a replayer supplies. What reaches a front end
/// from outside passes through it too ([`arrived`](Self::arrived),
/// [`front_end`](Self::front_end)), so no front end reads a clock or writes a cassette.
pub trait Interpreter {
    /// Stamps an input from outside (a prompt, a command of the front end) with the time it
    /// happens; a replayer checks it against its recording and gives the recorded time.
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError>;

    /// Stamps what reached the front end from its own sources (a stdin line read, a user
    /// command finished) with the time it happened; a recorder writes it down. A replayer,
    /// whose front-end inputs are recorded, refuses it, but for the result of a user command
    /// it ran for real: that it keeps (`None`) and gives from [`front_end`](Self::front_end)
    /// where the recorded result was.
    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError>;

    /// The next front-end input the interpreter holds itself (a replay's recorded ones, in
    /// recorded order), before the front end's own sources and the machine; `busy` says whether
    /// the machine has something to wait for.
    fn front_end(&mut self, busy: bool) -> FrontEndNext;

    /// Runs a user command (RPC `bash`) beside the session; its result goes to the command's
    /// `done` when it finished, or never when the interpreter holds the result itself (a
    /// replay's recorded one comes from [`front_end`](Self::front_end)).
    fn run_user_command(&mut self, command: UserCommand);

    /// The run is over as `ending` says: a recorder writes the outcome and takes nothing
    /// more. Nothing to do for the others. An error says the record is incomplete (a write failed), once.
    fn end(&mut self, ending: &RunEnding<'_>) -> Result<(), InterpretError> {
        let _ = ending;
        Ok(())
    }

    /// The extensions were loaded again (a command's `ctx.reload()`): from now on `extensions`
    /// answer the hook points, and the tools `tools` holds run too (a tool no longer
    /// registered is no longer declared, so no call reaches it). Nothing to do for an
    /// interpreter that answers from a recording.
    fn reload_extensions(
        &mut self,
        extensions: crate::extension::ExtensionRegistry,
        tools: &crate::custom_tool::ToolRegistry,
    ) {
        let _ = (extensions, tools);
    }

    /// Whether the run reached the point where its recording was stopped by a signal (a
    /// replay's abort no command asked for): the exit code it stopped with. Nothing for the
    /// others, whose signals come from the process.
    fn stopped_here(&self) -> Option<i32> {
        None
    }

    /// Begins `effect`; its answers come from [`next`](Self::next).
    fn start(&mut self, effect: Effect);

    /// The next input with the time it happened: an answer to a started effect, a command from
    /// outside, or [`SessionInput::Wake`] once `wake_at` has passed.
    fn next(
        &mut self,
        wake_at: Option<u64>,
    ) -> impl Future<Output = Result<(u64, SessionInput), InterpretError>> + Send;
}

/// Why driving stopped early.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The machine refused the input (Pi's error text) or an answer broke its contract.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// No input could be had.
    #[error(transparent)]
    Interpret(#[from] InterpretError),
    /// The session file could not be written; the session itself is intact in memory.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A replay reached the point where the recorded run was stopped by a signal: the front end
    /// stops it the same way and exits with the recorded code.
    #[error("the recorded run was stopped by a signal here (exit {0})")]
    Stopped(i32),
}

/// What a drive produced besides events.
#[derive(Debug, Default)]
pub struct Driven {
    /// Replies of operations that finished (a manual compaction's result).
    pub replies: Vec<Reply>,
    /// Commands from outside that the machine refused while running (e.g. a prompt while
    /// streaming without a behaviour), with Pi's error texts. The run goes on.
    pub refused: Vec<SessionError>,
}

/// Feeds `input` to `machine`, then answers its effects through `io` until the machine is idle.
/// Events go to `on_event` as they happen; the session file receives new entries after every
/// step. Refusing `input` itself is an error; refusing a later command is reported in
/// [`Driven::refused`]. This is the loop every run goes through whatever its interpreter
/// (print mode, replays, imports, chaos runs); RPC mode, which reads stdin meanwhile, calls
/// [`submit`] and [`advance`] from a loop of its own.
pub async fn drive<I: Interpreter>(
    machine: &mut SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    input: SessionInput,
    on_event: impl FnMut(&Event),
) -> Result<Driven, DriveError> {
    let busy = |m: &SessionMachine, _: &Driven| m.is_busy();
    drive_while(machine, io, file, input, on_event, busy).await
}

/// [`drive`] for print mode's prompts: it stops once only the wake that starts runs an
/// extension asked for while idle is left, as Pi 1.5.2's print mode disposes the session once
/// its prompts are answered, or, for a prompt that came before that wake, once it is refused
/// and the run it started has its `agent_start` (Pi starts those runs during the prompt's
/// `input` handlers, and its print mode fails there).
pub async fn drive_to_end<I: Interpreter>(
    machine: &mut SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    input: SessionInput,
    mut on_event: impl FnMut(&Event),
) -> Result<Driven, DriveError> {
    let started = Cell::new(false);
    let on_event = |event: &Event| {
        if matches!(event, Event::Agent(AgentEvent::AgentStart)) {
            started.set(true);
        }
        on_event(event);
    };
    let busy = |m: &SessionMachine, driven: &Driven| {
        let failed = refused_prompt(&driven.replies).is_some() && started.get();
        m.is_busy() && !m.waits_only_for_idle_runs() && !failed
    };
    drive_while(machine, io, file, input, on_event, busy).await
}

/// The error of a prompt refused after its `input` handlers ran, if `replies` hold one.
pub fn refused_prompt(replies: &[Reply]) -> Option<&str> {
    replies.iter().find_map(|reply| match reply {
        Reply::BusyPrompt(Err(error)) => Some(error.as_str()),
        _ => None,
    })
}

async fn drive_while<I: Interpreter>(
    machine: &mut SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    input: SessionInput,
    mut on_event: impl FnMut(&Event),
    busy: impl Fn(&SessionMachine, &Driven) -> bool,
) -> Result<Driven, DriveError> {
    let mut driven = Driven {
        replies: submit(machine, io, file, input, &mut on_event)?,
        refused: Vec::new(),
    };
    while busy(machine, &driven) {
        if let Some(code) = io.stopped_here() {
            return Err(DriveError::Stopped(code));
        }
        match advance(machine, io, file, &mut on_event).await? {
            Ok(replies) => driven.replies.extend(replies),
            Err(error) => driven.refused.push(error),
        }
    }
    Ok(driven)
}

/// Feeds one input now and carries out the step (events, file, effects); returns the step's
/// replies. For front ends that interleave their own work with a run (RPC mode).
pub fn submit<I: Interpreter>(
    machine: &mut SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    input: SessionInput,
    mut on_event: impl FnMut(&Event),
) -> Result<Vec<Reply>, DriveError> {
    let (now, input) = io.outside(input)?;
    let step = feed(machine, now, input).map_err(Refused::into_error)?;
    let mut replies = Vec::new();
    apply(machine, io, file, step, &mut on_event, &mut replies)?;
    Ok(replies)
}

/// Waits for the interpreter's next input and carries out its step. A command from outside that
/// the machine refuses comes back as `Ok(Err(..))`; the run goes on.
pub async fn advance<I: Interpreter>(
    machine: &mut SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    mut on_event: impl FnMut(&Event),
) -> Result<Result<Vec<Reply>, SessionError>, DriveError> {
    let (now, input) = io.next(machine.wake_at()).await?;
    let step = match feed(machine, now, input) {
        Ok(step) => step,
        Err(Refused::Command(error)) => return Ok(Err(error)),
        Err(Refused::Answer(error)) => return Err(error.into()),
    };
    let mut replies = Vec::new();
    apply(machine, io, file, step, &mut on_event, &mut replies)?;
    Ok(Ok(replies))
}

fn apply<I: Interpreter>(
    machine: &SessionMachine,
    io: &mut I,
    file: &mut SessionFile,
    step: SessionStep,
    on_event: &mut impl FnMut(&Event),
    replies: &mut Vec<Reply>,
) -> Result<(), DriveError> {
    // The file is written before the step's events go out, as Pi appends an entry before any
    // later event: a client that reads the file on `agent_settled` finds it complete.
    let written = if step.persist {
        file.flush(machine.tree())
    } else {
        Ok(())
    };
    // A failed write still lets the events out and starts the effects (the machine counts them
    // as in flight: unstarted, the run would wait for them forever), then stops the run; the
    // session is intact in memory.
    for event in &step.events {
        on_event(event);
    }
    for effect in step.effects {
        io.start(effect);
    }
    replies.extend(step.replies);
    written?;
    Ok(())
}
