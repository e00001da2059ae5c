//! The HTTP side of a replay: a call's recorded exchanges, each request as recorded and how
//! one is compared with the request this build sends (byte for byte), and the transport that
//! serves the recorded responses and checks every attempt after the first.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use pi_providers::transport::scripted::{ScriptedEnd, ScriptedResponse, ScriptedStream};
use pi_providers::transport::{BoxFuture, HttpResponse, HttpTransport, TransportError};
use pi_providers::HttpRequest;
use serde_json::{json, Value};

use crate::body::{matches, BodyText, CheckedElements};
use crate::convert::transport_error;
use crate::format::RecordedEnd;
use crate::redact::Rules;

/// One HTTP exchange of a recorded call.
#[derive(Clone, Debug, Default)]
pub(crate) struct Exchange {
    pub(crate) line: usize,
    pub(crate) request: RecordedRequest,
    pub(crate) response: Option<(u16, Vec<(String, String)>)>,
    pub(crate) chunks: Vec<Bytes>,
    pub(crate) end: Option<RecordedEnd>,
}

/// The request as a cassette holds it: what is compared on replay.
pub(crate) fn request_json(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Value {
    json!({ "method": method, "url": url, "headers": headers, "body": body })
}

/// A recorded HTTP request, its body as recorded text.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecordedRequest {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<BodyText>,
}

/// A request that is not the recorded one: both as a cassette holds them, for the report.
#[derive(Clone, Debug)]
pub(crate) struct Mismatch {
    pub(crate) recorded: Value,
    pub(crate) asked: Value,
    /// An attempt after the last recorded one: a divergence only when the recording is whole
    /// and the call was not cancelled (which ended it live before that attempt).
    pub(crate) beyond: bool,
}

impl RecordedRequest {
    /// Whether `http` is this request: method, URL and headers equal, and the body the same
    /// bytes as recorded (two bodies equal as JSON but written otherwise, with their keys in
    /// another order, a number spelt otherwise or other spacing, are different requests).
    /// Values the user's `rules` found when it was recorded are compared as their recorded
    /// placeholders (see [`Rules::adopt_placeholders`]).
    pub(crate) fn check(
        &self,
        http: &HttpRequest,
        rules: &Rules,
        checked: &mut CheckedElements,
    ) -> Result<(), Mismatch> {
        let adopted = self.as_recorded(http, rules);
        let http = adopted.as_ref().unwrap_or(http);
        let same = self.method == http.method
            && self.url == http.url
            && self.headers == http.headers
            && self
                .body
                .as_ref()
                .is_some_and(|body| matches(body, &http.body, checked));
        if same {
            return Ok(());
        }
        checked.clear();
        let asked_body = http.body.to_value();
        let mut recorded = self.to_json();
        let mut asked = request_json(http.method, &http.url, &http.headers, &asked_body);
        if recorded == asked {
            // Equal as JSON: the report shows where the bytes part.
            let recorded_text = self.body.as_ref().map(BodyText::text).unwrap_or_default();
            let asked_text = serde_json::to_string(&*asked_body).unwrap_or_default();
            let (expected, actual) = where_bytes_differ(&recorded_text, &asked_text);
            recorded["body"] = Value::String(expected);
            asked["body"] = Value::String(actual);
        }
        Err(Mismatch {
            recorded,
            asked,
            beyond: false,
        })
    }

    /// `http` with this request's placeholders where `rules` found values when it was
    /// recorded; `None` when that changes nothing.
    fn as_recorded(&self, http: &HttpRequest, rules: &Rules) -> Option<HttpRequest> {
        if !rules.finds_in_requests() {
            return None;
        }
        let recorded = self.body.as_ref().map_or(Value::Null, BodyText::to_value);
        let replayed = http.body.to_value();
        let (headers, body) =
            rules.adopt_placeholders((&self.headers, &recorded), (&http.headers, &replayed))?;
        Some(HttpRequest {
            method: http.method,
            url: http.url.clone(),
            headers,
            body: body.into(),
        })
    }

    fn to_json(&self) -> Value {
        let body = self.body.as_ref().map_or(Value::Null, BodyText::to_value);
        request_json(&self.method, &self.url, &self.headers, &body)
    }
}

/// Bytes shown on each side of the first difference of two bodies equal as JSON.
const BYTES_AROUND: usize = 60;

/// Where two texts first differ, each as the bytes around that place.
fn where_bytes_differ(recorded: &str, asked: &str) -> (String, String) {
    let at = recorded
        .bytes()
        .zip(asked.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(asked.len()));
    let around = |text: &str| {
        let mut start = at.saturating_sub(BYTES_AROUND);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + BYTES_AROUND).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        format!(
            "equal as JSON, written otherwise from byte {at} of {}: …{}…",
            text.len(),
            &text[start..end]
        )
    };
    (around(recorded), around(asked))
}

/// Serves one call's recorded exchanges, in order, each attempt after the first checked
/// against its recorded request (the first is checked when the call starts).
#[derive(Clone, Debug)]
pub(crate) struct ReplayTransport {
    exchanges: Arc<Vec<Exchange>>,
    /// The user's redaction rules the cassette was recorded with.
    rules: Arc<Rules>,
    /// Whether requests are checked (not for an imported cassette, see `Imported`).
    checked: bool,
    /// The next exchange to serve, and the first attempt that was not the recorded one (its
    /// cassette line).
    state: Arc<Mutex<TransportState>>,
}

#[derive(Debug, Default)]
struct TransportState {
    next: usize,
    mismatch: Option<(usize, Mismatch)>,
}

impl ReplayTransport {
    pub(crate) fn new(exchanges: Arc<Vec<Exchange>>, checked: bool, rules: Arc<Rules>) -> Self {
        ReplayTransport {
            exchanges,
            rules,
            checked,
            state: Arc::default(),
        }
    }

    /// The first attempt that was not the recorded one, with the line of the recorded one.
    pub(crate) fn mismatch(&self) -> Option<(usize, Mismatch)> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.mismatch.clone()
    }

    /// When requests are checked and fewer attempts were made than recorded: how many were
    /// made, the line of the first not made, and how many were recorded.
    pub(crate) fn fewer_attempts(&self) -> Option<(usize, usize, usize)> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let next = self.exchanges.get(state.next).filter(|_| self.checked)?;
        Some((state.next, next.line, self.exchanges.len()))
    }
}

impl HttpTransport for ReplayTransport {
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        _headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        let exchange = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.next += 1;
            let index = state.next - 1;
            let exchange = self.exchanges.get(index).cloned();
            match (&exchange, self.exchanges.last()) {
                (Some(exchange), _) if self.checked && index > 0 => {
                    let mut fresh = CheckedElements::default();
                    if let Err(mismatch) = exchange.request.check(request, &self.rules, &mut fresh)
                    {
                        state.mismatch.get_or_insert((exchange.line, mismatch));
                        return Box::pin(std::future::pending());
                    }
                }
                (None, Some(last)) if self.checked => {
                    let recorded = format!(
                        "no more attempts were recorded: the call made {}",
                        self.exchanges.len()
                    );
                    let asked = request_json(
                        request.method,
                        &request.url,
                        &request.headers,
                        &request.body.to_value(),
                    );
                    let mismatch = Mismatch {
                        recorded: json!(recorded),
                        asked,
                        beyond: true,
                    };
                    state.mismatch.get_or_insert((last.line, mismatch));
                }
                _ => {}
            }
            exchange
        };
        match exchange {
            Some(Exchange {
                response: Some((status, headers)),
                chunks,
                end,
                ..
            }) => {
                let end = match end {
                    Some(RecordedEnd::Complete) => ScriptedEnd::Complete,
                    Some(RecordedEnd::Error(error)) => ScriptedEnd::Fail(transport_error(&error)),
                    // Dropped while it streamed, or cut off: nothing more was recorded.
                    Some(RecordedEnd::Dropped) | None => ScriptedEnd::Hang,
                };
                let response = ScriptedResponse {
                    status,
                    headers,
                    chunks,
                    end,
                };
                let stream = ScriptedStream::from(response);
                Box::pin(std::future::ready(Ok(
                    Box::new(stream) as Box<dyn HttpResponse>
                )))
            }
            Some(Exchange {
                end: Some(RecordedEnd::Error(error)),
                ..
            }) => Box::pin(std::future::ready(Err(transport_error(&error)))),
            // Dropped before its response, or cut off: nothing more was recorded.
            _ => Box::pin(std::future::pending()),
        }
    }
}
