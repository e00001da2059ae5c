//! The recording's index, built once as a replay starts: the run's spine (every input and
//! effect in order, what the replay walks) and the recorded model calls (options and HTTP
//! exchanges, which a replaying transport serves), read from the cassette's lines.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use pi_effects::driver::UserBash;
use pi_effects::tools::user_bash::BashResult;
use pi_providers::CallOptions;
use serde_json::{json, Value};

use crate::body::BodyText;
use crate::convert::{from_json, to_json, without_streamed};
use crate::divergence::Divergence;
use crate::format::{chunk_bytes, Line, RecordedEffect, RecordedInput};
use crate::read::Cassette;
use crate::replay_transport::{Exchange, RecordedRequest};

/// One line of the run's spine: what reached the machine or what it asked for, in order.
#[derive(Clone, Debug)]
pub(super) enum Spine {
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
    pub(super) fn describe(&self) -> Value {
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
pub(super) struct RecordedCall {
    pub(super) started_at: u64,
    pub(super) options: CallOptions,
    /// Shared with the replaying transport: starting a call copies nothing.
    pub(super) exchanges: Arc<Vec<Exchange>>,
}

impl RecordedCall {
    /// This call's recorded lines (its options, requests and response bytes) as call `call`,
    /// for a new cassette that continues this one (times within the call are not kept).
    pub(super) fn lines(&self, call: u64) -> Vec<Line> {
        let mut lines = vec![Line::Call {
            call,
            t: self.started_at,
            options: Box::new(to_json(&self.options)),
        }];
        for exchange in self.exchanges.iter() {
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
}

/// The index of a cassette's lines: see the module doc.
pub(super) struct Index {
    pub(super) spine: Vec<(usize, Spine)>,
    pub(super) recorded_calls: HashMap<u64, RecordedCall>,
    /// The recorded `event` lines of each call.
    pub(super) recorded_events: HashMap<u64, usize>,
}

/// Indexes `lines`, the lines of `cassette`; a line this build cannot read makes the cassette
/// unusable.
pub(super) fn index(cassette: &Cassette, lines: Vec<(usize, Line)>) -> Result<Index, Divergence> {
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
            Line::Effect {
                effect:
                    RecordedEffect::Hook {
                        call,
                        mut payload,
                        state,
                    },
            } => {
                without_streamed(&mut payload);
                Spine::Effect(RecordedEffect::Hook {
                    call,
                    payload,
                    state,
                })
            }
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
                        (result, None) => Ok(BashResult::from_json(&result.unwrap_or(Value::Null))),
                    },
                }),
            ),
            Line::Call { call, t, options } => {
                let options = from_json(&options, "options").map_err(|e| {
                    Divergence::unusable(cassette, number, format!("`call` line: {e}"))
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
                                cassette,
                                number,
                                "field `delta`: no request before it to change".into(),
                            )
                        })?;
                        previous.apply(&delta).map_err(|e| {
                            Divergence::unusable(cassette, number, format!("field `delta`: {e}"))
                        })?
                    }
                    (None, None) => {
                        return Err(Divergence::unusable(
                            cassette,
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
                    .map_err(|e| Divergence::unusable(cassette, number, e))?;
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
            Line::Cassette(_)
            | Line::Proxy(_)
            | Line::Redaction { .. }
            | Line::Replaced(_)
            | Line::Outcome(_) => continue,
        };
        spine.push((number, entry));
    }
    Ok(Index {
        spine,
        recorded_calls,
        recorded_events,
    })
}

/// Whether the session took no step after the `spine` entry at `position`: no event, answer or
/// wake reached it and it asked for nothing, only lines from outside came. An RPC run whose
/// stdin closed while events of a call it had read to the end were still on their way to the
/// session stopped so; the bytes of that call decode to more events than it took, and a run
/// that went on past the call is what would contradict them.
pub(super) fn took_no_step_after(spine: &[(usize, Spine)], position: usize) -> bool {
    spine.iter().skip(position + 1).all(|(_, entry)| {
        !matches!(
            entry,
            Spine::Event(..) | Spine::Answer(..) | Spine::Wake(..) | Spine::Effect(..)
        )
    })
}

fn last_exchange(calls: &mut HashMap<u64, RecordedCall>, call: u64) -> Option<&mut Exchange> {
    calls
        .get_mut(&call)
        .and_then(|c| Arc::make_mut(&mut c.exchanges).last_mut())
}
