//! Recording: [`Record`] wraps any interpreter and writes down every input that reaches the
//! machine and every effect it asks for; [`recording_transport`] wraps each model call's
//! transport and writes down its requests and raw response bytes with their times.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pi_core::agent::{Effect, Input};
use pi_core::agent_session::SessionInput;
use pi_core::message::ContentBlock;
use pi_effects::clock::Clock;
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, RunEnding, UserCommand,
};
use pi_effects::live::{CallStart, CallTransportFor};
use pi_providers::transport::{BoxFuture, HttpResponse, HttpTransport, TransportError};
use pi_providers::HttpRequest;
use serde_json::Value;

use crate::convert::recorded_transport_error;
use crate::format::{
    Line, RecordedEffect, RecordedEnd, RecordedInput, RecordedOutcome, ReplacedSession,
    SessionLeft, SessionStart, MAX_KEPT_TEXT,
};
use crate::hook_redact::{redacted_answer, redacted_effect};
use crate::write::{Recorder, RequestParts};

/// An interpreter whose every input and effect is written to a cassette as it happens.
#[derive(Debug)]
pub struct Record<I> {
    inner: I,
    recorder: Recorder,
}

impl<I> Record<I> {
    /// Records what `inner` does into `recorder`.
    pub fn new(inner: I, recorder: Recorder) -> Self {
        Record { inner, recorder }
    }

    /// The recorder (for output digested as the recording redacts it).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// `inner` recorded into the same cassette: the interpreter of the session that replaces
    /// this one's, once [`end`](Interpreter::end) ended the cassette (so nothing of it is
    /// written).
    pub fn beside<J>(&self, inner: J) -> Record<J> {
        Record::new(inner, self.recorder.clone())
    }

    /// Ends this session's part of the recording at its replacement. What the session
    /// started is dropped first (a call it abandoned ends before the line), then a `replaced`
    /// line says how it left its file (`left_file`, as it is now) and what the next session
    /// was built from (`config`, `session`: as a header holds them). The next session's
    /// interpreter records on into the same cassette ([`beside`](Self::beside)).
    pub fn replaced(
        self,
        reason: &str,
        left_file: Option<&Path>,
        config: Value,
        session: SessionStart,
    ) {
        let Record { inner, recorder } = self;
        drop(inner);
        let left = session_left(&recorder, left_file);
        recorder.write(Line::Replaced(Box::new(ReplacedSession {
            reason: reason.to_owned(),
            left,
            config,
            session,
        })));
    }

    /// The interpreter recorded.
    pub fn inner_mut(&mut self) -> &mut I {
        &mut self.inner
    }

    /// The interpreter recorded, once the run is over.
    pub fn into_inner(self) -> I {
        self.inner
    }
}

/// The outcome line of a run that ended as `ending` says. The session file's digest and text
/// are of the text as a replay writes it: with the recording's placeholders for its secrets.
/// The output's texts are redacted already (as digested, line by line), and leave out the
/// `message_update` lines when the model streamed a secret in pieces.
fn outcome(recorder: &Recorder, ending: &RunEnding<'_>) -> RecordedOutcome {
    let SessionLeft {
        session,
        session_text,
    } = session_left(recorder, ending.session_file);
    RecordedOutcome {
        exit: ending.exit,
        stdout: ending.stdout.to_owned(),
        session,
        events: ending.events.map(str::to_owned),
        stdout_text: kept(ending.stdout_text),
        events_text: kept(ending.events_text),
        session_text,
        updates_omitted: recorder.rewrote_streamed_secret(),
    }
}

/// The digest (and text, when kept) of the session file at `path` as a replay writes it: with
/// the recording's placeholders for its secrets.
fn session_left(recorder: &Recorder, path: Option<&Path>) -> SessionLeft {
    let session =
        path.and_then(|path| std::fs::read(path).ok()).map(|bytes| {
            match String::from_utf8(bytes) {
                Ok(text) => Ok(recorder.redact_text(&text)),
                Err(e) => Err(e.into_bytes()),
            }
        });
    match session {
        Some(Ok(text)) => SessionLeft {
            session: Some(crate::sha256_hex(text.as_bytes())),
            session_text: kept(Some(&text)),
        },
        Some(Err(bytes)) => SessionLeft {
            session: Some(crate::sha256_hex(&bytes)),
            session_text: None,
        },
        None => SessionLeft {
            session: None,
            session_text: None,
        },
    }
}

/// `text`, when an outcome line keeps it.
fn kept(text: Option<&str>) -> Option<String> {
    text.filter(|t| t.len() <= MAX_KEPT_TEXT).map(str::to_owned)
}

/// Why a recording is incomplete.
#[derive(Debug, thiserror::Error)]
#[error("the recording is incomplete: {0}")]
struct Incomplete(String);

fn recorded(input: &SessionInput) -> Result<Box<RecordedInput>, InterpretError> {
    crate::convert::recorded_input(input)
        .map(Box::new)
        .map_err(|e| InterpretError::Halted(Box::new(e)))
}

/// The cassette line of a front-end input: `stdin`, or `user_bash` with the RPC response's data
/// or the error.
fn front_end_line(t: u64, input: &FrontEndInput) -> Line {
    match input {
        FrontEndInput::Stdin { line, with_next } => Line::Stdin {
            t,
            line: line.clone(),
            with_next: *with_next,
        },
        FrontEndInput::ExtensionUi(request) => Line::ExtensionUi {
            t,
            request: request.clone(),
        },
        FrontEndInput::UserBash(bash) => {
            let (result, error) = match &bash.result {
                Ok(result) => (Some(result.to_json()), None),
                Err(error) => (None, Some(error.clone())),
            };
            Line::UserBash {
                t,
                id: bash.id.clone(),
                command: bash.command.clone(),
                result,
                error,
            }
        }
    }
}

impl<I: Interpreter + Send> Interpreter for Record<I> {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        let (t, input) = self.inner.outside(input)?;
        let line = Line::Outside {
            t,
            input: recorded(&input)?,
        };
        self.recorder.write(line);
        Ok((t, input))
    }

    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        let arrived = self.inner.arrived(input)?;
        if let Some((t, input)) = &arrived {
            self.recorder.write(front_end_line(*t, input));
        }
        Ok(arrived)
    }

    fn front_end(&mut self, busy: bool) -> FrontEndNext {
        let next = self.inner.front_end(busy);
        if let FrontEndNext::Input(t, input) = &next {
            self.recorder.write(front_end_line(*t, input));
        }
        next
    }

    /// Writes the outcome and ends the cassette, the first time; says whether a write failed.
    fn end(&mut self, ending: &RunEnding<'_>) -> Result<(), InterpretError> {
        self.inner.end(ending)?;
        if self.recorder.is_closed() {
            return Ok(());
        }
        self.recorder
            .write(Line::Outcome(outcome(&self.recorder, ending)));
        self.recorder.close();
        match self.recorder.failure() {
            Some(failure) => Err(InterpretError::Halted(Box::new(Incomplete(failure)))),
            None => Ok(()),
        }
    }

    /// Run by the interpreter recorded; its result is written when it arrives.
    fn run_user_command(&mut self, command: UserCommand) {
        self.inner.run_user_command(command);
    }

    fn reload_extensions(
        &mut self,
        extensions: pi_effects::extension::ExtensionRegistry,
        tools: &pi_effects::custom_tool::ToolRegistry,
    ) {
        self.inner.reload_extensions(extensions, tools);
    }

    fn start(&mut self, effect: Effect) {
        let redacted = redacted_effect(&self.recorder, &effect);
        let mut recorded = crate::convert::recorded_effect(redacted.as_ref().unwrap_or(&effect));
        // The state's digest as a replay computes it: over the state with the secrets the
        // recording replaces replaced.
        if let (
            RecordedEffect::Hook { state: digest, .. },
            Effect::Hook {
                state: Some(state), ..
            },
        ) = (&mut recorded, &effect)
        {
            *digest = Some(crate::convert::state_digest(state, |json| {
                self.recorder.redact_text(json)
            }));
        }
        self.recorder.write(Line::Effect { effect: recorded });
        self.inner.start(effect);
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        let (t, input) = self.inner.next(wake_at).await?;
        let input = shown_update(&self.recorder, input);
        let redacted = redacted_answer(&self.recorder, &input);
        let line = match redacted.as_ref().unwrap_or(&input) {
            SessionInput::Answer(Input::Model { call, .. }) => Line::Event { t, call: call.0 },
            SessionInput::Wake => Line::Wake { t },
            answer @ SessionInput::Answer(_) => Line::Answer {
                t,
                input: recorded(answer)?,
            },
            command => Line::Command {
                t,
                input: recorded(command)?,
            },
        };
        self.recorder.write(line);
        Ok((t, input))
    }
}

/// A tool's update as the recorded run is given it: a text of its output so far that ends in
/// the middle of a key ends with the key's placeholder instead (the next update or the result
/// holds the key whole, which every line replaces). The run shows the update as the cassette
/// holds it, so that a replay prints what the run printed.
fn shown_update(recorder: &Recorder, input: SessionInput) -> SessionInput {
    let SessionInput::Answer(Input::ToolUpdate { call, mut partial }) = input else {
        return input;
    };
    for block in &mut partial.content {
        if let ContentBlock::Text(content) = block {
            if let Some(redacted) = recorder.redact_end(&content.text) {
                content.text = redacted;
            }
        }
    }
    SessionInput::Answer(Input::ToolUpdate { call, partial })
}

/// The per-call transport hook of the Live interpreter that records each call: its options
/// (credentials replaced by placeholders), then each request, response, body chunk and end,
/// timed by `clock` from the call's start.
pub fn recording_transport(recorder: Recorder, clock: Arc<dyn Clock>) -> CallTransportFor {
    Arc::new(
        move |start: &CallStart<'_>, inner: &Arc<dyn HttpTransport>| {
            let mut options = start.options.clone();
            options.api_key = recorder.redact_credential(&options.api_key, "api key");
            options.headers = recorder.redact_headers(&options.headers);
            recorder.write(Line::Call {
                call: start.call.0,
                t: start.started_at,
                options: Box::new(crate::convert::to_json(&options)),
            });
            Arc::new(RecordingTransport {
                inner: Arc::clone(inner),
                tap: Tap {
                    recorder: recorder.clone(),
                    clock: Arc::clone(&clock),
                    call: start.call.0,
                    started_at: start.started_at,
                },
            }) as Arc<dyn HttpTransport>
        },
    )
}

/// What a call's transport writes with.
#[derive(Clone)]
struct Tap {
    recorder: Recorder,
    clock: Arc<dyn Clock>,
    call: u64,
    started_at: u64,
}

impl Tap {
    fn dt(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.started_at)
    }

    fn end(&self, end: RecordedEnd) {
        self.recorder.write(Line::End {
            call: self.call,
            dt: self.dt(),
            end,
        });
    }
}

struct RecordingTransport {
    inner: Arc<dyn HttpTransport>,
    tap: Tap,
}

/// Writes `dropped` when the request is abandoned before its response came.
struct PendingSend {
    tap: Tap,
    settled: bool,
}

impl Drop for PendingSend {
    fn drop(&mut self) {
        if !self.settled {
            self.tap.end(RecordedEnd::Dropped);
        }
    }
}

impl HttpTransport for RecordingTransport {
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        Box::pin(async move {
            let tap = &self.tap;
            tap.recorder.write_request(
                RequestParts {
                    call: tap.call,
                    dt: tap.dt(),
                    method: request.method.to_owned(),
                    url: tap.recorder.redact_url(&request.url),
                    headers: tap.recorder.redact_headers(&request.headers),
                },
                &request.body.to_value(),
            );
            let mut pending = PendingSend {
                tap: tap.clone(),
                settled: false,
            };
            let sent = self.inner.send(request, headers_timeout).await;
            pending.settled = true;
            match sent {
                Err(error) => {
                    tap.end(RecordedEnd::Error(recorded_transport_error(&error)));
                    Err(error)
                }
                Ok(response) => {
                    tap.recorder.write(Line::Response {
                        call: tap.call,
                        dt: tap.dt(),
                        status: response.status(),
                        headers: response.headers().to_vec(),
                    });
                    Ok(Box::new(RecordingResponse {
                        inner: response,
                        tap: tap.clone(),
                        ended: Arc::new(AtomicBool::new(false)),
                    }) as Box<dyn HttpResponse>)
                }
            }
        })
    }
}

struct RecordingResponse {
    inner: Box<dyn HttpResponse>,
    tap: Tap,
    ended: Arc<AtomicBool>,
}

impl std::fmt::Debug for RecordingResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingResponse")
            .field("call", &self.tap.call)
            .finish_non_exhaustive()
    }
}

impl Drop for RecordingResponse {
    fn drop(&mut self) {
        if !self.ended.swap(true, Ordering::Relaxed) {
            self.tap.end(RecordedEnd::Dropped);
        }
    }
}

impl HttpResponse for RecordingResponse {
    fn status(&self) -> u16 {
        self.inner.status()
    }

    fn headers(&self) -> &[(String, String)] {
        self.inner.headers()
    }

    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Bytes>, TransportError>> {
        Box::pin(async move {
            let chunk = self.inner.chunk().await;
            let tap = &self.tap;
            match &chunk {
                Ok(Some(bytes)) => tap.recorder.write(Line::chunk(tap.call, tap.dt(), bytes)),
                Ok(None) => {
                    self.ended.store(true, Ordering::Relaxed);
                    tap.end(RecordedEnd::Complete);
                }
                Err(error) => {
                    self.ended.store(true, Ordering::Relaxed);
                    tap.end(RecordedEnd::Error(recorded_transport_error(error)));
                }
            }
            chunk
        })
    }
}
