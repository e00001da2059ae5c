//! Print mode (Pi's `runPrintMode`): the prompts run one after the other in one session, and the
//! last one's end is the run's (a run an extension's command asked for while idle never starts,
//! and a prompt after such a command fails, as Pi's does);
//! text mode then prints the last answer's text (or its error, exit 1), json mode prints the session
//! header and every event as a line (text mode digests them, when a recording or a check
//! compares them).

use std::collections::VecDeque;
use std::io::Write;

use pi_core::agent::hooks::{CommandAnswer, CommandAsk, HookEvent};
use pi_core::agent_session::{Reply, SessionInput};
use pi_core::event::{AgentEvent, Event, SessionEvent};
use pi_core::message::{AgentMessage, ContentBlock, ImageContent, StopReason};
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::{refused_prompt, DriveError, Driven, Interpreter};
use pi_effects::extension::sidecar::ExtensionHost;

use crate::args::Mode;
use crate::output::Stdout;
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
/// unless it was recorded by a program that replaced its session (the SDK's `new_session` and
/// the others), whose replay prints each session in turn as the program's recording printed
/// them.
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

/// Runs `inputs` one after the other, each until the session is idle, printing to `out`;
/// returns the exit code, or the error that stopped the run (printed by the caller). `host`
/// runs the extensions, which a command's `ctx.reload()` loads again.
pub async fn run<I: Interpreter + Send>(
    session: &mut AgentSession<I>,
    mode: Mode,
    inputs: Vec<SessionInput>,
    out: &mut Stdout,
    host: Option<&ExtensionHost>,
) -> Result<i32, DriveError> {
    run_part(session, mode, inputs, out, Part::WHOLE, host).await
}

/// [`run`] for `part` of a run that went on across session replacements.
pub async fn run_part<I: Interpreter + Send>(
    session: &mut AgentSession<I>,
    mode: Mode,
    inputs: Vec<SessionInput>,
    out: &mut Stdout,
    part: Part,
    host: Option<&ExtensionHost>,
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
    while let Some(input) = inputs.pop_front() {
        let reloaded = input.leaves_for_reload();
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
                if reloaded {
                    reload_extensions(host, out);
                }
                if !part.recorded {
                    for asked in command_asked(&driven.replies).into_iter().rev() {
                        inputs.push_front(asked);
                    }
                }
                if let Some(error) = refused_prompt(&driven.replies) {
                    // Pi's print mode fails here and disposes the session: the run the prompt
                    // met is aborted unprinted (its subscription is gone), then shut down.
                    out.flush();
                    let _ = writeln!(std::io::stderr(), "{error}");
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
                out.flush();
                eprintln!("{error}");
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

/// What print mode says to a command's `ctx.newSession`, `ctx.fork` or `ctx.switchSession`
/// (the call throws it): Pi's print mode goes on in the new session; this one does not build
/// one yet.
const NO_REPLACEMENT: &str =
    "Replacing the session from an extension command is not supported in print mode";

/// What carries out what a command left for the front end, if one did: a `ctx.reload()`
/// (Pi's `AgentSession.reload`: the extensions hear their shutdown with reason `reload`, are
/// loaded again, and the command goes on once the new load heard its start), or a
/// replacement, refused. A replay takes these from its recording.
fn command_asked(replies: &[Reply]) -> Vec<SessionInput> {
    let asked = replies.iter().find_map(|reply| match reply {
        Reply::CommandReplacing(carried) => Some(carried),
        _ => None,
    });
    let Some(carried) = asked else {
        return Vec::new();
    };
    let resume = |answer| SessionInput::ResumeCommand {
        name: carried.name.clone(),
        run: carried.run,
        answer,
    };
    if carried.ask != CommandAsk::Reload {
        return vec![resume(CommandAnswer::Error(NO_REPLACEMENT.into()))];
    }
    vec![
        SessionInput::leave_for_reload(),
        SessionInput::Reloaded,
        resume(CommandAnswer::Result(serde_json::Value::Null)),
    ]
}

/// Loads the extensions again once they heard the reload's shutdown (their old contexts are
/// stale from then on); a host that fails to is said on stderr, the session going on.
fn reload_extensions(host: Option<&ExtensionHost>, out: &mut Stdout) {
    if let Some(Err(error)) = host.map(ExtensionHost::reload) {
        out.flush();
        eprintln!("{error}");
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
    out.flush();
    let _ = writeln!(std::io::stderr(), "Extension error ({extension}): {error}");
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
        let _ = writeln!(std::io::stderr(), "{message}");
        return 1;
    }
    for block in &last.content {
        if let ContentBlock::Text(text) = block {
            out.text_line(&text.text);
        }
    }
    if last.stop_reason == StopReason::Length {
        out.flush();
        let _ = writeln!(std::io::stderr(), "{TRUNCATED}");
        return 1;
    }
    0
}
