//! The `turn_end` hook point (Pi 1.5.2's `finishTurn`, where `AgentSession` runs the extensions'
//! `turn_end` handlers before the loop emits `turn_end`): where a handler is registered, a
//! finished turn waits for the extensions' decision, and the `abort` a handler asked for
//! (`ctx.abort()`, Harbor's turn cap, or `ctx.compact()`) is applied before the loop goes on, so the next request is
//! answered `This operation was aborted` at once as Pi's provider answers an aborted signal.

use crate::message::{AgentMessage, AssistantMessage};

use super::super::hooks::{HookEvent, HookPayload};
use super::{AgentMachine, CallId, Effect, Phase};

/// A finished turn waiting for the `turn_end` decision.
#[derive(Debug)]
pub(super) struct FinishedTurn {
    pub(super) call: CallId,
    assistant: AssistantMessage,
    results: Vec<AgentMessage>,
    terminate: bool,
    /// The turn's response ended the run (an error or an abort): `agent_end` follows.
    ends_run: bool,
}

/// How a finished turn goes on.
struct TurnDecided {
    terminate: bool,
    /// The turn's response ended the run (an error or an abort): `agent_end` follows.
    ends_run: bool,
    /// The handlers asked for another turn (ignored when the response ended the run, as Pi's
    /// loop ignores it after an error or an abort).
    go_on: bool,
}

impl AgentMachine {
    /// Ends the turn: through the `turn_end` hook point when a handler waits there, else at
    /// once.
    pub(super) fn finish_turn(
        &mut self,
        assistant: AssistantMessage,
        results: Vec<AgentMessage>,
        terminate: bool,
        ends_run: bool,
    ) {
        let handled = self.handled_hooks.contains(HookEvent::TurnEnd);
        let Some(run) = self.run.as_mut().filter(|_| handled) else {
            let decided = TurnDecided {
                terminate,
                ends_run,
                go_on: false,
            };
            return self.turn_decided(assistant, results, decided);
        };
        let turn_index = run.turns;
        let call = CallId(self.next_call);
        self.next_call += 1;
        let payload = HookPayload::TurnEnd {
            turn_index,
            message: AgentMessage::Assistant(assistant.clone()),
            tool_results: results.clone(),
        };
        if let Some(run) = self.run.as_mut() {
            run.phase = Phase::TurnEnd(FinishedTurn {
                call,
                assistant,
                results,
                terminate,
                ends_run,
            });
        }
        self.effect(Effect::Hook {
            call,
            payload,
            state: None,
        });
    }

    /// Puts `message` in the place of `original` in the turn in progress (its results so far)
    /// or finished (waiting for `turn_end`): Pi's `message_end` handlers replace a message in
    /// place, so the turn's end carries the replacement.
    pub(super) fn replace_in_turn(&mut self, original: &AgentMessage, message: &AgentMessage) {
        let Some(run) = self.run.as_mut() else { return };
        match (&mut run.phase, original, message) {
            (
                Phase::Tools(batch),
                AgentMessage::ToolResult(original),
                AgentMessage::ToolResult(message),
            ) => batch.replace_result(original, message),
            (
                Phase::TurnEnd(turn),
                AgentMessage::Assistant(original),
                AgentMessage::Assistant(message),
            ) if turn.assistant == *original => {
                turn.assistant = message.clone();
            }
            (Phase::TurnEnd(turn), _, _) => {
                if let Some(place) = turn.results.iter_mut().find(|m| *m == original) {
                    *place = message.clone();
                }
            }
            _ => {}
        }
    }

    /// Whether `call` is the finished turn waiting for its decision.
    pub(super) fn awaits_turn_end(&self, call: CallId) -> bool {
        matches!(self.run.as_ref().map(|r| &r.phase), Some(Phase::TurnEnd(t)) if t.call == call)
    }

    /// Ends the turn once its handlers are done (an abort they asked for already applied);
    /// `go_on`: they asked for another turn (Pi's `finishTurn` answering `continue`).
    pub(super) fn turn_end_decided(&mut self, go_on: bool) {
        let Some(run) = self.run.as_mut() else { return };
        let Phase::TurnEnd(turn) = std::mem::replace(&mut run.phase, Phase::Between) else {
            return;
        };
        let turn_end = TurnDecided {
            terminate: turn.terminate,
            ends_run: turn.ends_run,
            go_on,
        };
        self.turn_decided(turn.assistant, turn.results, turn_end);
    }

    fn turn_decided(
        &mut self,
        assistant: AssistantMessage,
        results: Vec<AgentMessage>,
        decided: TurnDecided,
    ) {
        let TurnDecided {
            terminate,
            ends_run,
            go_on,
        } = decided;
        if let Some(run) = self.run.as_mut() {
            run.turns += 1;
        }
        if ends_run {
            self.emit(crate::event::AgentEvent::TurnEnd {
                message: AgentMessage::Assistant(assistant),
                tool_results: results,
            });
            self.flush_held();
            return self.end_run();
        }
        self.after_turn(assistant, results, terminate, go_on);
    }
}
