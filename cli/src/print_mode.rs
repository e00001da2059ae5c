//! Print mode (Pi's `runPrintMode`): the prompts run one after the other in one session (or,
//! once an extension command replaced it, in the new one: [`crate::replacement`]), and the
//! last one's end is the run's (a run an extension's command asked for while idle never starts,
//! and a prompt after such a command fails, as Pi's does);
//! text mode then prints the last answer's text (or its error, exit 1), json mode prints the session
//! header and every event as a line (text mode digests them, when a recording or a check
//! compares them).

use std::collections::VecDeque;

use pi_cassettes::Divergence;
use pi_core::agent::hooks::{CommandAnswer, CommandAsk, HookEvent};
use pi_core::agent_session::{Reply, SessionInput};
use pi_core::event::{AgentEvent, Event, SessionEvent};
use pi_core::message::{AgentMessage, ContentBlock, ImageContent, StopReason};
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::{refused_prompt, DriveError, Driven, InterpretError, Interpreter};

use crate::args::Mode;
use crate::output::Stdout;
use crate::replacement::{
    self, asked_by_command, Leaves, Refused, Reopen, Replacer, NOT_WHILE_REPLAYING,
};
use crate::setup::Runtime;
use crate::signals::{stop, Signals};

/// The prompts of a print-mode run: `texts` in order, the first with `images`.
pub fn prompts(texts: Vec<String>, images: Vec<ImageContent>) -> Vec<SessionInput> {
    let mut images = Some(images);
    texts
        .into_iter()
        .map(|text| SessionInput::Prompt {
            text,
            images: images.take().unwrap_or_default(),
            streaming_behavior: None,
        })
        .collect()
}

/// Which of a run's sessions a print-mode run prints, and whose inputs: a run is one session,
/// unless an extension command replaced it (or a program did, through the SDK's
/// `new_session` and the others), whose replay prints each session in turn as the recording
/// printed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The run's first session: its session header is printed first.
    pub first: bool,
    /// The run's last session: it ends the run (text mode's last answer). An earlier one ends
    /// where it was replaced.
    pub last: bool,
    /// The inputs are a recording's, each where it was recorded, the extensions' start and end
    /// among them (or not, where a program never told them). Otherwise the extensions are
    /// bound before the inputs and told the end after them, as Pi's print mode does.
    pub recorded: bool,
}

impl Part {
    /// A run of one session, as print mode runs it.
    pub const WHOLE: Part = Part {
        first: true,
        last: true,
        recorded: false,
    };
}

/// How a print-mode run carries out what an extension command asks of the front end: the
/// runtime (its extension host, which a command's `ctx.reload()` loads again, and what a new
/// session is built from) and how the next session opens (`None`: a hybrid run, which refuses
/// to replace its session).
pub struct Replacing<'a, I: Leaves> {
    pub runtime: &'a Runtime,
    pub reopen: Option<Reopen<I>>,
}

/// Runs `inputs` one after the other, each until the session is idle, printing to `out`;
/// returns the exit code, or the error that stopped the run (printed by the caller). A
/// command's reload or replacement is carried out as `replacing` says; `session` is the one
/// the run ended in.
pub async fn run<I: Leaves>(
    session: &mut AgentSession<I>,
    mode: Mode,
    inputs: Vec<SessionInput>,
    out: &mut Stdout,
    replacing: Replacing<'_, I>,
) -> Result<i32, DriveError> {
    run_part(session, mode, inputs, out, Part::WHOLE, Some(&replacing)).await
}

/// [`run`] for `part` of a run that went on across session replacements (a recorded part
/// replays what its recording says was carried out: no `replacing`).
pub async fn run_part<I: Leaves>(
    session: &mut AgentSession<I>,
    mode: Mode,
    inputs: Vec<SessionInput>,
    out: &mut Stdout,
    part: Part,
    replacing: Option<&Replacing<'_, I>>,
) -> Result<i32, DriveError> {
    let mut inputs = VecDeque::from(inputs);
    if mode == Mode::Json && part.first {
        out.json_line(session.machine().tree().header());
    }
    // Pi binds the extensions (`session_start`) after the header, before the first prompt.
    if !part.recorded {
        inputs.retain(|input| !matches!(input, SessionInput::Start | SessionInput::Shutdown));
        if part.first && session.machine().hears_start() {
            inputs.push_front(SessionInput::Start);
        }
    }
    let mut signals = Signals::new();
    while let Some(mut input) = inputs.pop_front() {
        // A command's reload: the extensions, told their shutdown, are loaded again now.
        if let (SessionInput::Reloaded(None), false, Some(replacing)) =
            (&input, part.recorded, replacing)
        {
            input = reload_extensions(replacing.runtime, session, out);
        }
        // Pi subscribes its printer once the extensions are bound: what `session_start`'s
        // handlers caused is not printed, but their errors are.
        let binding = !pi_cassettes::printed::prints_events(&input);
        let mut print = |event: &Event| print_event(out, mode, event, binding);
        let result = tokio::select! {
            result = run_input(session, input, &mut print) => result,
            code = signals.received() => Err(DriveError::Stopped(code)),
        };
        match result {
            // A signal stopped the run now, or (a replay) the recorded run was stopped here:
            // stopped the same way.
            Err(DriveError::Stopped(code)) => {
                let mut print = |event: &Event| print_event(out, mode, event, binding);
                stop(session, &mut print).await;
                shut_down(session, mode, out, &mut signals).await;
                out.flush();
                return Ok(code);
            }
            Err(error) => {
                out.flush();
                return Err(error);
            }
            Ok(driven) => {
                report_command_errors(&driven.replies, out);
                if let (false, Some(replacing)) = (part.recorded, replacing) {
                    let asked = command_asked(session, &driven.replies, mode, out, replacing);
                    match Box::pin(asked).await? {
                        Asked::Inputs(asked) => {
                            for asked in asked.into_iter().rev() {
                                inputs.push_front(asked);
                            }
                        }
                        // A replay in place ends where the recorded run went on in another
                        // session, as its caller says.
                        Asked::Ended => {
                            out.flush();
                            return Ok(0);
                        }
                    }
                }
                if let Some(error) = refused_prompt(&driven.replies) {
                    // Pi's print mode fails here and disposes the session: the run the prompt
                    // met is aborted unprinted (its subscription is gone), then shut down.
                    out.say(error);
                    stop(session, &mut |_: &Event| {}).await;
                    shut_down(session, mode, out, &mut signals).await;
                    out.flush();
                    return Ok(1);
                }
            }
        }
    }
    if !part.last {
        out.flush();
        return Ok(0);
    }
    let code = if mode == Mode::Text {
        print_last_answer(session, out)
    } else {
        0
    };
    // Pi's runtime disposes the session once print mode returned and its printer is gone:
    // `session_shutdown`, whose handlers' errors alone are said.
    if !part.recorded && session.machine().hears(HookEvent::SessionShutdown) {
        let mut print = |event: &Event| print_event(out, mode, event, true);
        let ended = session.run_to_end(SessionInput::Shutdown, &mut print).await;
        out.flush();
        ended?;
    }
    out.flush();
    Ok(code)
}

/// After a signal stopped the run: `session_shutdown` for the extensions that handle it, as
/// Pi's disposal on SIGTERM and SIGHUP (whose handlers' errors alone are said); a second
/// signal does not wait for them (Pi exits at once on it).
async fn shut_down<I: Interpreter + Send>(
    session: &mut AgentSession<I>,
    mode: Mode,
    out: &mut Stdout,
    signals: &mut Signals,
) {
    if !session.machine().hears(HookEvent::SessionShutdown) {
        return;
    }
    let mut print = |event: &Event| print_event(out, mode, event, true);
    tokio::select! {
        told = session.run_to_end(SessionInput::Shutdown, &mut print) => {
            if let Err(error) = told {
                out.say(error);
            }
        }
        _ = signals.received() => {}
    }
}

/// Prints one of the session's events in `mode`: an extension's error as Pi's print mode says
/// it, on stderr; the rest as json lines or as text mode digests them, unless `errors_only`.
fn print_event(out: &mut Stdout, mode: Mode, event: &Event, errors_only: bool) {
    if let Event::Session(SessionEvent::ExtensionError {
        extension_path,
        error,
        ..
    }) = event
    {
        report_extension_error(out, extension_path, error);
    } else if !errors_only {
        match mode {
            Mode::Json => out.json_line(event),
            _ => out.event_line(event),
        }
    }
}

/// Runs one input until the session is idle but for a run an extension asked for while idle
/// (where Pi 1.5.2's print mode ends, before it starts). A prompt that comes before such a run
/// starts it and is refused (Pi starts the run during the prompt's `input` handlers): its
/// drive ends at the run's `agent_start`, where Pi's prompt fails; nothing from there printed.
async fn run_input<I: Interpreter + Send>(
    session: &mut AgentSession<I>,
    input: SessionInput,
    mut print: impl FnMut(&Event),
) -> Result<Driven, DriveError> {
    let meets_idle_runs = matches!(&input, SessionInput::Prompt { text, streaming_behavior: None, .. }
        if session.machine().prompt_meets_idle_runs(text));
    if !meets_idle_runs {
        return session.run_to_end(input, print).await;
    }
    let mut started = false;
    let print_before_start = |event: &Event| {
        started |= matches!(event, Event::Agent(AgentEvent::AgentStart));
        if !started {
            print(event);
        }
    };
    session.run_to_end(input, print_before_start).await
}

/// What carrying out a command's ask left to do.
enum Asked {
    /// These inputs next (none where no command asked anything).
    Inputs(Vec<SessionInput>),
    /// Nothing: the run ends here (a replay in place, at a replacement).
    Ended,
}

/// Carries out what a command left for the front end, if one did: a `ctx.reload()` (Pi's
/// `AgentSession.reload`: the extensions hear their shutdown with reason `reload`, are loaded
/// again, and the command goes on once the new load heard its start), or a `ctx.newSession`,
/// `ctx.fork` or `ctx.switchSession`: the session replaced as Pi's runtime replaces it (the
/// new one's extensions bound once, unprinted, its printer subscribed after), and the command
/// resumed in the new one, where the run goes on (the later prompts are the new session's).
/// A replacement that fails resumes the command in the old session with the error.
async fn command_asked<I: Leaves>(
    session: &mut AgentSession<I>,
    replies: &[Reply],
    mode: Mode,
    out: &mut Stdout,
    replacing: &Replacing<'_, I>,
) -> Result<Asked, DriveError> {
    let asked = replies.iter().find_map(|reply| match reply {
        Reply::CommandReplacing(carried) => Some(carried),
        _ => None,
    });
    let Some(carried) = asked else {
        return Ok(Asked::Inputs(Vec::new()));
    };
    let resume = |answer| SessionInput::ResumeCommand {
        name: carried.name.clone(),
        run: carried.run,
        answer,
    };
    if carried.ask == CommandAsk::Reload {
        return Ok(Asked::Inputs(vec![
            SessionInput::leave_for_reload(),
            SessionInput::Reloaded(None),
            resume(CommandAnswer::Result(serde_json::Value::Null)),
        ]));
    }
    let runtime = replacing.runtime;
    let Some(asked) = asked_by_command(&carried.ask, session, &runtime.cwd) else {
        return Ok(Asked::Inputs(vec![resume(CommandAnswer::Error(
            "Unknown command".into(),
        ))]));
    };
    let refused = |message| Ok(Asked::Inputs(vec![resume(CommandAnswer::Error(message))]));
    let Some(reopen) = &replacing.reopen else {
        return refused(NOT_WHILE_REPLAYING.into());
    };
    let (choice, reason) = match asked {
        Ok(asked) => asked,
        Err(message) => return refused(message),
    };
    let reopened = match reopen(runtime, &choice, session.interpreter()) {
        Ok(Some(reopened)) => reopened,
        Ok(None) => return Ok(Asked::Ended),
        Err(Refused::Failed(message)) => return refused(message),
        Err(Refused::Diverged(divergence)) => return Err(diverged(divergence)),
    };
    let mut front = PrintReplacing {
        session,
        runtime,
        out,
        mode,
    };
    // Boxed: the replacement's drives would make every future that awaits it larger.
    Box::pin(replacement::replace(&mut front, reopened, reason, &[false])).await?;
    let replaced = serde_json::json!({ "cancelled": false });
    Ok(Asked::Inputs(vec![resume(CommandAnswer::Replaced(
        replaced,
    ))]))
}

/// A replay's divergence as the error that stops a drive.
fn diverged(divergence: Divergence) -> DriveError {
    DriveError::Interpret(InterpretError::Halted(Box::new(divergence)))
}

/// Print mode while it replaces its session: the session's notifications printed as a
/// print-mode run prints them (the session's start and end unprinted but for their errors).
struct PrintReplacing<'a, I: Leaves> {
    session: &'a mut AgentSession<I>,
    runtime: &'a Runtime,
    out: &'a mut Stdout,
    mode: Mode,
}

impl<I: Leaves> Replacer for PrintReplacing<'_, I> {
    type Io = I;
    type Stop = DriveError;

    fn runtime(&self) -> &Runtime {
        self.runtime
    }

    fn session(&mut self) -> &mut AgentSession<I> {
        self.session
    }

    fn runtime_and_session(&mut self) -> (&Runtime, &mut AgentSession<I>) {
        (self.runtime, self.session)
    }

    async fn tell(&mut self, input: SessionInput, print_all: bool) -> Result<(), DriveError> {
        let errors_only = !(print_all && pi_cassettes::printed::prints_events(&input));
        let (out, mode) = (&mut *self.out, self.mode);
        let told = self
            .session
            .run_to_end(input, |event: &Event| {
                print_event(out, mode, event, errors_only)
            })
            .await?;
        report_command_errors(&told.replies, out);
        Ok(())
    }

    fn diverged(divergence: Divergence) -> DriveError {
        diverged(divergence)
    }

    fn say(&mut self, error: &dyn std::fmt::Display) {
        self.out.say(error);
    }
}

/// Loads the extensions again once they heard the reload's shutdown (their old contexts are
/// stale from then on): the input telling the session what they registered
/// ([`crate::reload`]); a host that fails to is said on stderr, the session going on with the
/// registrations it had.
fn reload_extensions<I: Leaves>(
    runtime: &Runtime,
    session: &mut AgentSession<I>,
    out: &mut Stdout,
) -> SessionInput {
    match crate::reload::reload(runtime, session) {
        Ok((input, _)) => input,
        Err(error) => {
            out.say(error);
            SessionInput::Reloaded(None)
        }
    }
}

/// Pi 1.5.2's print mode's line on stderr for each error an extension command threw.
fn report_command_errors(replies: &[Reply], out: &mut Stdout) {
    for reply in replies {
        if let Reply::CommandRan { errors } = reply {
            for error in errors {
                report_extension_error(out, &error.extension, &error.error);
            }
        }
    }
}

/// Pi 1.5.2's print mode's line on stderr for an error an extension's handler threw, after
/// what stdout already holds.
fn report_extension_error(out: &mut Stdout, extension: &str, error: &str) {
    out.say(format_args!("Extension error ({extension}): {error}"));
}

/// What Pi 1.5's print mode says on stderr when the last answer was cut at the output limit.
const TRUNCATED: &str = "Response was truncated: the model reached its output token limit.";

/// Text mode's ending: the last message's text blocks, one per line, or its error on stderr
/// (exit 1); an answer cut at the output limit prints its text, then says so (exit 1).
fn print_last_answer<I: Interpreter>(session: &AgentSession<I>, out: &mut Stdout) -> i32 {
    let Some(AgentMessage::Assistant(last)) = session.machine().agent().messages().last() else {
        return 0;
    };
    if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) {
        out.flush();
        let reason = match last.stop_reason {
            StopReason::Aborted => "aborted",
            _ => "error",
        };
        let message = last
            .error_message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("Request {reason}"));
        out.say(message);
        return 1;
    }
    for block in &last.content {
        if let ContentBlock::Text(text) = block {
            out.text_line(&text.text);
        }
    }
    if last.stop_reason == StopReason::Length {
        out.say(TRUNCATED);
        return 1;
    }
    0
}
