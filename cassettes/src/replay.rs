//! Replaying: [`Replay`] answers the machine from a cassette. Each effect the machine asks for
//! must be the next one recorded (and each HTTP request of a model call, every attempt of the
//! SDK's retries included, byte for byte as recorded); inputs
//! come back in the recorded order with the recorded times, so replay never waits; a model
//! call's events are decoded from the recorded bytes by the same decoder as live.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use pi_core::agent::{CallId, Effect, Input, StreamEvent};
use pi_core::agent_session::SessionInput;
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash, UserCommand,
};
use pi_effects::tools::user_bash::execute_bash;
use pi_effects::tools::user_bash::BashResult;
use pi_effects::tools::ToolEnv;
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::transport::poll_once;
use pi_providers::CallOptions;
use serde_json::{json, Value};

use crate::body::{BodyText, CheckedElements};
use crate::convert::{from_json, recorded_effect, recorded_input, to_json, ToInput, Unconvertible};
use crate::divergence::{Divergence, DivergenceKind};
use crate::format::{chunk_bytes, Line, RecordedEffect, RecordedEnd, RecordedInput};
use crate::live_hooks::LiveHooks;
use crate::live_tools::{Answer, LiveTools};
use crate::read::Cassette;
use crate::redact::stream::emptied_events;
use crate::redact::Rules;
use crate::replay_transport::{Exchange, RecordedRequest, ReplayTransport};

/// One line of the run's spine: what reached the machine or what it asked for, in order.
#[derive(Clone, Debug)]
enum Spine {
    Outside(u64, Box<RecordedInput>),
    Command(u64, Box<RecordedInput>),
    Answer(u64, Box<RecordedInput>),
    Event(u64, u64),
    Wake(u64),
    Effect(RecordedEffect),
    Stdin(u64, String, bool),
    UserBash(u64, Box<UserBash>),
    ExtensionUi(u64, Value),
}

impl Spine {
    fn describe(&self) -> Value {
        match self {
            Spine::Outside(t, input) => json!({"outside": input, "t": t}),
            Spine::Command(t, input) => json!({"command": input, "t": t}),
            Spine::Answer(t, input) => json!({"answer": input, "t": t}),
            Spine::Event(t, call) => json!({"event of call": call, "t": t}),
            Spine::Wake(t) => json!({"wake": t}),
            Spine::Effect(effect) => json!({"effect": effect}),
            Spine::Stdin(t, line, _) => json!({"stdin": line, "t": t}),
            Spine::UserBash(t, bash) => json!({"bash": bash.command, "t": t}),
            Spine::ExtensionUi(t, request) => json!({"extension_ui": request, "t": t}),
        }
    }
}

/// A recorded model call.
#[derive(Clone, Debug)]
struct RecordedCall {
    started_at: u64,
    options: CallOptions,
    /// Shared with the replaying transport: starting a call copies nothing.
    exchanges: Arc<Vec<Exchange>>,
}

/// A model call being replayed.
#[derive(Debug)]
struct ReplayCall {
    model_call: ModelCall,
    transport: ReplayTransport,
    opened: bool,
    cancelled: bool,
    events: VecDeque<StreamEvent>,
    /// Recorded `event` lines of this call not yet replayed.
    recorded_events: usize,
    /// Whether the recorded response ended (complete, or failed) rather than being dropped: then
    /// every event its bytes decode to reached the machine, and none may be left over.
    ended: bool,
    /// How many fewer events than recorded its bytes may decode to: the delta strings the
    /// recording emptied while it rewrote a secret streamed in pieces (a decoder drops an empty
    /// delta), as the events' marks count them.
    may_lack: usize,
}

/// Answers the machine from a cassette (see the module doc).
#[derive(Debug)]
pub struct Replay {
    cassette: Arc<Cassette>,
    spine: Vec<(usize, Spine)>,
    position: usize,
    recorded_calls: HashMap<u64, RecordedCall>,
    calls: HashMap<u64, ReplayCall>,
    clock: FixedClock,
    /// A divergence found while starting an effect, reported by the next `next`.
    diverged: Option<Divergence>,
    /// Tools run for real instead of answered from the recording.
    live_tools: Option<LiveTools>,
    /// Extensions run again at the hook points instead of answered from the recording.
    live_hooks: Option<LiveHooks>,
    /// What the last request check proved, for the next.
    checked: CheckedElements,
    /// The user's redaction rules the cassette was recorded with.
    rules: Arc<Rules>,
    /// The recorded `event` lines of each call.
    recorded_events: HashMap<u64, usize>,
    /// When the session's timer is due, as it last said (a recorded wake must not come before).
    wake_at: Option<u64>,
    /// User commands running for real (with live tools), whose results replace the next
    /// recorded ones.
    user_commands: usize,
    /// Their results, in the order they finished, until their recorded place comes.
    user_results: VecDeque<UserBash>,
    /// A live command's result was just given: the session's record of it (the next input
    /// from outside) holds its output, not the recorded one.
    live_user_result: bool,
    /// The time the event being given comes at instead of its place's (see
    /// [`drop_event_places`]).
    retimed: Option<u64>,
}

impl Replay {
    /// A replay of `cassette`, from its first line.
    pub fn new(cassette: Arc<Cassette>) -> Result<Self, Divergence> {
        // The lines are taken, not copied, when no one else holds the cassette; what remains
        // (path, header, outcome) is what reports need.
        let (cassette, lines) = match Arc::try_unwrap(cassette) {
            Ok(mut owned) => {
                let lines = std::mem::take(&mut owned.lines);
                (Arc::new(owned), lines)
            }
            Err(shared) => {
                let lines = shared.lines.clone();
                (shared, lines)
            }
        };
        let rules = match &cassette.header.redact {
            Some(spec) => Rules::compile(spec.clone())
                .map_err(|e| Divergence::unusable(&cassette, 1, format!("field `redact`: {e}")))?,
            None => Rules::default(),
        };
        let mut spine = Vec::with_capacity(lines.len());
        let mut recorded_calls: HashMap<u64, RecordedCall> = HashMap::new();
        // The body of the request line before: a `delta` changes it.
        let mut previous_body: Option<BodyText> = None;
        let mut recorded_events: HashMap<u64, usize> = HashMap::new();
        for (number, line) in lines {
            if let Line::Event { call, .. } = &line {
                *recorded_events.entry(*call).or_default() += 1;
            }
            let entry = match line {
                Line::Outside { t, input } => Spine::Outside(t, input),
                Line::Command { t, input } => Spine::Command(t, input),
                Line::Answer { t, input } => Spine::Answer(t, input),
                Line::Event { t, call } => Spine::Event(t, call),
                Line::Wake { t } => Spine::Wake(t),
                Line::Effect { effect } => Spine::Effect(effect),
                Line::Stdin { t, line, with_next } => Spine::Stdin(t, line, with_next),
                Line::ExtensionUi { t, request } => Spine::ExtensionUi(t, request),
                Line::UserBash {
                    t,
                    id,
                    command,
                    result,
                    error,
                } => Spine::UserBash(
                    t,
                    Box::new(UserBash {
                        id,
                        command,
                        result: match (result, error) {
                            (_, Some(error)) => Err(error),
                            (result, None) => {
                                Ok(BashResult::from_json(&result.unwrap_or(Value::Null)))
                            }
                        },
                    }),
                ),
                Line::Call { call, t, options } => {
                    let options = from_json(&options, "options").map_err(|e| {
                        Divergence::unusable(&cassette, number, format!("`call` line: {e}"))
                    })?;
                    recorded_calls.insert(
                        call,
                        RecordedCall {
                            started_at: t,
                            options,
                            exchanges: Arc::new(Vec::new()),
                        },
                    );
                    continue;
                }
                Line::Request {
                    call,
                    method,
                    url,
                    headers,
                    body,
                    delta,
                    ..
                } => {
                    let body = match (body, delta) {
                        (Some(body), _) => BodyText::Whole(body),
                        (None, Some(delta)) => {
                            let previous = previous_body.as_ref().ok_or_else(|| {
                                Divergence::unusable(
                                    &cassette,
                                    number,
                                    "field `delta`: no request before it to change".into(),
                                )
                            })?;
                            previous.apply(&delta).map_err(|e| {
                                Divergence::unusable(
                                    &cassette,
                                    number,
                                    format!("field `delta`: {e}"),
                                )
                            })?
                        }
                        (None, None) => {
                            return Err(Divergence::unusable(
                                &cassette,
                                number,
                                "a request line needs `body` or `delta`".into(),
                            ))
                        }
                    };
                    previous_body = Some(body.clone());
                    if let Some(recorded) = recorded_calls.get_mut(&call) {
                        Arc::make_mut(&mut recorded.exchanges).push(Exchange {
                            line: number,
                            request: RecordedRequest {
                                method,
                                url,
                                headers,
                                body: Some(body),
                            },
                            ..Exchange::default()
                        });
                    }
                    continue;
                }
                Line::Response {
                    call,
                    status,
                    headers,
                    ..
                } => {
                    if let Some(exchange) = last_exchange(&mut recorded_calls, call) {
                        exchange.response = Some((status, headers));
                    }
                    continue;
                }
                Line::Chunk {
                    call, text, base64, ..
                } => {
                    let bytes = chunk_bytes(text, base64)
                        .map(Bytes::from)
                        .map_err(|e| Divergence::unusable(&cassette, number, e))?;
                    if let Some(exchange) = last_exchange(&mut recorded_calls, call) {
                        exchange.chunks.push(bytes);
                    }
                    continue;
                }
                Line::End { call, end, .. } => {
                    if let Some(exchange) = last_exchange(&mut recorded_calls, call) {
                        exchange.end = Some(end);
                    }
                    continue;
                }
                Line::Cassette(_) | Line::Proxy(_) | Line::Redaction { .. } | Line::Outcome(_) => {
                    continue
                }
            };
            spine.push((number, entry));
        }
        Ok(Replay {
            cassette,
            spine,
            position: 0,
            recorded_calls,
            calls: HashMap::new(),
            clock: FixedClock::new(0, 0.0),
            diverged: None,
            live_tools: None,
            live_hooks: None,
            checked: CheckedElements::default(),
            rules: Arc::new(rules),
            recorded_events,
            wake_at: None,
            user_commands: 0,
            user_results: VecDeque::new(),
            live_user_result: false,
            retimed: None,
        })
    }

    /// Runs the tools for real in `workspace` (a scratch copy) instead of answering them from
    /// the recording; needs a tokio runtime.
    /// Custom tools the recording declared fail clearly when called (none is registered):
    /// give a registry with [`Replay::with_live_tools_env`].
    pub fn with_live_tools(mut self, workspace: &std::path::Path) -> Self {
        let config = &self.cassette.config;
        let mut env = ToolEnv::new(workspace).with_environment_overrides();
        env.custom = env.custom.expecting(&config.custom_tools);
        let tools = LiveTools::with_env(env).for_run(config.seed, config.started_at);
        self.live_tools = Some(tools);
        self
    }

    /// Runs the tools for real as `env` says (its working directory, shell and sandbox)
    /// instead of answering them from the recording; needs a tokio runtime. The custom tools
    /// the recording declared run from `env.custom`; one it lacks fails clearly when called
    /// ([`pi_effects::custom_tool::missing_tool_message`]).
    pub fn with_live_tools_env(mut self, mut env: ToolEnv) -> Self {
        let config = &self.cassette.config;
        env.custom = env.custom.expecting(&config.custom_tools);
        let tools = LiveTools::with_env(env).for_run(config.seed, config.started_at);
        self.live_tools = Some(tools);
        self
    }

    /// Runs `extensions` at the hook points instead of answering them from the recording
    /// ([`LiveHooks`]); needs a tokio runtime.
    pub fn with_live_extensions(
        mut self,
        extensions: pi_effects::extension::ExtensionRegistry,
    ) -> Self {
        self.live_hooks = Some(LiveHooks::new(extensions));
        self
    }

    /// The cassette replayed (its lines are the replay's).
    pub fn cassette(&self) -> &Cassette {
        &self.cassette
    }

    /// The cassette replayed, shared.
    pub fn shared_cassette(&self) -> Arc<Cassette> {
        Arc::clone(&self.cassette)
    }

    /// The divergence that stopped the replay, if one did (it stays: every later call
    /// reports it again).
    pub fn divergence(&self) -> Option<&Divergence> {
        self.diverged.as_ref()
    }

    /// The recorded lines of model call `call` (its options, requests and response bytes),
    /// for a new cassette that continues this one (times within the call are not kept).
    pub fn recorded_call_lines(&self, call: u64) -> Vec<Line> {
        let Some(recorded) = self.recorded_calls.get(&call) else {
            return Vec::new();
        };
        let mut lines = vec![Line::Call {
            call,
            t: recorded.started_at,
            options: Box::new(to_json(&recorded.options)),
        }];
        for exchange in recorded.exchanges.iter() {
            let request = &exchange.request;
            lines.push(Line::Request {
                call,
                dt: 0,
                method: request.method.clone(),
                url: request.url.clone(),
                headers: request.headers.clone(),
                body: request.body.as_ref().map(BodyText::to_raw),
                delta: None,
            });
            if let Some((status, headers)) = &exchange.response {
                lines.push(Line::Response {
                    call,
                    dt: 0,
                    status: *status,
                    headers: headers.clone(),
                });
            }
            for chunk in &exchange.chunks {
                lines.push(Line::chunk(call, 0, chunk));
            }
            if let Some(end) = &exchange.end {
                lines.push(Line::End {
                    call,
                    dt: 0,
                    end: end.clone(),
                });
            }
        }
        lines
    }

    /// Every recorded input from the front end, in order (the prompts of a print-mode run).
    pub fn outside_inputs(&self) -> Vec<SessionInput> {
        self.spine
            .iter()
            .filter_map(|(_, entry)| match entry {
                // Every input was read when the cassette was loaded (`Cassette::from_format`).
                Spine::Outside(_, input) => input.to_input().ok(),
                _ => None,
            })
            .collect()
    }

    /// The number of recorded steps (inputs and effects).
    pub fn steps(&self) -> usize {
        self.spine.len()
    }

    /// Checks that the run has used the whole recording: the error says what this build did
    /// not do that the recording did, or that the recording was cut off.
    pub fn finish(&self) -> Result<(), Divergence> {
        if let Some(divergence) = &self.diverged {
            return Err(divergence.clone());
        }
        match self.spine.get(self.position) {
            None if !self.cassette.is_complete() => Err(self.ends_early()),
            None => Ok(()),
            Some((line, entry)) => Err(Divergence::new(
                &self.cassette,
                self.position + 1,
                *line,
                DivergenceKind::StoppedEarly,
                entry.describe(),
                json!("the session was idle"),
            )),
        }
    }

    fn ends_early(&self) -> Divergence {
        Divergence::ends_early(&self.cassette, self.position + 1, self.cassette.last_line())
    }

    /// The current line holds an input this build cannot read (a cassette is checked for
    /// these when it is loaded, so only one changed since can).
    fn unreadable(&self, e: Unconvertible) -> Divergence {
        let line = self
            .spine
            .get(self.position)
            .map_or(self.cassette.last_line(), |(n, _)| *n);
        Divergence::unusable(&self.cassette, line, e.to_string())
    }

    fn diverge(&self, kind: DivergenceKind, expected: Value, actual: Value) -> Divergence {
        let line = self
            .spine
            .get(self.position)
            .map_or(self.cassette.last_line(), |(n, _)| *n);
        Divergence::new(
            &self.cassette,
            self.position + 1,
            line,
            kind,
            expected,
            actual,
        )
    }

    fn check_effect(&mut self, effect: &Effect) -> Result<(), Divergence> {
        let actual = recorded_effect(effect);
        let Some((_, entry)) = self.spine.get(self.position) else {
            if !self.cassette.is_complete() {
                return Err(self.ends_early());
            }
            return Err(self.diverge(
                DivergenceKind::Effect,
                json!("the recording ends here"),
                json!({ "effect": actual }),
            ));
        };
        match entry {
            Spine::Effect(expected) if *expected == actual => {}
            other => {
                let expected = other.describe();
                return Err(self.diverge(
                    DivergenceKind::Effect,
                    expected,
                    json!({ "effect": actual }),
                ));
            }
        }
        if let Effect::CallModel { call, request } = effect {
            if let Some(recorded) = self.recorded_calls.get(&call.0) {
                let model_call = ModelCall::new(request, &recorded.options, recorded.started_at);
                // An imported cassette's requests are this build's own (see `Imported`).
                let checked = self.cassette.header.imported.is_none();
                if let (true, Some(http), Some(first)) = (
                    checked,
                    model_call.http_request(),
                    recorded.exchanges.first(),
                ) {
                    if let Err(mismatch) = first.request.check(http, &self.rules, &mut self.checked)
                    {
                        let mut divergence = self.diverge(
                            DivergenceKind::Request,
                            mismatch.recorded,
                            mismatch.asked,
                        );
                        divergence.line = first.line;
                        return Err(divergence);
                    }
                }
                // The attempts after the first (the SDK's retries) are checked as they are sent.
                let transport = ReplayTransport::new(
                    Arc::clone(&recorded.exchanges),
                    checked,
                    Arc::clone(&self.rules),
                );
                let may_lack = recorded
                    .exchanges
                    .iter()
                    .flat_map(|exchange| &exchange.chunks)
                    .map(|chunk| emptied_events(chunk))
                    .sum();
                let ended = recorded.exchanges.last().is_some_and(|last| {
                    matches!(
                        last.end,
                        Some(RecordedEnd::Complete | RecordedEnd::Error(_))
                    )
                });
                self.calls.insert(
                    call.0,
                    ReplayCall {
                        model_call,
                        transport,
                        opened: false,
                        cancelled: false,
                        events: VecDeque::new(),
                        recorded_events: self.recorded_events.get(&call.0).copied().unwrap_or(0),
                        ended,
                        may_lack,
                    },
                );
            }
        }
        self.position += 1;
        Ok(())
    }

    /// The next event of call `call`, decoded from its recorded bytes.
    fn model_event(&mut self, call: u64) -> Result<StreamEvent, Divergence> {
        let Some(replaying) = self.calls.get_mut(&call) else {
            return Err(self.diverge(
                DivergenceKind::Stream,
                json!({ "event of call": call }),
                json!("no recorded response for this call"),
            ));
        };
        loop {
            if let Some(event) = replaying.events.pop_front() {
                replaying.recorded_events = replaying.recorded_events.saturating_sub(1);
                let left = replaying.recorded_events;
                if (1..=replaying.may_lack).contains(&left)
                    && replaying.ended
                    && !replaying.cancelled
                    && more_events(replaying).is_none()
                    && replaying.model_call.is_done()
                {
                    // The bytes decode to no more events: the recorded ones left were of
                    // delta strings the recording emptied. Their places go, and this last
                    // event comes at the time the last one did.
                    replaying.recorded_events = 0;
                    self.retimed = drop_event_places(&mut self.spine, self.position, call, left);
                }
                if replaying.recorded_events == 0 && replaying.ended && !replaying.cancelled {
                    let more = more_events(replaying);
                    // Unless the recorded run stopped here, the session still busy.
                    let stopped = || {
                        self.cassette.header.mode == RPC_MODE
                            && took_no_step_after(&self.spine, self.position)
                    };
                    if let Some(more) = more.filter(|_| !stopped()) {
                        return Err(self.diverge(
                            DivergenceKind::Stream,
                            json!({ "event of call": call, "the last recorded": event.name() }),
                            json!(format!(
                                "the recorded bytes decode to more events than recorded: then {}",
                                more.name()
                            )),
                        ));
                    }
                }
                if replaying.events.is_empty() && replaying.model_call.is_done() {
                    if let Some((made, line, recorded)) = replaying.transport.fewer_attempts() {
                        if !replaying.cancelled {
                            let mut divergence = self.diverge(
                                DivergenceKind::Request,
                                json!({ "attempts": recorded, "the next": line }),
                                json!(match made {
                                    1 => "this build made 1 attempt".to_owned(),
                                    _ => format!("this build made {made} attempts"),
                                }),
                            );
                            divergence.line = line;
                            return Err(divergence);
                        }
                    }
                    // The call's last event: its request and decoder go now, not at the end.
                    self.calls.remove(&call);
                }
                return Ok(event);
            }
            if replaying.model_call.is_done() {
                return Err(self.diverge(
                    DivergenceKind::Stream,
                    json!({ "event of call": call }),
                    json!("the recorded bytes decode to fewer events"),
                ));
            }
            let polled = if replaying.opened {
                poll_once(replaying.model_call.next())
            } else {
                let transport = replaying.transport.clone();
                poll_once(replaying.model_call.open(&transport, &self.clock))
            };
            match polled {
                Some(events) => {
                    replaying.opened = true;
                    replaying.events.extend(events);
                }
                // A retry that is not the recorded one stops the call; else the recorded bytes
                // are used up: a cancelled call ends as an aborted call ends live, any other
                // reads past the recording (cut off, or this build reads on where the recorded
                // run stopped).
                None => {
                    if let Some((line, mismatch)) = replaying.transport.mismatch() {
                        let counts = !mismatch.beyond
                            || (!replaying.cancelled && self.cassette.is_complete());
                        if counts {
                            let mut divergence = self.diverge(
                                DivergenceKind::Request,
                                mismatch.recorded,
                                mismatch.asked,
                            );
                            divergence.line = line;
                            return Err(divergence);
                        }
                    }
                    if !replaying.cancelled && !self.cassette.is_complete() {
                        return Err(self.ends_early());
                    }
                    if !replaying.cancelled {
                        // A whole recording: the recorded run never read this far.
                        return Err(self.diverge(
                            DivergenceKind::Stream,
                            json!({ "event of call": call }),
                            json!(
                                "this build reads more of the response than the recorded run did"
                            ),
                        ));
                    }
                    let events = replaying.model_call.abort();
                    replaying.events.extend(events);
                }
            }
        }
    }
}

/// The first event `replaying`'s recorded bytes decode to after those taken, if any: a call
/// whose recorded response ended has given the machine every one.
fn more_events(replaying: &mut ReplayCall) -> Option<StreamEvent> {
    while replaying.events.is_empty() && replaying.opened && !replaying.model_call.is_done() {
        let events = poll_once(replaying.model_call.next())?;
        replaying.events.extend(events);
    }
    replaying.events.front().cloned()
}

/// The front end of a recorded RPC session, which stops when its stdin closes, busy or not.
const RPC_MODE: &str = "rpc";

/// Whether the session took no step after the `spine` entry at `position`: no event, answer or
/// wake reached it and it asked for nothing, only lines from outside came. An RPC run whose
/// stdin closed while events of a call it had read to the end were still on their way to the
/// session stopped so; the bytes of that call decode to more events than it took, and a run
/// that went on past the call is what would contradict them.
fn took_no_step_after(spine: &[(usize, Spine)], position: usize) -> bool {
    spine.iter().skip(position + 1).all(|(_, entry)| {
        !matches!(
            entry,
            Spine::Event(..) | Spine::Answer(..) | Spine::Wake(..) | Spine::Effect(..)
        )
    })
}

/// Takes out of `spine` the next `count` places of call `call`'s events after `position`;
/// returns the time of the last one taken.
fn drop_event_places(
    spine: &mut Vec<(usize, Spine)>,
    position: usize,
    call: u64,
    count: usize,
) -> Option<u64> {
    let mut left = count;
    let mut index = position + 1;
    let mut last = None;
    while left > 0 && index < spine.len() {
        match spine[index].1 {
            Spine::Event(t, c) if c == call => {
                spine.remove(index);
                last = Some(t);
                left -= 1;
            }
            _ => index += 1,
        }
    }
    last
}

fn last_exchange(calls: &mut HashMap<u64, RecordedCall>, call: u64) -> Option<&mut Exchange> {
    calls
        .get_mut(&call)
        .and_then(|c| Arc::make_mut(&mut c.exchanges).last_mut())
}

/// Whether two recorded inputs are the session's records of one user command (its results may
/// differ: one ran for real).
fn same_user_command(recorded: &RecordedInput, asked: &RecordedInput) -> bool {
    match (recorded, asked) {
        (
            RecordedInput::BashResult { message: recorded },
            RecordedInput::BashResult { message: asked },
        ) => recorded.get("command") == asked.get("command"),
        _ => false,
    }
}

fn halted(divergence: Divergence) -> InterpretError {
    InterpretError::Halted(Box::new(divergence))
}

impl Replay {
    /// The recorded time of `input` from the front end, if it is the next thing recorded.
    fn take_outside(&mut self, input: &SessionInput) -> Result<u64, Divergence> {
        let asked = recorded_input(input).map_err(|e| {
            self.diverge(
                DivergenceKind::Input,
                json!("a recordable input"),
                json!(e.to_string()),
            )
        })?;
        // The result of a user command run for real stands for the recorded one of that command.
        let live_result = std::mem::take(&mut self.live_user_result);
        match self.spine.get(self.position) {
            Some((_, Spine::Outside(t, recorded)))
                if **recorded == asked || (live_result && same_user_command(recorded, &asked)) =>
            {
                let t = *t;
                self.position += 1;
                Ok(t)
            }
            Some((_, other)) => {
                let expected = other.describe();
                Err(self.diverge(DivergenceKind::Input, expected, json!({ "outside": asked })))
            }
            None if !self.cassette.is_complete() => Err(self.ends_early()),
            None => Err(self.diverge(
                DivergenceKind::Input,
                json!("the recording ends here"),
                json!({ "outside": asked }),
            )),
        }
    }

    /// The next answer, timer or command as recorded.
    fn take_next(&mut self) -> Result<(u64, SessionInput), Divergence> {
        let Some((_, entry)) = self.spine.get(self.position).cloned() else {
            if !self.cassette.is_complete() {
                return Err(self.ends_early());
            }
            return Err(self.diverge(
                DivergenceKind::Input,
                json!("the recording ends here"),
                json!("the session is still busy"),
            ));
        };
        let answer = match entry {
            Spine::Event(t, call) => {
                let event = self.model_event(call)?;
                let t = self.retimed.take().unwrap_or(t);
                (
                    t,
                    SessionInput::Answer(Input::Model {
                        call: CallId(call),
                        event,
                    }),
                )
            }
            Spine::Wake(t) => match self.wake_at {
                Some(at) if t >= at => (t, SessionInput::Wake),
                due => {
                    let timer = match due {
                        Some(at) => format!("the session's timer is due at {at}: the recording wakes it before its timer"),
                        None => "the session has no timer that would wake it".to_owned(),
                    };
                    return Err(self.diverge(
                        DivergenceKind::Input,
                        json!({ "wake": t }),
                        json!(timer),
                    ));
                }
            },
            Spine::Answer(t, input) | Spine::Command(t, input) => match input.to_input() {
                Ok(input) => (t, input),
                Err(e) => return Err(self.unreadable(e)),
            },
            other => {
                let expected = other.describe();
                return Err(self.diverge(
                    DivergenceKind::Input,
                    expected,
                    json!("the session waited for an answer"),
                ));
            }
        };
        self.position += 1;
        Ok(answer)
    }

    /// With tools run for real: a recorded update of a live call is passed over, and its
    /// recorded result is replaced by the real updates and result, at the recorded time.
    async fn live_tool_answer(&mut self) -> Option<(u64, SessionInput)> {
        let tools = self.live_tools.as_mut()?;
        loop {
            let (_, Spine::Answer(t, input)) = self.spine.get(self.position)? else {
                return None;
            };
            match &**input {
                RecordedInput::ToolUpdate { call, .. } if tools.runs(*call) => {
                    self.position += 1;
                }
                RecordedInput::ToolFinished { call, .. } if tools.runs(*call) => {
                    let (t, call) = (*t, *call);
                    // The live call's own updates first, at the time of its recorded result.
                    let input = match tools.next_answer(call).await? {
                        Answer::Update(partial) => Input::ToolUpdate {
                            call: CallId(call),
                            partial,
                        },
                        Answer::Finished(outcome) => {
                            self.position += 1;
                            Input::ToolFinished {
                                call: CallId(call),
                                outcome,
                            }
                        }
                    };
                    return Some((t, SessionInput::Answer(input)));
                }
                _ => return None,
            }
        }
    }

    /// With extensions run again: the recorded decision at a live hook point is replaced by
    /// theirs, at the recorded time.
    async fn live_hook_answer(&mut self) -> Option<(u64, SessionInput)> {
        let hooks = self.live_hooks.as_mut()?;
        let (_, Spine::Answer(t, input)) = self.spine.get(self.position)? else {
            return None;
        };
        let RecordedInput::HookDecided { call, .. } = &**input else {
            return None;
        };
        let (t, call) = (*t, *call);
        if !hooks.runs(call) {
            return None;
        }
        let outcome = hooks.decision(call).await?;
        self.position += 1;
        let input = Input::HookDecided {
            call: CallId(call),
            outcome,
        };
        Some((t, SessionInput::Answer(input)))
    }

    /// Keeps the first divergence: every later call reports it again.
    fn stop<T>(&mut self, result: Result<T, Divergence>) -> Result<T, InterpretError> {
        if let Err(divergence) = &result {
            self.diverged.get_or_insert_with(|| divergence.clone());
        }
        result.map_err(halted)
    }
}

impl Interpreter for Replay {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        if let Some(divergence) = &self.diverged {
            return Err(halted(divergence.clone()));
        }
        let taken = self.take_outside(&input);
        self.stop(taken).map(|t| (t, input))
    }

    /// A replay's front-end inputs are recorded: one from anywhere else parts from the
    /// recording, but for the result of a user command run for real (with live tools), which is
    /// kept to take the place of the next recorded result (see `front_end`).
    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        if let Some(divergence) = &self.diverged {
            return Err(halted(divergence.clone()));
        }
        match input {
            FrontEndInput::UserBash(bash) if self.user_commands > self.user_results.len() => {
                self.user_results.push_back(bash);
                Ok(None)
            }
            other => {
                let asked = match &other {
                    FrontEndInput::Stdin { line, .. } => json!({ "stdin": line }),
                    FrontEndInput::UserBash(bash) => json!({ "bash": bash.command }),
                    FrontEndInput::ExtensionUi(request) => json!({ "extension_ui": request }),
                };
                let expected = match self.spine.get(self.position) {
                    Some((_, entry)) => entry.describe(),
                    None => json!("the recording ends here"),
                };
                let divergence = self.diverge(DivergenceKind::Input, expected, asked);
                self.stop(Err(divergence))
            }
        }
    }

    /// With live tools, the command runs in their workspace; else nothing runs, and the
    /// recorded result comes in its place.
    fn run_user_command(&mut self, run: UserCommand) {
        let Some(tools) = &self.live_tools else {
            return;
        };
        let env = tools.env().clone();
        self.user_commands += 1;
        tokio::spawn(async move {
            let result = execute_bash(&env, &run.command, &run.cancel, None).await;
            (run.done)(UserBash {
                id: run.id,
                command: run.command,
                result,
            });
        });
    }

    /// The recorded stdin lines and `bash` results in recorded order (a result is waited for
    /// while a user command runs for real); the end when the recording is used up, or when the session is idle and the recording goes on with
    /// something only a busy session takes (then [`Replay::finish`] says what).
    fn front_end(&mut self, busy: bool) -> FrontEndNext {
        let next = match self.spine.get(self.position) {
            None => return FrontEndNext::End,
            Some((_, Spine::Stdin(t, line, with_next))) => FrontEndNext::Input(
                *t,
                FrontEndInput::Stdin {
                    line: line.clone(),
                    with_next: *with_next,
                },
            ),
            // A command run for real gives the result, once it finished (see `arrived`).
            Some((_, Spine::UserBash(t, recorded))) if self.user_commands > 0 => {
                let (t, command) = (*t, recorded.command.clone());
                let Some(live) = self.user_results.pop_front() else {
                    return FrontEndNext::Nothing;
                };
                if live.command != command {
                    let expected = json!({ "bash": command, "t": t });
                    let asked = json!({ "bash": live.command });
                    let divergence = self.diverge(DivergenceKind::Input, expected, asked);
                    self.diverged.get_or_insert(divergence);
                    return FrontEndNext::End;
                }
                self.user_commands -= 1;
                self.live_user_result = live.result.is_ok();
                FrontEndNext::Input(t, FrontEndInput::UserBash(live))
            }
            Some((_, Spine::UserBash(t, bash))) => {
                FrontEndNext::Input(*t, FrontEndInput::UserBash((**bash).clone()))
            }
            Some((_, Spine::ExtensionUi(t, request))) => {
                FrontEndNext::Input(*t, FrontEndInput::ExtensionUi(request.clone()))
            }
            Some(_) if busy => return FrontEndNext::Nothing,
            Some(_) => return FrontEndNext::End,
        };
        self.position += 1;
        next
    }

    fn start(&mut self, effect: Effect) {
        if self.diverged.is_some() {
            return;
        }
        if let Effect::Cancel { call } = &effect {
            if let Some(replaying) = self.calls.get_mut(&call.0) {
                replaying.cancelled = true;
            }
            if let Some(tools) = &self.live_tools {
                tools.cancel(call.0);
            }
        }
        if let Err(divergence) = self.check_effect(&effect) {
            self.diverged = Some(divergence);
            return;
        }
        match (effect, &mut self.live_tools, &mut self.live_hooks) {
            (
                Effect::RunTool {
                    call,
                    tool_call_id,
                    tool,
                    args,
                },
                Some(tools),
                _,
            ) => tools.start(call.0, tool_call_id, tool, args),
            (
                Effect::Hook {
                    call,
                    payload,
                    state,
                },
                _,
                Some(hooks),
            ) => hooks.start(call.0, payload, state),
            _ => {}
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        if let Some(divergence) = &self.diverged {
            return Err(halted(divergence.clone()));
        }
        self.wake_at = wake_at;
        if let Some(answer) = self.live_tool_answer().await {
            return Ok(answer);
        }
        if let Some(answer) = self.live_hook_answer().await {
            return Ok(answer);
        }
        let taken = self.take_next();
        self.stop(taken)
    }
}
