//! Feeding a machine one input: the one function through which every runner steps a machine,
//! the effects driver (print mode, RPC mode, replays, imports, chaos runs) and the scenario
//! driver of the tests alike. What a refusal means is decided here, once: a command from
//! outside the machine that it refuses is Pi's behaviour (an error text, the run goes on); an
//! answer or a timer it refuses means the world broke the machine's contract.

use crate::agent::{AgentMachine, Input, Step, StepError};

use super::{SessionError, SessionInput, SessionMachine, SessionStep};

/// A machine stepped by inputs with their times: the session machine, or the agent machine
/// that a scenario of the tests runs without a session around it.
pub trait Machine {
    /// What the machine is told.
    type Input;
    /// What one input gives: events, effects and the rest.
    type Step;
    /// Why the machine did not take an input; it is unchanged then.
    type Error;

    /// Whether `input` comes from outside the machine (a prompt, a command) rather than
    /// answering what the machine asked for (a model's or a tool's answer, a timer).
    fn from_outside(input: &Self::Input) -> bool;

    /// Takes `input` at `now`.
    fn take(&mut self, now: u64, input: Self::Input) -> Result<Self::Step, Self::Error>;
}

impl Machine for SessionMachine {
    type Input = SessionInput;
    type Step = SessionStep;
    type Error = SessionError;

    fn from_outside(input: &SessionInput) -> bool {
        !matches!(input, SessionInput::Answer(_) | SessionInput::Wake)
    }

    fn take(&mut self, now: u64, input: SessionInput) -> Result<SessionStep, SessionError> {
        self.step(now, input)
    }
}

impl Machine for AgentMachine {
    type Input = Input;
    type Step = Step;
    type Error = StepError;

    fn from_outside(input: &Input) -> bool {
        !matches!(
            input,
            Input::Model { .. }
                | Input::ModelFailed { .. }
                | Input::ToolUpdate { .. }
                | Input::ToolActed { .. }
                | Input::ToolNested { .. }
                | Input::ToolFinished { .. }
                | Input::HookDecided { .. }
        )
    }

    fn take(&mut self, now: u64, input: Input) -> Result<Step, StepError> {
        self.step(now, input)
    }
}

/// Why a machine did not take an input (see the module doc). The machine is unchanged.
#[derive(Debug)]
pub enum Refused<E> {
    /// A command from outside the machine, refused with Pi's error text: the run goes on.
    Command(E),
    /// An answer or a timer: the world broke the machine's contract.
    Answer(E),
}

impl<E> Refused<E> {
    /// The machine's error, whatever refused it.
    pub fn into_error(self) -> E {
        match self {
            Refused::Command(error) | Refused::Answer(error) => error,
        }
    }
}

/// Feeds `input` at `now` to `machine`: its step, or why it refused the input.
pub fn feed<M: Machine>(
    machine: &mut M,
    now: u64,
    input: M::Input,
) -> Result<M::Step, Refused<M::Error>> {
    let from_outside = M::from_outside(&input);
    machine.take(now, input).map_err(|error| {
        if from_outside {
            Refused::Command(error)
        } else {
            Refused::Answer(error)
        }
    })
}
