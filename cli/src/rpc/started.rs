//! The answer to a `prompt` that starts a run (Pi 1.5.2's `preflightResult("started")`): Pi
//! gives it once the prompt's preparation is over, after its `input` and `before_agent_start`
//! handlers ran (their `extension_error` lines come first) and before the run's `agent_start`.
//! Where handlers hold the prompt up, the answer waits here for that `agent_start`; a prompt
//! whose run never starts (an `input` handler handled it) is answered `handled` once the
//! session is idle.

use std::collections::VecDeque;

use pi_core::event::{AgentEvent, Event, SessionEvent};
use pi_core::rpc::RpcResponse;

use super::commands::{disposition, Disposition};
use super::{success, Front, Rpc};
use crate::output::Stdout;

/// The answers waiting for a run's `agent_start`, oldest first: a prompt's `started`, and a
/// command's `handled` when its handler asked for a custom message's run, which also goes out
/// before an `extension_error` (Pi 1.5.2 answers the command before a user message sent beside
/// that run is refused).
pub(super) type Waiting = VecDeque<(RpcResponse, Before)>;

/// What a waiting answer goes out before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Before {
    /// The run's `agent_start`.
    AgentStart,
    /// The run's `agent_start`, or an `extension_error` before it.
    AgentStartOrError,
}

impl<I: Front> Rpc<I> {
    /// Writes a prompt's `started` answer with the events its submission printed: before the
    /// run's `agent_start` when it is among them, else held until it comes.
    pub(super) fn answer_started(&mut self, response: RpcResponse, events: &[Event]) {
        let start = events.iter().position(is_agent_start);
        let (before, after) = events.split_at(start.unwrap_or(events.len()));
        for event in before {
            self.out.json_line(event);
        }
        self.started_waiters
            .push_back((response, Before::AgentStart));
        for event in after {
            print_event(&mut self.out, &mut self.started_waiters, event);
        }
    }

    /// Answers the prompts still waiting for their run once the session is idle: no run
    /// started for them, their text was handled.
    pub(super) fn answer_unstarted(&mut self) {
        if self.session.machine().is_busy() {
            return;
        }
        while let Some((response, _)) = self.started_waiters.pop_front() {
            let handled = disposition(Disposition::Handled);
            self.respond(&success(response.id, "prompt", Some(handled)));
        }
    }
}

/// Prints a session event; a run's `agent_start` (or an `extension_error`, for a command's
/// answer) is preceded by the answer that waited for it.
pub(super) fn print_event(out: &mut Stdout, waiting: &mut Waiting, event: &Event) {
    let error = matches!(event, Event::Session(SessionEvent::ExtensionError { .. }));
    let due = match waiting.front() {
        Some((_, Before::AgentStartOrError)) => is_agent_start(event) || error,
        Some((_, Before::AgentStart)) => is_agent_start(event),
        None => false,
    };
    if due {
        if let Some((response, _)) = waiting.pop_front() {
            out.json_line(&response);
        }
    }
    out.json_line(event);
}

fn is_agent_start(event: &Event) -> bool {
    matches!(event, Event::Agent(AgentEvent::AgentStart))
}
