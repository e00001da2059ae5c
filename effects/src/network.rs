//! The network transport: requests sent with reqwest, with a connect timeout and an idle
//! timeout (for the headers, then for each chunk of the body). It implements the providers'
//! [`HttpTransport`], so a live model call runs the same encoders and decoders as a scripted or
//! replayed one; the providers themselves never touch the network.

use std::time::Duration;

use bytes::Bytes;
use pi_providers::transport::{BoxFuture, HttpResponse, HttpTransport, TransportError};
use pi_providers::HttpRequest;

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

/// Sends requests over the network (its own connection pool).
#[derive(Clone, Debug)]
pub struct Transport {
    client: reqwest::Client,
    timeouts: Timeouts,
}

/// A response from the network whose body is still arriving (an [`HttpResponse`]).
#[derive(Debug)]
pub struct ResponseStream {
    status: u16,
    headers: Vec<(String, String)>,
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

    /// Sends `request` and waits at most `headers_timeout` (else the idle timeout) for the
    /// response headers.
    async fn send_within(
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

impl HttpTransport for Transport {
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        Box::pin(async move {
            let response = self.send_within(request, headers_timeout).await?;
            Ok(Box::new(response) as Box<dyn HttpResponse>)
        })
    }
}

impl ResponseStream {
    /// The next chunk of the body, waiting at most the idle timeout.
    async fn next_chunk(&mut self) -> Result<Option<Bytes>, TransportError> {
        match tokio::time::timeout(self.idle, self.response.chunk()).await {
            Err(_) => Err(TransportError::Timeout),
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(e)) => Err(TransportError::Body(error_chain(&e))),
        }
    }
}

impl HttpResponse for ResponseStream {
    fn status(&self) -> u16 {
        self.status
    }

    fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Bytes>, TransportError>> {
        Box::pin(self.next_chunk())
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
