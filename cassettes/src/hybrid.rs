//! Hybrid replay: "continue this recorded session with today's build". [`Hybrid`] answers from
//! the cassette while the run does what the recording did; at the first divergence (another
//! effect, another request, another input, or the recording's end while the session still
//! works) it goes live and the rest of the run happens for real. Wrapped in a
//! [`crate::Record`], the run becomes a new cassette: the replayed part copied (model calls with
//! their recorded bytes), the live part recorded.

use std::collections::BTreeMap;

use pi_core::agent::{CallId, Effect};
use pi_core::agent_session::SessionInput;
use pi_effects::driver::{FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserCommand};
use pi_effects::live::{finished_call, Live};

use crate::replay::Replay;
use crate::write::Recorder;

/// Replays until the first divergence, then runs live (see the module doc).
#[derive(Debug)]
pub struct Hybrid {
    replay: Replay,
    live: Live,
    /// Where the replayed model calls' recorded bytes are copied, if the run is recorded.
    copy_to: Option<Recorder>,
    /// The step at which the run went live, once it has.
    went_live: Option<usize>,
    /// Effects the replay started that have not ended yet: started again live on the switch.
    in_flight: BTreeMap<CallId, Effect>,
    steps: usize,
}

impl Hybrid {
    /// A hybrid run of `replay`, going live on `live`; replayed model calls are copied to
    /// `copy_to`.
    /// The recording's custom tools run live from `live`'s registry; one it lacks fails
    /// clearly when called. A hook point the recording's extensions handled and `live`'s do
    /// not stops the run, naming it.
    pub fn new(replay: Replay, live: Live, copy_to: Option<Recorder>) -> Self {
        let config = &replay.cassette().config;
        let live = live
            .expecting_custom_tools(&config.custom_tools)
            .expecting_hooks(&config.handled_hooks);
        Hybrid {
            replay,
            live,
            copy_to,
            went_live: None,
            in_flight: BTreeMap::new(),
            steps: 0,
        }
    }

    /// The step (1-based: inputs and effects) at which the run went live, if it did.
    pub fn went_live_at(&self) -> Option<usize> {
        self.went_live
    }

    fn go_live(&mut self) {
        if self.went_live.is_some() {
            return;
        }
        self.went_live = Some(self.steps);
        // What the replay had started and not finished is started again for real.
        for effect in std::mem::take(&mut self.in_flight).into_values() {
            self.live.start(effect);
        }
    }

    fn settle(&mut self, input: &SessionInput) {
        if let Some(call) = match input {
            SessionInput::Answer(answer) => finished_call(answer),
            _ => None,
        } {
            self.in_flight.remove(&call);
        }
    }
}

impl Interpreter for Hybrid {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        self.steps += 1;
        if self.went_live.is_none() {
            if let Ok(stamped) = self.replay.outside(input.clone()) {
                return Ok(stamped);
            }
            self.go_live();
        }
        self.live.outside(input)
    }

    /// The front end reads its own input (a hybrid run's commands are today's): stamped live.
    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        self.live.arrived(input)
    }

    fn front_end(&mut self, _busy: bool) -> FrontEndNext {
        FrontEndNext::Nothing
    }

    /// Run live, as the front end's commands are today's.
    fn run_user_command(&mut self, command: UserCommand) {
        self.live.run_user_command(command);
    }

    fn start(&mut self, effect: Effect) {
        self.steps += 1;
        if self.went_live.is_some() {
            return self.live.start(effect);
        }
        if let Effect::Hook {
            state: Some(state), ..
        }
        | Effect::RunTool {
            state: Some(state), ..
        } = &effect
        {
            self.live.observe_hook(state);
        }
        self.replay.start(effect.clone());
        if self.replay.divergence().is_some() {
            self.go_live();
            return self.live.start(effect);
        }
        match &effect {
            Effect::CallModel { call, .. } => {
                if let Some(recorder) = &self.copy_to {
                    for line in self.replay.recorded_call_lines(call.0) {
                        recorder.write(line);
                    }
                }
                self.in_flight.insert(*call, effect);
            }
            Effect::RunTool { call, .. } | Effect::Hook { call, .. } => {
                self.in_flight.insert(*call, effect);
            }
            // A cancelled hook point's decision is still awaited (its handlers' signal fired).
            Effect::Cancel { call } => {
                if !matches!(self.in_flight.get(call), Some(Effect::Hook { .. })) {
                    self.in_flight.remove(call);
                }
            }
            // The replayed tool was told nothing: nothing runs it.
            Effect::AnswerNested { .. } => {}
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        if self.went_live.is_none() {
            match self.replay.next(wake_at).await {
                Ok(answer) => {
                    self.steps += 1;
                    self.settle(&answer.1);
                    return Ok(answer);
                }
                Err(_) => self.go_live(),
            }
        }
        self.live.next(wake_at).await
    }
}
