//! The interpreter a session runs over: live, live and recorded into a cassette, or replayed
//! from one. One enum rather than a type parameter, so that [`crate::Session`] is one type
//! whatever its builder chose.

use pi_cassettes::{Record, Replay};
use pi_core::agent::Effect;
use pi_core::agent_session::SessionInput;
use pi_effects::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, RunEnding, UserCommand,
};
use pi_effects::live::Live;

/// Which interpreter answers the session's effects.
#[derive(Debug)]
pub(crate) enum Io {
    Live(Live),
    Record(Record<Live>),
    Replay(Box<Replay>),
}

impl Interpreter for Io {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        match self {
            Io::Live(io) => io.outside(input),
            Io::Record(io) => io.outside(input),
            Io::Replay(io) => io.outside(input),
        }
    }

    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        match self {
            Io::Live(io) => io.arrived(input),
            Io::Record(io) => io.arrived(input),
            Io::Replay(io) => io.arrived(input),
        }
    }

    fn front_end(&mut self, busy: bool) -> FrontEndNext {
        match self {
            Io::Live(io) => io.front_end(busy),
            Io::Record(io) => io.front_end(busy),
            Io::Replay(io) => io.front_end(busy),
        }
    }

    fn run_user_command(&mut self, command: UserCommand) {
        match self {
            Io::Live(io) => io.run_user_command(command),
            Io::Record(io) => io.run_user_command(command),
            Io::Replay(io) => io.run_user_command(command),
        }
    }

    fn end(&mut self, ending: &RunEnding<'_>) -> Result<(), InterpretError> {
        match self {
            Io::Live(io) => io.end(ending),
            Io::Record(io) => io.end(ending),
            Io::Replay(io) => io.end(ending),
        }
    }

    fn start(&mut self, effect: Effect) {
        match self {
            Io::Live(io) => io.start(effect),
            Io::Record(io) => io.start(effect),
            Io::Replay(io) => io.start(effect),
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        match self {
            Io::Live(io) => io.next(wake_at).await,
            Io::Record(io) => io.next(wake_at).await,
            Io::Replay(io) => io.next(wake_at).await,
        }
    }
}
