//! Replaying: [`Replay`] answers the machine from a cassette. Each effect the machine asks for
//! must be the next one recorded (and each HTTP request of a model call, every attempt of the
//! SDK's retries included, byte for byte as recorded); inputs
//! come back in the recorded order with the recorded times, so replay never waits; a model
//! call's events are decoded from the recorded bytes by the same decoder as live.
//!
//! `index` reads the recording into the run's spine and its recorded model calls, `model`
//! answers model calls from their recorded bytes; here are [`Replay`], its checks and its
//! [`Interpreter`] impl.

mod index;
mod model;
mod sessions;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::HookEvent;
use pi_core::agent::{CallId, Effect, Input};
use pi_core::agent_session::SessionInput;
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash, UserCommand,
};
use pi_effects::tools::user_bash::execute_bash;
use pi_effects::tools::ToolEnv;
use pi_providers::retry::FixedClock;
use serde_json::{json, Value};

use crate::body::CheckedElements;
use crate::convert::{recorded_effect, recorded_input, ToInput, Unconvertible};
use crate::divergence::{Divergence, DivergenceKind};
use crate::format::{Line, RecordedEffect, RecordedInput};
use crate::live_hooks::LiveHooks;
use crate::live_tools::{Answer, LiveTools};
use crate::read::Cassette;
use crate::redact::Rules;
use index::{RecordedCall, Spine};
use model::ReplayCall;
pub use sessions::ReplayedSession;

/// The exit of a run SIGTERM stopped, for a recording that lost its outcome line.
const SIGTERM_EXIT: i32 = 143;

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
        let index::Index {
            spine,
            recorded_calls,
            recorded_events,
        } = index::index(&cassette, lines)?;
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
        self.recorded_calls
            .get(&call)
            .map_or_else(Vec::new, |recorded| recorded.lines(call))
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

    /// The extensions' UI request the recording goes on with, taken, if it goes on with one:
    /// where the recorded run's front end printed the requests that had come (after driving the
    /// session itself: a replacement's or a reload's hook points, the end), a replay's takes
    /// them.
    pub fn take_recorded_ui(&mut self) -> Option<(u64, serde_json::Value)> {
        let Some((_, Spine::ExtensionUi(t, request))) = self.spine.get(self.position) else {
            return None;
        };
        let taken = (*t, request.clone());
        self.position += 1;
        Some(taken)
    }

    /// Whether the recording goes on with the `replaced` input a replacement sends the session
    /// it opened (the recorded run told it what the extensions, loaded again, registered, or
    /// its handlers heard the start): a replay sends it where the recording has it.
    pub fn goes_on_replaced(&self) -> bool {
        matches!(
            self.spine.get(self.position),
            Some((_, Spine::Outside(_, input))) if matches!(**input, RecordedInput::Replaced { .. })
        )
    }

    /// The number of recorded steps (inputs and effects).
    pub fn steps(&self) -> usize {
        self.spine.len()
    }

    /// Checks that the run, ending here, has used the whole recording: the error says what this
    /// build did not do that the recording did (its session replaced and the run gone on in
    /// another, among them), or that the recording was cut off.
    pub fn finish(&self) -> Result<(), Divergence> {
        self.finish_part()?;
        match self.cassette.left() {
            None => Ok(()),
            Some(left) => Err(Divergence::new(
                &self.cassette,
                self.position + 1,
                self.cassette.last_line(),
                DivergenceKind::StoppedEarly,
                json!({"replaced": left.reason, "then": "the run goes on in another session"}),
                json!("the run ended"),
            )),
        }
    }

    /// Checks that the run has used the whole of this session's part of the recording, where
    /// the session is replaced or the replay ends at a replacement on purpose (one in place).
    pub fn finish_part(&self) -> Result<(), Divergence> {
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
        let mut actual = recorded_effect(effect);
        // A recording made before hook states were digested says nothing of them.
        if let (
            Some((_, Spine::Effect(RecordedEffect::Hook { state: None, .. }))),
            RecordedEffect::Hook { state, .. },
        ) = (self.spine.get(self.position), &mut actual)
        {
            *state = None;
        }
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
            self.start_call(*call, request)?;
        }
        self.position += 1;
        Ok(())
    }
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
    /// The recorded input `input` stands for, with its time: the same input, but for a
    /// reload's (`reloaded`) or a replacement's (`replaced`), whose replaying front end loaded
    /// no extension and so asks with nothing registered: what the recorded load registered is the recording's, given back
    /// in its place (a tampered one is seen in what the session then does differently).
    fn take_outside(
        &mut self,
        input: &SessionInput,
    ) -> Result<(u64, Option<SessionInput>), Divergence> {
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
            Some((_, Spine::Outside(t, recorded))) if loaded_as_recorded(&asked, recorded) => {
                let t = *t;
                // Every input was read when the cassette was loaded (`Cassette::from_format`).
                let recorded = recorded.to_input().ok();
                self.position += 1;
                Ok((t, recorded))
            }
            Some((_, Spine::Outside(t, recorded)))
                if **recorded == asked || (live_result && same_user_command(recorded, &asked)) =>
            {
                let t = *t;
                self.position += 1;
                Ok((t, None))
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
                RecordedInput::ToolUpdate { call, .. } | RecordedInput::ToolActed { call, .. }
                    if tools.runs(*call) =>
                {
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
        self.stop(taken)
            .map(|(t, recorded)| (t, recorded.unwrap_or(input)))
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
        if let Some(exit) = self.stopped_here() {
            return FrontEndNext::Signal(exit);
        }
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

    /// An abort no command asked for (a command's comes right after its line, taken with it):
    /// a signal's, which the front end asks for again as it stops the run.
    fn stopped_here(&self) -> Option<i32> {
        match self.spine.get(self.position) {
            Some((_, Spine::Outside(_, input))) if matches!(**input, RecordedInput::Abort) => {
                Some(self.cassette.outcome().map_or(SIGTERM_EXIT, |o| o.exit))
            }
            _ => None,
        }
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
            if let Some(hooks) = &self.live_hooks {
                hooks.cancel(call.0);
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
                    search,
                    state,
                },
                Some(tools),
                hooks,
            ) => {
                let state: Option<Arc<HookState>> = state.map(Arc::from);
                // A tool's state moves the live extensions' mirror on, as a hook point's.
                if let (Some(state), Some(hooks)) = (&state, hooks) {
                    hooks.observe(state);
                }
                tools.start(call.0, tool_call_id, tool, args, search, state);
            }
            // The built-in MCP extension's `mcp_servers_change` is not run again (a replay
            // connects no server): its recorded decision brings the servers' tools.
            (
                Effect::Hook {
                    call,
                    payload,
                    state,
                },
                _,
                Some(hooks),
            ) if payload.event() != HookEvent::McpServersChange => {
                let recorded = recorded_decision(&self.spine[self.position..], call.0);
                hooks.start(call.0, payload, state, recorded)
            }
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

/// Whether `asked` is a reload or replacement whose replaying front end loaded no extension
/// (`loaded` absent), standing for `recorded`, the same input with what the recorded load
/// registered.
fn loaded_as_recorded(asked: &RecordedInput, recorded: &RecordedInput) -> bool {
    match (asked, recorded) {
        (RecordedInput::Reloaded { loaded: None }, RecordedInput::Reloaded { .. }) => true,
        (
            RecordedInput::Replaced {
                reason,
                previous_session_file,
                loaded: None,
            },
            RecordedInput::Replaced {
                reason: recorded_reason,
                previous_session_file: recorded_file,
                loaded: Some(_),
            },
        ) => reason == recorded_reason && previous_session_file == recorded_file,
        _ => false,
    }
}

/// The recorded outcome of hook point `call`, the first decision for it in `spine`.
fn recorded_decision(spine: &[(usize, Spine)], call: u64) -> Option<&Value> {
    spine.iter().find_map(|(_, entry)| match entry {
        Spine::Answer(_, input) => match &**input {
            RecordedInput::HookDecided { call: c, outcome } if *c == call => Some(outcome),
            _ => None,
        },
        _ => None,
    })
}
