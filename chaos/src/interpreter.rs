//! The chaos interpreter: answers the machine from a [`ChaosRecording`] changed by a [`PerturbationPlan`].
//!
//! Unlike `Replay`, it checks nothing against the recording (a perturbed run legitimately
//! asks other things): model calls get the recorded responses in call order, re-split, cut or
//! preceded by a transient failure as the plan says, decoded by the live decoders; tools get
//! their recorded answers by tool name and arguments, or fail; a hook point gets the recorded
//! extensions' answer to the same question (its payload, times aside: the next unused one
//! asked so, decision, actions and errors), answered as a call in flight like a tool's; the
//! front end's inputs arrive at the step they arrived at, with the plan's steering, follow-ups
//! and aborts among them; timers fire when asked, or late. Time is virtual: one millisecond per input. A perturbed
//! run ends with one more prompt, so that the session the perturbations left is sent to the
//! model (and its request checked).
//!
//! When the run leaves the recording, the world still answers, so the run can end: a model
//! call beyond the recorded ones gets a plain stop message synthesized for its API ("Done.");
//! a tool call never recorded fails with an error result; a hook point whose question the
//! recording never asked is answered as by handlers that returned nothing and asked for
//! nothing (the composed decision of no result, [`Composer`]); a recorded stream that hung (its
//! call was cancelled) times out if no cancel comes; a response that never came is a timeout.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use pi_core::agent::hooks::{Composer, HookOutcome, HookPayload};
use pi_core::agent::{CallId, Effect, Input, ToolOutcome};
use pi_core::agent_session::SessionInput;
use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
use pi_core::model::Model;
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash, UserCommand,
};
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::transport::scripted::{ScriptedResponse, ScriptedStream};
use pi_providers::transport::{poll_once, BoxFuture, HttpResponse, HttpTransport, TransportError};
use pi_providers::{CallOptions, HttpRequest};

use crate::invariants::Checker;
use crate::plan::{Perturbation, PerturbationPlan, SplitMix, Transient};
use crate::recording::{
    hook_question, Attempt, BodyEnd, ChaosRecording, RecordedCall, RecordedHook, RecordedTool,
    Scheduled,
};

/// What a tool answers when the plan makes it fail.
pub const INJECTED_TOOL_FAILURE: &str = "chaos: the tool failed";
/// What a tool call the recording does not hold answers.
pub const UNRECORDED_TOOL: &str = "chaos: no recorded result for this tool call";
/// The prompt a perturbed run ends with, so that what the perturbations left is sent.
pub const ONE_MORE_TURN: &str = "chaos: one more turn";
/// What a user command (RPC `bash`) answers: a chaos run has no front end that sends one.
pub const NO_USER_COMMANDS: &str = "chaos: user commands are not run";
/// The text of the message answered to a model call beyond the recording.
pub const BEYOND_RECORDING: &str = "Done.";
/// Inputs after which a run that has not come back to idle is stopped as not settling.
pub const STEP_LIMIT: usize = 100_000;

/// A call in flight.
#[derive(Debug)]
enum Flight {
    Model {
        call: u64,
        /// The model called and when: what a response beyond the recording is made for.
        model: Model,
        started: u64,
        model_call: ModelCall,
        opened: bool,
        cancelled: bool,
        /// Waiting for bytes that do not come.
        hanging: bool,
        events: VecDeque<pi_core::agent::StreamEvent>,
    },
    /// A tool's answers, or a hook point's decision: ready as they are.
    Answers { answers: VecDeque<Input> },
}

impl Flight {
    fn ready(&self) -> bool {
        match self {
            Flight::Model {
                hanging, cancelled, ..
            } => !*hanging || *cancelled,
            Flight::Answers { answers, .. } => !answers.is_empty(),
        }
    }
}

/// Answers the machine from a perturbed recording (see the module doc).
#[derive(Debug)]
pub struct ChaosInterpreter {
    now: u64,
    checker: Arc<Mutex<Checker>>,
    transport: ChaosTransport,
    clock: FixedClock,
    flights: Vec<Flight>,
    inputs: VecDeque<Scheduled>,
    /// Answers taken so far.
    steps: usize,
    /// Inputs given while the machine was busy, up to [`STEP_LIMIT`].
    given: usize,
    tools: HashMap<(String, String), VecDeque<RecordedTool>>,
    tool_ordinal: usize,
    failing_tools: HashSet<usize>,
    reorders: HashSet<usize>,
    choices: usize,
    late: HashMap<usize, u64>,
    wakes: usize,
    /// The recorded options of each recorded call; the last for calls beyond them.
    options: Vec<CallOptions>,
    model_calls: usize,
    /// The recorded hook points not answered yet, in the order they were asked.
    hooks: Vec<Option<RecordedHook>>,
}

impl ChaosInterpreter {
    /// An interpreter for one run of `recording` under `plan`, reporting to `checker`.
    pub fn new(
        recording: &ChaosRecording,
        plan: &PerturbationPlan,
        checker: Arc<Mutex<Checker>>,
    ) -> Self {
        let mut inputs: Vec<Scheduled> = recording.inputs.clone();
        let mut failing_tools = HashSet::new();
        let mut reorders = HashSet::new();
        let mut late = HashMap::new();
        for p in &plan.0 {
            let inject = |step: usize, input: SessionInput| Scheduled { step, t: 0, input };
            match p {
                Perturbation::Steer { step } => inputs.push(inject(
                    *step,
                    SessionInput::Steer {
                        text: "chaos: steering".into(),
                        images: Vec::new(),
                    },
                )),
                Perturbation::FollowUp { step } => inputs.push(inject(
                    *step,
                    SessionInput::FollowUp {
                        text: "chaos: follow-up".into(),
                        images: Vec::new(),
                    },
                )),
                Perturbation::Abort { step } => inputs.push(inject(*step, SessionInput::Abort)),
                Perturbation::Compact { step } => inputs.push(inject(
                    *step,
                    SessionInput::Compact {
                        custom_instructions: None,
                    },
                )),
                Perturbation::ToolFails { tool } => {
                    failing_tools.insert(*tool);
                }
                Perturbation::Reorder { choice } => {
                    reorders.insert(*choice);
                }
                Perturbation::LateTimer { wake, ms } => {
                    late.insert(*wake, *ms);
                }
                _ => {}
            }
        }
        // Stable: recorded inputs keep their order, injected ones come after those of their step.
        inputs.sort_by_key(|s| s.step);
        if !plan.is_empty() {
            // One more turn once the recorded ones are done: what the perturbations left in
            // the session (a compaction's cut, a cancelled batch) is sent, and checked.
            inputs.push(Scheduled {
                step: usize::MAX,
                t: 0,
                input: SessionInput::Prompt {
                    text: ONE_MORE_TURN.into(),
                    images: Vec::new(),
                    streaming_behavior: None,
                },
            });
        }
        let tools = recording
            .tools
            .iter()
            .map(|(k, v)| (k.clone(), v.iter().cloned().collect()))
            .collect();
        ChaosInterpreter {
            now: recording.config.started_at,
            checker,
            transport: ChaosTransport::new(attempts(&recording.calls, plan)),
            clock: FixedClock::new(0, 0.0),
            flights: Vec::new(),
            inputs: inputs.into(),
            steps: 0,
            given: 0,
            tools,
            tool_ordinal: 0,
            failing_tools,
            reorders,
            choices: 0,
            late,
            wakes: 0,
            options: recording.calls.iter().map(|c| c.options.clone()).collect(),
            model_calls: 0,
            hooks: recording.hooks.iter().cloned().map(Some).collect(),
        }
    }

    /// The front end's next input, whatever its step: the machine is idle, so nothing else
    /// will come (an injected one whose step the run never reached arrives between prompts,
    /// as a user's `/compact` or a late steer would).
    pub fn next_outside(&mut self) -> Option<SessionInput> {
        let s = self.inputs.pop_front()?;
        self.now = self.now.max(s.t);
        Some(s.input)
    }

    /// The model calls started so far.
    pub fn model_calls(&self) -> usize {
        self.model_calls
    }

    /// The answers taken so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    fn tick(&mut self) -> u64 {
        self.now += 1;
        self.now
    }

    fn checked(&mut self, input: SessionInput) -> (u64, SessionInput) {
        self.checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_input(&input);
        (self.tick(), input)
    }

    /// The next answer of flight `i`, or `None` when it has none now (finished or hanging).
    fn pull(&mut self, i: usize) -> Option<Input> {
        let flight = self.flights.get_mut(i)?;
        match flight {
            Flight::Answers { answers, .. } => answers.pop_front(),
            Flight::Model {
                call,
                model,
                started,
                model_call,
                opened,
                cancelled,
                hanging,
                events,
            } => loop {
                if let Some(event) = events.pop_front() {
                    return Some(Input::Model {
                        call: CallId(*call),
                        event,
                    });
                }
                if model_call.is_done() {
                    return None;
                }
                if *cancelled {
                    events.extend(model_call.abort());
                    continue;
                }
                let polled = if *opened {
                    poll_once(model_call.next())
                } else {
                    let transport = CallTransport {
                        shared: &self.transport,
                        model,
                        now: *started,
                    };
                    poll_once(model_call.open(&transport, &self.clock))
                };
                match polled {
                    Some(more) => {
                        *opened = true;
                        events.extend(more);
                    }
                    None => {
                        *hanging = true;
                        return None;
                    }
                }
            },
        }
    }

    /// Drops finished flights.
    fn sweep(&mut self) {
        self.flights.retain(|f| match f {
            Flight::Model {
                model_call, events, ..
            } => !(model_call.is_done() && events.is_empty()),
            Flight::Answers { answers, .. } => !answers.is_empty(),
        });
    }

    fn answer(&mut self) -> Option<Input> {
        loop {
            self.sweep();
            let ready: Vec<usize> = (0..self.flights.len())
                .filter(|&i| self.flights[i].ready())
                .collect();
            let &first = ready.first()?;
            let mut pick = first;
            if ready.len() > 1 {
                if self.reorders.contains(&self.choices) {
                    pick = ready[ready.len() - 1];
                }
                self.choices += 1;
            }
            if let Some(input) = self.pull(pick) {
                return Some(input);
            }
        }
    }

    fn wake(&mut self, at: u64) -> (u64, SessionInput) {
        let late = self.late.get(&self.wakes).copied().unwrap_or(0);
        self.wakes += 1;
        self.now = self.now.max(at + late);
        self.checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_input(&SessionInput::Wake);
        (self.now, SessionInput::Wake)
    }

    fn start_tool(&mut self, call: u64, tool: String, args: &serde_json::Value) {
        let ordinal = self.tool_ordinal;
        self.tool_ordinal += 1;
        let recorded = self
            .tools
            .get_mut(&(tool, args.to_string()))
            .and_then(VecDeque::pop_front);
        let finished = |outcome| Input::ToolFinished {
            call: CallId(call),
            outcome,
        };
        let answers = if self.failing_tools.contains(&ordinal) {
            vec![finished(ToolOutcome::Thrown(INJECTED_TOOL_FAILURE.into()))]
        } else {
            match recorded {
                Some(RecordedTool {
                    updates,
                    outcome: Some(outcome),
                }) => {
                    let mut answers: Vec<Input> = updates
                        .into_iter()
                        .map(|u| match u {
                            Input::ToolUpdate { partial, .. } => Input::ToolUpdate {
                                call: CallId(call),
                                partial,
                            },
                            Input::ToolActed { action, .. } => Input::ToolActed {
                                call: CallId(call),
                                action,
                            },
                            other => other,
                        })
                        .collect();
                    answers.push(finished(outcome));
                    answers
                }
                _ => vec![finished(ToolOutcome::Thrown(UNRECORDED_TOOL.into()))],
            }
        };
        self.flights.push(Flight::Answers {
            answers: answers.into(),
        });
    }

    /// The recorded answer to the question `payload` asks (the first unused one asked so),
    /// or, for a question the recording never asked, that of handlers returning nothing.
    fn start_hook(&mut self, call: CallId, payload: &HookPayload) {
        let asked = match pi_cassettes::convert::recorded_effect(&Effect::Hook {
            call,
            payload: payload.clone(),
            state: None,
        }) {
            pi_cassettes::format::RecordedEffect::Hook { payload, .. } => hook_question(payload),
            _ => serde_json::Value::Null,
        };
        let recorded = self
            .hooks
            .iter_mut()
            .find(|hook| hook.as_ref().is_some_and(|h| h.question == asked))
            .and_then(Option::take);
        let outcome = match recorded {
            Some(hook) => hook.outcome,
            None => HookOutcome {
                decision: Composer::new(payload.clone()).finish(),
                actions: Vec::new(),
                errors: Vec::new(),
            },
        };
        self.flights.push(Flight::Answers {
            answers: VecDeque::from([Input::HookDecided { call, outcome }]),
        });
    }

    fn start_model(&mut self, call: u64, request: &pi_core::agent::ModelRequest) {
        self.model_calls += 1;
        let options = match self.transport.next_call() {
            Some(i) => self.options.get(i),
            None => self.options.last(),
        }
        .cloned()
        .unwrap_or_default();
        let model_call = ModelCall::new(request, &options, self.now);
        self.flights.push(Flight::Model {
            call,
            model: request.model.clone(),
            started: self.now,
            model_call,
            opened: false,
            cancelled: false,
            hanging: false,
            events: VecDeque::new(),
        });
    }
}

impl Interpreter for ChaosInterpreter {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        Ok(self.checked(input))
    }

    /// Virtual time, as every input: one millisecond on.
    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        Ok(Some((self.tick(), input)))
    }

    /// The front end's inputs are the plan's session inputs ([`Self::next_outside`]).
    fn front_end(&mut self, _busy: bool) -> FrontEndNext {
        FrontEndNext::Nothing
    }

    fn run_user_command(&mut self, run: UserCommand) {
        (run.done)(UserBash {
            id: run.id,
            command: run.command,
            result: Err(NO_USER_COMMANDS.into()),
        });
    }

    fn start(&mut self, effect: Effect) {
        self.checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_effect(&effect);
        match &effect {
            Effect::CallModel { call, request } => self.start_model(call.0, request),
            Effect::RunTool {
                call, tool, args, ..
            } => self.start_tool(call.0, tool.clone(), args),
            Effect::Cancel { call } => {
                for flight in &mut self.flights {
                    if let Flight::Model {
                        call: c, cancelled, ..
                    } = flight
                    {
                        if *c == call.0 {
                            *cancelled = true;
                        }
                    }
                }
            }
            Effect::Hook { call, payload, .. } => self.start_hook(*call, payload),
            // A recorded tool's nested calls were recorded with it; nothing waits here.
            Effect::AnswerNested { .. } => {}
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        self.given += 1;
        if self.given > STEP_LIMIT {
            let why = format!("still busy after {STEP_LIMIT} inputs");
            return Err(InterpretError::Halted(why.into()));
        }
        if self.inputs.front().is_some_and(|s| s.step <= self.steps) {
            if let Some(s) = self.inputs.pop_front() {
                self.now = self.now.max(s.t);
                return Ok(self.checked(s.input));
            }
        }
        if let Some(at) = wake_at.filter(|at| *at <= self.now) {
            self.steps += 1;
            return Ok(self.wake(at));
        }
        if let Some(answer) = self.answer() {
            self.steps += 1;
            return Ok(self.checked(SessionInput::Answer(answer)));
        }
        if let Some(at) = wake_at {
            self.steps += 1;
            return Ok(self.wake(at));
        }
        // Nothing can answer: the front end's next input comes now, whatever its step.
        if let Some(s) = self.inputs.pop_front() {
            self.now = self.now.max(s.t);
            return Ok(self.checked(s.input));
        }
        // A stream waits for bytes that never come: it times out.
        self.transport.give_up.store(true, Ordering::Relaxed);
        for flight in &mut self.flights {
            if let Flight::Model { hanging, .. } = flight {
                *hanging = false;
            }
        }
        let answer = self.answer();
        self.transport.give_up.store(false, Ordering::Relaxed);
        match answer {
            Some(answer) => {
                self.steps += 1;
                Ok(self.checked(SessionInput::Answer(answer)))
            }
            None => Err(InterpretError::Idle),
        }
    }
}

/// The attempts of the whole run, in order, each with the recorded call it belongs to.
fn attempts(calls: &[RecordedCall], plan: &PerturbationPlan) -> VecDeque<(usize, Attempt)> {
    let mut all = VecDeque::new();
    for (i, call) in calls.iter().enumerate() {
        for p in &plan.0 {
            if let Perturbation::Transient { call: c, kind } = p {
                if *c == i {
                    all.push_back((i, transient(*kind)));
                }
            }
        }
        for attempt in &call.attempts {
            let mut attempt = match attempt {
                // The call was cancelled before a response came: without that cancel, the
                // wait for the headers times out.
                Attempt::Hang => Attempt::Failed(TransportError::Timeout),
                other => other.clone(),
            };
            for p in &plan.0 {
                match (p, &mut attempt) {
                    (Perturbation::Split { call: c, seed }, Attempt::Response { chunks, .. })
                        if *c == i =>
                    {
                        *chunks = split(chunks, *seed);
                    }
                    (
                        Perturbation::Cut { call: c, permille },
                        Attempt::Response { chunks, end, .. },
                    ) if *c == i => {
                        *chunks = cut(chunks, *permille);
                        *end = BodyEnd::Fail(TransportError::Body("terminated".into()));
                    }
                    _ => {}
                }
            }
            all.push_back((i, attempt));
        }
    }
    all
}

fn transient(kind: Transient) -> Attempt {
    let (status, body) = match kind {
        Transient::RateLimited => (
            429,
            r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#,
        ),
        Transient::ServerError => (
            500,
            r#"{"error":{"message":"Internal server error","type":"server_error"}}"#,
        ),
        Transient::Reset => {
            return Attempt::Failed(TransportError::Connect("read ECONNRESET".into()))
        }
    };
    Attempt::Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        chunks: vec![Bytes::from_static(body.as_bytes())],
        end: BodyEnd::Complete,
    }
}

fn body(chunks: &[Bytes]) -> Vec<u8> {
    chunks.iter().flat_map(|c| c.iter().copied()).collect()
}

/// The same bytes in other reads: one to eight cuts anywhere, drawn from `seed`.
pub fn split(chunks: &[Bytes], seed: u64) -> Vec<Bytes> {
    let bytes = body(chunks);
    if bytes.len() < 2 {
        return chunks.to_vec();
    }
    let mut rng = SplitMix(seed);
    let count = 1 + rng.below(8);
    let mut cuts: Vec<usize> = (0..count).map(|_| 1 + rng.below(bytes.len() - 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for at in cuts.into_iter().chain([bytes.len()]) {
        out.push(Bytes::copy_from_slice(&bytes[start..at]));
        start = at;
    }
    out
}

/// The first `permille`/1000 of the bytes, in the reads they came in.
pub fn cut(chunks: &[Bytes], permille: u16) -> Vec<Bytes> {
    let total: usize = chunks.iter().map(Bytes::len).sum();
    let mut keep = total * usize::from(permille) / 1000;
    let mut out = Vec::new();
    for chunk in chunks {
        if keep == 0 {
            break;
        }
        let take = chunk.len().min(keep);
        out.push(chunk.slice(..take));
        keep -= take;
    }
    out
}

/// A plain stop message for `model`, as its provider would stream it.
fn beyond_recording(model: &Model, now: u64) -> Attempt {
    let message = AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: now,
        content: vec![ContentBlock::text(BEYOND_RECORDING)],
        stop_reason: StopReason::Stop,
        ..AssistantMessage::default()
    };
    // The nearest stream: what the decoder adds (Pi 1.5's `rawStopReason`, say) is welcome.
    match pi_providers::synth::synthesize_nearest(model, &message) {
        Ok((response, _)) => Attempt::Response {
            status: response.status,
            headers: response.headers,
            chunks: response.chunks,
            end: BodyEnd::Complete,
        },
        Err(e) => Attempt::Failed(TransportError::Connect(e.to_string())),
    }
}

/// Serves the run's attempts in order, whichever call sends.
#[derive(Debug)]
struct ChaosTransport {
    attempts: Mutex<VecDeque<(usize, Attempt)>>,
    /// Set while the interpreter makes hanging streams time out.
    give_up: Arc<AtomicBool>,
}

impl ChaosTransport {
    fn new(attempts: VecDeque<(usize, Attempt)>) -> Self {
        ChaosTransport {
            attempts: Mutex::new(attempts),
            give_up: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The recorded call the next attempt belongs to (`None`: the recording is used up).
    fn next_call(&self) -> Option<usize> {
        let attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        attempts.front().map(|(i, _)| *i)
    }

    fn pop(&self) -> Option<Attempt> {
        let mut attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        attempts.pop_front().map(|(_, attempt)| attempt)
    }
}

/// One call's view of the run's attempts: the next one, or once they are used up, a plain
/// stop message for the call's model.
struct CallTransport<'a> {
    shared: &'a ChaosTransport,
    model: &'a Model,
    now: u64,
}

impl HttpTransport for CallTransport<'_> {
    fn send<'a>(
        &'a self,
        _request: &'a HttpRequest,
        _headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        let attempt = self
            .shared
            .pop()
            .unwrap_or_else(|| beyond_recording(self.model, self.now));
        let answer = match attempt {
            Attempt::Response {
                status,
                headers,
                chunks,
                end,
            } => {
                let response = ScriptedResponse {
                    status,
                    headers,
                    chunks,
                    end,
                };
                let stream =
                    ScriptedStream::from(response).giving_up_when(Arc::clone(&self.shared.give_up));
                Ok(Box::new(stream) as Box<dyn HttpResponse>)
            }
            Attempt::Failed(error) => Err(error),
            Attempt::Hang => Err(TransportError::Timeout),
        };
        Box::pin(std::future::ready(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&str]) -> Vec<Bytes> {
        parts
            .iter()
            .map(|p| Bytes::copy_from_slice(p.as_bytes()))
            .collect()
    }

    /// A run that never comes back to idle (here: a timer due at every input) is stopped at
    /// the limit, so the driver's loop ends and the run is reported as not settling.
    #[test]
    fn a_run_that_never_settles_is_stopped_at_the_input_limit() {
        #![allow(clippy::unwrap_used, clippy::panic)]
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cassettes/corpus/plain_text.jsonl");
        let cassette = pi_cassettes::Cassette::load(&path).unwrap();
        let recording = ChaosRecording::from_cassette(&cassette).unwrap();
        let checker = Arc::new(Mutex::new(Checker::new(recording.config.retry)));
        let mut io = ChaosInterpreter::new(&recording, &PerturbationPlan::none(), checker);
        while io.next_outside().is_some() {}
        let due = Some(recording.config.started_at);
        for _ in 0..STEP_LIMIT {
            let given = poll_once(io.next(due)).unwrap();
            assert!(matches!(given, Ok((_, SessionInput::Wake))), "{given:?}");
        }
        match poll_once(io.next(due)).unwrap() {
            Err(InterpretError::Halted(why)) => {
                assert_eq!(why.to_string(), "still busy after 100000 inputs")
            }
            other => panic!("not stopped: {other:?}"),
        }
    }

    #[test]
    fn split_keeps_the_bytes_and_changes_the_reads() {
        let original = chunks(&["data: {\"a\":1}\n\n", "data: [DONE]\n\n"]);
        let mut changed = 0;
        for seed in 0..50 {
            let resplit = split(&original, seed);
            assert_eq!(body(&resplit), body(&original));
            assert!(resplit.iter().all(|c| !c.is_empty()));
            changed += usize::from(resplit != original);
        }
        assert!(changed > 40);
    }

    #[test]
    fn cut_keeps_a_prefix() {
        let original = chunks(&["abcd", "efgh"]);
        assert_eq!(body(&cut(&original, 500)), b"abcd");
        assert_eq!(body(&cut(&original, 625)), b"abcde");
        assert!(cut(&original, 0).is_empty());
        assert_eq!(cut(&original, 1000), original);
    }

    #[test]
    fn transients_come_before_their_call() {
        let calls = vec![
            RecordedCall {
                options: CallOptions::default(),
                attempts: vec![Attempt::Hang],
            };
            2
        ];
        let plan: PerturbationPlan = "err:1:429,err:1:reset".parse().unwrap_or_default();
        let all: Vec<usize> = attempts(&calls, &plan).iter().map(|(i, _)| *i).collect();
        assert_eq!(all, [0, 1, 1, 1]);
        let kinds: Vec<Attempt> = attempts(&calls, &plan)
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        assert_eq!(kinds[0], Attempt::Failed(TransportError::Timeout));
        assert!(matches!(kinds[1], Attempt::Response { status: 429, .. }));
        assert!(matches!(
            kinds[2],
            Attempt::Failed(TransportError::Connect(_))
        ));
    }
}
