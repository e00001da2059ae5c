//! Answering model calls from the recording: a call the machine starts gets a replaying
//! transport over its recorded exchanges and the live decoder, and each recorded `event` line
//! is answered with the next event those bytes decode to, checked against the recorded count.

use std::collections::VecDeque;
use std::sync::Arc;

use pi_core::agent::{CallId, ModelRequest, StreamEvent};
use pi_providers::call::ModelCall;
use pi_providers::transport::poll_once;
use serde_json::json;

use super::index::took_no_step_after;
use super::Replay;
use crate::divergence::{Divergence, DivergenceKind};
use crate::format::{RecordedEnd, RecordedMode};
use crate::replay_transport::ReplayTransport;

/// A model call being replayed.
#[derive(Debug)]
pub(super) struct ReplayCall {
    pub(super) model_call: ModelCall,
    transport: ReplayTransport,
    opened: bool,
    pub(super) cancelled: bool,
    events: VecDeque<StreamEvent>,
    /// Recorded `event` lines of this call not yet replayed.
    recorded_events: usize,
    /// Whether the recorded response ended (complete, or failed) rather than being dropped: then
    /// every event its bytes decode to reached the machine, and none may be left over.
    ended: bool,
}

impl Replay {
    /// Starts replaying model call `call` asking `request`, if it was recorded: checks its
    /// first request against the recorded one and readies its transport and decoder.
    pub(super) fn start_call(
        &mut self,
        call: CallId,
        request: &ModelRequest,
    ) -> Result<(), Divergence> {
        let Some(recorded) = self.recorded_calls.get(&call.0) else {
            return Ok(());
        };
        let model_call = ModelCall::new(request, &recorded.options, recorded.started_at);
        // An imported cassette's requests are this build's own (see `Imported`).
        let checked = self.cassette.header.imported.is_none();
        if let (true, Some(http), Some(first)) = (
            checked,
            model_call.http_request(),
            recorded.exchanges.first(),
        ) {
            if let Err(mismatch) = first.request.check(http, &self.rules, &mut self.checked) {
                let mut divergence =
                    self.diverge(DivergenceKind::Request, mismatch.recorded, mismatch.asked);
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
            },
        );
        Ok(())
    }

    /// The next event of call `call`, decoded from its recorded bytes.
    pub(super) fn model_event(&mut self, call: u64) -> Result<StreamEvent, Divergence> {
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
                if replaying.recorded_events == 0 && replaying.ended && !replaying.cancelled {
                    let more = more_events(replaying);
                    // Unless the recorded run stopped here (an RPC session stops when its
                    // stdin closes, busy or not), the session still busy.
                    let stopped = || {
                        self.cassette.header.mode == RecordedMode::Rpc
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
