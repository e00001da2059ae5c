//! The interpreter an import runs the loop with: it answers each model call with the stream
//! the next assistant message of the file would have come as (written to the cassette as
//! that call's response), each tool run with the file's result for that tool call, and each
//! input and answer at the time the file gives it. Wrapped in [`crate::Record`], the run it
//! drives becomes the imported cassette.

use std::collections::{BTreeMap, HashMap, VecDeque};

use pi_core::agent::{Effect, Input, StreamEvent, ToolOutcome};
use pi_core::agent_session::SessionInput;
use pi_core::event::ToolResult;
use pi_core::message::{AssistantMessage, ContentBlock, StopReason, ToolResultMessage};
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash, UserCommand,
};
use pi_providers::call::ModelCall;
use pi_providers::synth::{self, SynthesizedResponse};
use pi_providers::CallOptions;

use super::plan::Planned;
use super::Problem;
use crate::format::{Line, RecordedEnd};
use crate::write::{Recorder, RequestParts};

/// Answers the loop from a session file's entries (see the module doc).
#[derive(Debug)]
pub struct FromSession {
    recorder: Recorder,
    assistants: VecDeque<Planned<AssistantMessage>>,
    results: HashMap<String, Planned<ToolResultMessage>>,
    /// Steering and follow-ups, by the entry they arrive before the end of.
    queued: HashMap<usize, Vec<Planned<SessionInput>>>,
    /// Answers ready, in the order of the entries they stand for.
    pending: BTreeMap<(usize, u64), (u64, SessionInput)>,
    sequence: u64,
    /// The time of the next input from outside.
    outside_at: u64,
    /// The latest time given: a timer fires no earlier.
    now: u64,
    /// Aborted answers waiting for the loop to cancel their call: the decoder's last events.
    aborting: HashMap<u64, (Planned<AssistantMessage>, Vec<StreamEvent>)>,
    /// Why the loop asked for something the file does not have, once it did.
    stuck: Option<String>,
    problems: Vec<Problem>,
}

impl FromSession {
    pub fn new(
        recorder: Recorder,
        assistants: VecDeque<Planned<AssistantMessage>>,
        results: HashMap<String, Planned<ToolResultMessage>>,
        queued: HashMap<usize, Vec<Planned<SessionInput>>>,
    ) -> Self {
        FromSession {
            recorder,
            assistants,
            results,
            queued,
            pending: BTreeMap::new(),
            sequence: 0,
            outside_at: 0,
            now: 0,
            aborting: HashMap::new(),
            stuck: None,
            problems: Vec::new(),
        }
    }

    /// The next input from outside happens at `t`.
    pub fn next_outside_at(&mut self, t: u64) {
        self.outside_at = t;
    }

    /// What could not be answered as the file says, and what the file has that the loop did
    /// not ask for.
    pub fn into_problems(mut self) -> Vec<Problem> {
        for planned in self.assistants.drain(..) {
            self.problems.push(Problem::entry(
                planned.position,
                "an assistant message the loop did not ask for",
            ));
        }
        let mut waiting: Vec<_> = self.queued.into_values().flatten().collect();
        waiting.sort_by_key(|p| p.position);
        for planned in waiting {
            self.problems.push(Problem::entry(
                planned.position,
                "sent while the agent worked, but the entry it waited behind never came",
            ));
        }
        let mut unused: Vec<_> = self.results.into_values().collect();
        unused.sort_by_key(|p| p.position);
        for planned in unused {
            self.problems.push(Problem::entry(
                planned.position,
                "a tool result no tool call of the loop asked for",
            ));
        }
        self.problems
    }

    /// Gives `input` at `t` in the place of the entry at `position`; what the user sent while
    /// that entry was on its way comes just before it.
    fn answer(&mut self, position: usize, t: u64, input: SessionInput) {
        for queued in self.queued.remove(&position).unwrap_or_default() {
            self.sequence += 1;
            self.pending
                .insert((position, self.sequence), (queued.at, queued.item));
        }
        self.sequence += 1;
        self.pending.insert((position, self.sequence), (t, input));
    }

    fn call_model(&mut self, call: u64, request: &pi_core::agent::ModelRequest) {
        let Some(planned) = self.assistants.pop_front() else {
            self.stuck = Some(
                "the loop asked for a model call, and the file has no more assistant messages"
                    .into(),
            );
            return;
        };
        let message = &planned.item;
        let model = &request.model;
        if (model.provider.as_str(), model.id.as_str())
            != (message.provider.as_str(), message.model.as_str())
        {
            self.problems.push(Problem::entry(
                planned.position,
                format!(
                    "written by {}/{}, but the loop's model then is {}/{}",
                    message.provider, message.model, model.provider, model.id
                ),
            ));
        }
        if message.stop_reason == StopReason::Aborted {
            return self.call_aborted(call, request, planned);
        }
        let response = match synth::synthesize_nearest(model, message) {
            Ok((response, difference)) => {
                if let Some(difference) = difference {
                    self.problems.push(Problem::entry(
                        planned.position,
                        format!("its stream cannot say it exactly: {difference}"),
                    ));
                }
                response
            }
            Err(refused) => return self.no_stream(planned.position, &refused),
        };
        let started_at = message.timestamp;
        self.write_request(call, request, started_at);
        self.write_response(call, &response, RecordedEnd::Complete);
        let events = synth::decode_events(model, started_at, &response);
        self.model_events(call, &planned, events);
    }

    /// The run cannot go on past the answer at `position`: no stream says it.
    fn no_stream(&mut self, position: usize, refused: &synth::Unrepresentable) {
        let why = format!("no stream says it: {refused}");
        self.problems.push(Problem::entry(position, why));
        self.stuck = Some(format!("no stream for the message at entry {position}"));
    }

    /// An answer the user aborted: the reads that had arrived, then the abort from outside at
    /// the answer's time; the decoder's last events come when the loop cancels the call.
    fn call_aborted(
        &mut self,
        call: u64,
        request: &pi_core::agent::ModelRequest,
        planned: Planned<AssistantMessage>,
    ) {
        let model = &request.model;
        let message = &planned.item;
        if message.content.is_empty() {
            // Aborted before the response came: the SDK's own words, nothing read.
            let started_at = message.timestamp;
            self.write_request(call, request, started_at);
            self.recorder.write(Line::End {
                call,
                dt: 0,
                end: RecordedEnd::Dropped,
            });
            let on_abort = ModelCall::new(request, &CallOptions::default(), started_at).abort();
            self.answer(planned.position, planned.at, SessionInput::Abort);
            self.aborting.insert(call, (planned, on_abort));
            return;
        }
        let response = match synth::synthesize_aborted(model, message) {
            Ok(response) => response,
            Err(refused) => return self.no_stream(planned.position, &refused),
        };
        let started_at = message.timestamp;
        self.write_request(call, request, started_at);
        self.write_response(call, &response, RecordedEnd::Dropped);
        let (events, on_abort) = synth::abort_events(model, started_at, &response);
        self.model_events(call, &planned, events);
        self.answer(planned.position, planned.at, SessionInput::Abort);
        self.aborting.insert(call, (planned, on_abort));
    }

    fn model_events(
        &mut self,
        call: u64,
        planned: &Planned<AssistantMessage>,
        events: Vec<StreamEvent>,
    ) {
        // Pi 1.5 counts `durationMs` from the request (the message's `timestamp`) to the
        // answer's end, a little before it writes the entry: the stream comes from the request
        // on and its last event then, so the loop counts the same. Without one (an earlier
        // Pi's file), the answer comes when its entry was written.
        let (during, ended) = match planned.item.duration_ms {
            Some(ms) => {
                let start = planned.item.timestamp;
                (start, start.saturating_add(ms))
            }
            None => {
                let t = planned.at.max(planned.item.timestamp);
                (t, t)
            }
        };
        let last = events.len().saturating_sub(1);
        for (i, event) in events.into_iter().enumerate() {
            let input = SessionInput::Answer(Input::Model {
                call: pi_core::agent::CallId(call),
                event,
            });
            self.answer(
                planned.position,
                if i == last { ended } else { during },
                input,
            );
        }
    }

    /// The request line: what this build sent (nothing compares it; see `Imported`).
    fn write_request(&self, call: u64, request: &pi_core::agent::ModelRequest, started_at: u64) {
        let options = CallOptions::default();
        let model_call = ModelCall::new(request, &options, started_at);
        self.recorder.write(Line::Call {
            call,
            t: started_at,
            options: Box::new(crate::convert::to_json(&options)),
        });
        if let Some(http) = model_call.http_request() {
            let parts = RequestParts {
                call,
                dt: 0,
                method: http.method.to_owned(),
                url: http.url.clone(),
                headers: Vec::new(),
            };
            self.recorder.write_request(parts, &http.body.to_value());
        }
    }

    fn write_response(&self, call: u64, response: &SynthesizedResponse, end: RecordedEnd) {
        self.recorder.write(Line::Response {
            call,
            dt: 0,
            status: response.status,
            headers: response.headers.clone(),
        });
        for chunk in &response.chunks {
            self.recorder.write(Line::chunk(call, 0, chunk));
        }
        self.recorder.write(Line::End { call, dt: 0, end });
    }

    fn run_tool(&mut self, call: pi_core::agent::CallId, tool_call_id: &str) {
        let Some(planned) = self.results.remove(tool_call_id) else {
            self.stuck = Some(format!(
                "the loop ran tool call {tool_call_id}, and the file has no result for it"
            ));
            return;
        };
        let result = planned.item;
        let outcome = match (result.is_error, error_text(&result)) {
            (true, Some(text)) => ToolOutcome::Thrown(text),
            _ => ToolOutcome::Ok(ToolResult {
                content: result.content,
                details: result.details,
                terminate: None,
                extra: Default::default(),
            }),
        };
        let input = SessionInput::Answer(Input::ToolFinished { call, outcome });
        // Pi 1.5 counts a result's `durationMs` from the tool's start, which is now; its
        // `timestamp` is the file's (the entry's stamp).
        let done = result
            .duration_ms
            .map_or(result.timestamp, |ms| self.now.saturating_add(ms));
        self.answer(planned.position, done, input);
    }
}

/// The message a failed tool threw: Pi's result for a throw is that one text block.
fn error_text(result: &ToolResultMessage) -> Option<String> {
    match result.content.as_slice() {
        [ContentBlock::Text(text)] => Some(text.text.clone()),
        _ => None,
    }
}

/// Why the file has nothing for what the loop asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Stuck(String);

impl Interpreter for FromSession {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        self.now = self.now.max(self.outside_at);
        Ok((self.outside_at, input))
    }

    /// A session file holds no front-end lines: they come at the time of the next input.
    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        Ok(Some((self.outside_at, input)))
    }

    fn front_end(&mut self, _busy: bool) -> FrontEndNext {
        FrontEndNext::Nothing
    }

    /// A session file's `!command` results are entries of their own: nothing is run.
    fn run_user_command(&mut self, run: UserCommand) {
        (run.done)(UserBash {
            id: run.id,
            command: run.command,
            result: Err("an imported session runs no user commands".into()),
        });
    }

    fn start(&mut self, effect: Effect) {
        match &effect {
            Effect::CallModel { call, request } => self.call_model(call.0, request),
            Effect::RunTool {
                call, tool_call_id, ..
            } => self.run_tool(*call, tool_call_id),
            Effect::Cancel { call } => {
                if let Some((planned, events)) = self.aborting.remove(&call.0) {
                    self.model_events(call.0, &planned, events);
                }
            }
            // An imported run loads no extension, so its machine handles no hook point and
            // its tools make no nested call.
            Effect::Hook { .. } | Effect::AnswerNested { .. } => {}
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        if let Some(entry) = self.pending.first_entry() {
            let (t, input) = entry.remove();
            self.now = self.now.max(t);
            return Ok((t, input));
        }
        if let Some(why) = &self.stuck {
            return Err(InterpretError::Halted(Box::new(Stuck(why.clone()))));
        }
        match wake_at {
            Some(at) => {
                self.now = self.now.max(at);
                Ok((self.now, SessionInput::Wake))
            }
            None => Err(InterpretError::Idle),
        }
    }
}
