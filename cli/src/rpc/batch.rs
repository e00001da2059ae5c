//! The lines of one read (Pi 1.5.2's RPC mode): Node hands every complete line of a stdin chunk
//! to the loop at once, and each command runs up to its first `await` before the next line is
//! read. `steer`, `follow_up` and `prompt` await the input hooks before they take effect, so the
//! other commands of the chunk are answered from the state before them (e_rpc `s1` counts no
//! pending message though a steer and a follow-up came just before it in the same write).
//!
//! What a read holds comes with each line (the reader's `with_next`, recorded with the line in a
//! cassette), so a replay orders the output as the recorded run did, whatever its own reads.
//! Within a read, in Pi's microtask order:
//! 1. each line in turn: the other commands' output (answered as read, held until here), the
//!    queueing of steers, follow-ups and prompts while streaming (their `queue_update`), and the
//!    start of a prompt while idle;
//! 2. the prompts' answers (a started run's first events after its answer);
//! 3. the prompts refused;
//! 4. the steers' and follow-ups' answers.

use pi_core::agent_session::SessionInput;
use pi_core::event::Event;
use pi_core::rpc::RpcResponse;
use serde_json::Value;

use super::commands::{queued_input, Failure, Prompted};
use super::{failure, Front, Rpc};

/// The lines of a read not yet taken to their end.
#[derive(Default)]
pub(super) struct Batch {
    lines: Vec<ReadLine>,
}

/// One line of a read, as far as it went when it was read.
enum ReadLine {
    /// A command answered as it was read: what it printed, held.
    Answered(Vec<Vec<u8>>),
    /// A steer or a follow-up, queued once the read's lines were read.
    Queue {
        id: Option<Value>,
        kind: String,
        input: SessionInput,
    },
    /// A prompt, taken once the read's lines were read.
    Prompt { id: Option<Value>, command: Value },
}

impl<I: Front> Rpc<I> {
    /// Handles a stdin line; `with_next` when the read that brought it brought the next line
    /// too. A line read alone is handled at once.
    pub(super) fn read_line(&mut self, line: &str, with_next: bool) {
        if self.batch.is_none() && !with_next {
            self.handle_line(line);
            return;
        }
        let read = self.read_in_batch(line);
        self.batch
            .get_or_insert_with(Batch::default)
            .lines
            .push(read);
        if !with_next {
            self.end_batch();
        }
    }

    /// Whether lines of a read are still coming (nothing else is taken meanwhile, so that a
    /// recording holds them together).
    pub(super) fn in_batch(&self) -> bool {
        self.batch.is_some()
    }

    fn read_in_batch(&mut self, line: &str) -> ReadLine {
        if let Ok(command) = serde_json::from_str::<Value>(line) {
            let id = command.get("id").cloned();
            match command.get("type").and_then(Value::as_str) {
                Some("prompt") => return ReadLine::Prompt { id, command },
                Some(kind @ ("steer" | "follow_up")) => {
                    if let Ok(input) = queued_input(kind, &command) {
                        let kind = kind.to_owned();
                        return ReadLine::Queue { id, kind, input };
                    }
                }
                _ => {}
            }
        }
        self.out.hold();
        self.handle_line(line);
        ReadLine::Answered(self.out.release())
    }

    /// Takes the read's lines to their end, in Pi's order (see the module's doc).
    pub(super) fn end_batch(&mut self) {
        let Some(batch) = self.batch.take() else {
            return;
        };
        // A started prompt's events with its answer; a queued one's answer alone.
        let mut prompted: Vec<(RpcResponse, Option<Vec<Event>>)> = Vec::new();
        let mut refused = Vec::new();
        let mut queued = Vec::new();
        for line in batch.lines {
            match line {
                ReadLine::Answered(lines) => self.out.write_lines(lines),
                ReadLine::Queue { id, kind, input } => {
                    let answer = self.queue(input);
                    queued.push(answer_of(id, &kind, answer));
                }
                ReadLine::Prompt { id, command } => match self.prompted(id.clone(), &command) {
                    Ok(Prompted::Queued { events, response }) => {
                        for event in &events {
                            self.out.json_line(event);
                        }
                        prompted.push((response, None));
                    }
                    Ok(Prompted::Started { response, events }) => {
                        prompted.push((response, Some(events)));
                    }
                    Ok(Prompted::Command { events } | Prompted::Deciding { events }) => {
                        for event in &events {
                            self.out.json_line(event);
                        }
                    }
                    Err(error) => refused.push(answer_of(id, "prompt", Err(error))),
                },
            }
        }
        for (response, events) in prompted {
            match events {
                Some(events) => self.answer_started(response, &events),
                None => self.respond(&response),
            }
        }
        for response in refused.iter().chain(&queued) {
            self.respond(response);
        }
    }
}

/// The answer to command `kind`: `data` on success, Pi's error otherwise.
fn answer_of(id: Option<Value>, kind: &str, answer: Result<Value, Failure>) -> RpcResponse {
    match answer {
        Ok(data) => super::success(id, kind, Some(data)),
        Err(Failure::Unknown) => failure(id, kind, format!("Unknown command: {kind}")),
        Err(Failure::Message(message)) => failure(id, kind, message),
    }
}
