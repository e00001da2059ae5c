//! A transport whose responses are given in advance: status, headers, the body's chunks and how
//! the body ends. Tests use it to drive [`crate::call::ModelCall`] without a server. Its
//! response, [`ScriptedStream`], is the one canned response body: a replay of a recorded call
//! and a chaos run serve theirs with it too, so recorded bytes reach the same decoders as live
//! traffic whatever serves them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;

use super::{BoxFuture, HttpResponse, HttpTransport, TransportError};
use crate::HttpRequest;

/// How a scripted body ends after its last chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptedEnd {
    /// The body is complete.
    Complete,
    /// The connection fails (a broken body, an idle timeout).
    Fail(TransportError),
    /// Nothing more ever arrives: the call ends only when it is aborted.
    Hang,
}

/// One scripted response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptedResponse {
    pub status: u16,
    /// Header names lower-cased, as a network response gives them.
    pub headers: Vec<(String, String)>,
    /// The body, in the chunks it arrives in.
    pub chunks: Vec<Bytes>,
    pub end: ScriptedEnd,
}

impl ScriptedResponse {
    /// A complete response with `status` and `body` in one chunk, no headers.
    pub fn new(status: u16, body: impl Into<Bytes>) -> Self {
        ScriptedResponse {
            status,
            headers: Vec::new(),
            chunks: vec![body.into()],
            end: ScriptedEnd::Complete,
        }
    }

    /// The same response with the header `name: value` added (`name` lower-cased).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_lowercase(), value.to_owned()));
        self
    }
}

/// What one request gets: a response, or a failure before any response (a refused
/// connection, a timeout waiting for the headers).
pub type ScriptedAttempt = Result<ScriptedResponse, TransportError>;

/// Answers requests with scripted attempts, in order, and keeps the requests it was sent.
#[derive(Debug, Default)]
pub struct ScriptedTransport {
    attempts: Mutex<VecDeque<ScriptedAttempt>>,
    sent: Mutex<Vec<HttpRequest>>,
}

impl ScriptedTransport {
    /// A transport answering the requests it is sent with `attempts`, one each, in order.
    pub fn new(attempts: impl IntoIterator<Item = ScriptedAttempt>) -> Self {
        ScriptedTransport {
            attempts: Mutex::new(attempts.into_iter().collect()),
            sent: Mutex::new(Vec::new()),
        }
    }

    /// The requests sent so far, in order.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl HttpTransport for ScriptedTransport {
    /// Answers with the next scripted attempt; once the script is used up, with a connection
    /// error saying so. `headers_timeout` does not apply: scripted headers are there at once.
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        _headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let next = self
            .attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let answer = match next {
            Some(Ok(response)) => Ok(Box::new(ScriptedStream::from(response)) as _),
            Some(Err(error)) => Err(error),
            None => Err(TransportError::Connect(format!(
                "no scripted response left for {} {}",
                request.method, request.url
            ))),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A scripted response being read: its chunks in order, then its end.
#[derive(Debug)]
pub struct ScriptedStream {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: VecDeque<Bytes>,
    end: Option<ScriptedEnd>,
    /// When set while the body hangs, the hang ends in a timeout.
    give_up: Option<Arc<AtomicBool>>,
}

impl ScriptedStream {
    /// The same response, whose hanging body times out ([`TransportError::Timeout`]) once
    /// `give_up` is set, as a stream that stalls past the idle timeout does: for a driver
    /// that decides in its own time when waiting is over (a chaos run's late timers).
    pub fn giving_up_when(mut self, give_up: Arc<AtomicBool>) -> Self {
        self.give_up = Some(give_up);
        self
    }
}

impl From<ScriptedResponse> for ScriptedStream {
    fn from(response: ScriptedResponse) -> Self {
        ScriptedStream {
            status: response.status,
            headers: response.headers,
            chunks: response.chunks.into(),
            end: Some(response.end),
            give_up: None,
        }
    }
}

impl HttpResponse for ScriptedStream {
    fn status(&self) -> u16 {
        self.status
    }

    fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Bytes>, TransportError>> {
        if let Some(chunk) = self.chunks.pop_front() {
            return Box::pin(std::future::ready(Ok(Some(chunk))));
        }
        // After the end has been reported once, the body stays ended.
        match self.end.take() {
            None | Some(ScriptedEnd::Complete) => Box::pin(std::future::ready(Ok(None))),
            Some(ScriptedEnd::Fail(error)) => Box::pin(std::future::ready(Err(error))),
            Some(ScriptedEnd::Hang) => {
                if self
                    .give_up
                    .as_ref()
                    .is_some_and(|g| g.load(Ordering::Relaxed))
                {
                    return Box::pin(std::future::ready(Err(TransportError::Timeout)));
                }
                self.end = Some(ScriptedEnd::Hang);
                Box::pin(std::future::pending())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::poll_once;

    #[test]
    fn a_hanging_body_waits_until_told_to_give_up_then_times_out() {
        let give_up = Arc::new(AtomicBool::new(false));
        let response = ScriptedResponse {
            status: 200,
            headers: Vec::new(),
            chunks: vec![Bytes::from_static(b"data: 1\n\n")],
            end: ScriptedEnd::Hang,
        };
        let mut stream = ScriptedStream::from(response).giving_up_when(Arc::clone(&give_up));
        assert_eq!(
            poll_once(stream.chunk()),
            Some(Ok(Some(Bytes::from_static(b"data: 1\n\n"))))
        );
        assert_eq!(poll_once(stream.chunk()), None, "it hangs");
        assert_eq!(poll_once(stream.chunk()), None, "it still hangs");
        give_up.store(true, Ordering::Relaxed);
        assert_eq!(
            poll_once(stream.chunk()),
            Some(Err(TransportError::Timeout))
        );
    }
}
