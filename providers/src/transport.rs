//! HTTP for model calls: one request, its response streamed back chunk by chunk.
//!
//! No retries happen here: a [`crate::call::ModelCall`] retries only when its options ask for
//! the original SDKs' retries (Pi's `retry.provider.maxRetries`), so by default every attempt is
//! visible to the core, which owns the retry policy, and to a recording. A call is
//! cancelled by dropping its [`ResponseStream`] (or the future that produces it): the connection
//! is closed at once.

use std::time::Duration;

use bytes::Bytes;

use crate::HttpRequest;

/// Timeouts of the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// Waiting for the response headers, and then for each chunk of the body.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(30),
            idle: Duration::from_secs(600),
        }
    }
}

/// Why a call failed below HTTP.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("Connection error: {0}")]
    Connect(String),
    #[error("Request timed out.")]
    Timeout,
    #[error("{0}")]
    Body(String),
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// Sends requests.
#[derive(Clone, Debug)]
pub struct Transport {
    client: reqwest::Client,
    timeouts: Timeouts,
}

/// A response whose body is still arriving.
#[derive(Debug)]
pub struct ResponseStream {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    response: reqwest::Response,
    idle: Duration,
}

impl Transport {
    /// A transport with its own connection pool.
    pub fn new(timeouts: Timeouts) -> Result<Self, TransportError> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| TransportError::Invalid(e.to_string()))?;
        Ok(Transport { client, timeouts })
    }

    /// Sends `request` and waits for the response headers.
    pub async fn send(&self, request: &HttpRequest) -> Result<ResponseStream, TransportError> {
        self.send_within(request, None).await
    }

    /// Sends `request` and waits at most `headers_timeout` (else the idle timeout) for the
    /// response headers.
    pub async fn send_within(
        &self,
        request: &HttpRequest,
        headers_timeout: Option<Duration>,
    ) -> Result<ResponseStream, TransportError> {
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|e| TransportError::Invalid(e.to_string()))?;
        let body = pi_core::json::to_string(&request.body)
            .map_err(|e| TransportError::Invalid(e.to_string()))?;
        let mut builder = self.client.request(method, &request.url).body(body);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let wait = headers_timeout.unwrap_or(self.timeouts.idle);
        let response = tokio::time::timeout(wait, builder.send())
            .await
            .map_err(|_| TransportError::Timeout)?
            .map_err(|e| {
                if e.is_timeout() {
                    TransportError::Timeout
                } else {
                    TransportError::Connect(error_chain(&e))
                }
            })?;
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        Ok(ResponseStream {
            status: response.status().as_u16(),
            headers,
            response,
            idle: self.timeouts.idle,
        })
    }
}

impl ResponseStream {
    /// The next chunk of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, TransportError> {
        match tokio::time::timeout(self.idle, self.response.chunk()).await {
            Err(_) => Err(TransportError::Timeout),
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(e)) => Err(TransportError::Body(error_chain(&e))),
        }
    }

    /// The whole remaining body (for error responses).
    pub async fn body(mut self) -> Result<Vec<u8>, TransportError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// The error and its causes, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
