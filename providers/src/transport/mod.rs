//! HTTP for model calls: one request, its response streamed back chunk by chunk, behind the
//! [`HttpTransport`] trait so that the same [`crate::call::ModelCall`] (and so the same
//! decoders) runs over the network (pi-effects' `network::Transport`) or over bytes given in
//! advance ([`scripted::ScriptedTransport`], for tests and for replaying recorded calls). This
//! crate only describes the exchange; it opens no connection.
//!
//! No retries happen here: a [`crate::call::ModelCall`] retries only when its options ask for
//! the original SDKs' retries (Pi's `retry.provider.maxRetries`), so by default every attempt is
//! visible to the core, which owns the retry policy, and to a recording. A call is
//! cancelled by dropping its [`HttpResponse`] (or the future that produces it): the connection
//! is closed at once.

pub mod scripted;

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;

use crate::HttpRequest;

/// A boxed, sendable future: what the transport traits return, so that they stay object safe
/// on stable Rust without a macro crate.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a timed-out request says under Pi 1.5.2: the SDK's "Request timed out." with pi-ai's
/// detail of its cause, the aborted fetch (a `DOMException`, code 20).
pub const TIMEOUT_TEXT: &str = "Request timed out.: This operation was aborted (20)";

/// Why a call failed below HTTP. The texts are those the original's SDKs report, since they
/// become the failed message's `errorMessage`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("Connection error: {0}")]
    Connect(String),
    #[error("{}", TIMEOUT_TEXT)]
    Timeout,
    #[error("{0}")]
    Body(String),
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// Sends one HTTP request and hands back its response as soon as the headers are in. Every
/// source of response bytes (the network, a script, a recording) implements this, and
/// [`crate::call::ModelCall`] decodes whatever it returns the same way.
pub trait HttpTransport: Send + Sync {
    /// Sends `request`; waits at most `headers_timeout` (else the transport's own limit) for
    /// the response headers. [`TransportError::Invalid`] means the request itself cannot be
    /// sent (it is not retried); other errors are connection failures and timeouts.
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>>;
}

/// A response whose body is still arriving. Dropping it closes the connection.
pub trait HttpResponse: std::fmt::Debug + Send {
    /// The HTTP status.
    fn status(&self) -> u16;
    /// The response headers, names lower-cased, in the order received.
    fn headers(&self) -> &[(String, String)];
    /// The next chunk of the body; `None` at its end.
    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Bytes>, TransportError>>;
}

impl dyn HttpResponse {
    /// The value of the header `name` (lower case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The whole remaining body (for error responses).
    pub async fn body(&mut self) -> Result<Vec<u8>, TransportError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// Polls a future once, without a runtime: a call over a canned transport (a script, a
/// replayed or perturbed recording) is answered at once or never, so whatever drives one
/// (a replay, a chaos run) steps it here and treats `None` as "waits for ever".
pub fn poll_once<T>(future: impl Future<Output = T>) -> Option<T> {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(value) => Some(value),
        Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::poll_once;

    #[test]
    fn a_ready_future_gives_its_value_and_a_waiting_one_none() {
        assert_eq!(poll_once(async { 5 }), Some(5));
        assert_eq!(poll_once(std::future::pending::<u8>()), None);
        // A future that waits once is not polled again: it waits for ever here.
        let mut polled = false;
        let once = std::future::poll_fn(|_| {
            if polled {
                std::task::Poll::Ready(1)
            } else {
                polled = true;
                std::task::Poll::Pending
            }
        });
        assert_eq!(poll_once(once), None);
    }
}
