//! Print mode (Pi's `runPrintMode`): the prompts run one after the other in one session; text
//! mode then prints the last answer's text (or its error, exit 1), json mode prints the session
//! header and every event as a line.

use std::io::Write;

use pi_core::agent_session::SessionInput;
use pi_core::event::Event;
use pi_core::message::{AgentMessage, ContentBlock, ImageContent, StopReason};
use pi_effects::agent_session::AgentSession;

use crate::args::Mode;
use crate::output::Stdout;
use crate::signals::{stop, Signals};

/// Runs `prompts` (the first with `images`) and returns the exit code.
pub async fn run(
    session: &mut AgentSession,
    mode: Mode,
    prompts: Vec<String>,
    images: Vec<ImageContent>,
) -> i32 {
    let mut out = Stdout::new();
    if mode == Mode::Json {
        out.json_line(session.machine().tree().header());
    }
    let mut images = Some(images);
    let mut signals = Signals::new();
    for text in prompts {
        let input = SessionInput::Prompt {
            text,
            images: images.take().unwrap_or_default(),
            streaming_behavior: None,
        };
        let mut print = |event: &Event| {
            if mode == Mode::Json {
                out.json_line(event);
            }
        };
        let result = tokio::select! {
            result = session.run(input, &mut print) => result,
            code = signals.received() => {
                stop(session, &mut print).await;
                out.flush();
                return code;
            }
        };
        if let Err(error) = result {
            out.flush();
            eprintln!("{error}");
            return 1;
        }
    }
    let code = if mode == Mode::Text {
        print_last_answer(session, &mut out)
    } else {
        0
    };
    out.flush();
    code
}

/// Text mode's ending: the last message's text blocks, one per line, or its error on stderr.
fn print_last_answer(session: &AgentSession, out: &mut Stdout) -> i32 {
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
    0
}
