//! One model call over HTTP: encode, send, decode, with abort. The interpreter drives it and
//! feeds the events to the core; cancelling is [`ModelCall::abort`], which closes the connection
//! and ends the stream the way pi-ai ends an aborted one.

use pi_core::agent::{ModelRequest, StreamEvent};
use pi_core::message::StopReason;

use crate::transport::{ResponseStream, Transport, TransportError};
use crate::{anthropic, google, openai_completions, openai_responses};
use crate::{failed_before_start, http_error, CallOptions, HttpRequest, StreamEnd};

/// The stream decoder of the model's API.
#[derive(Debug)]
enum Decoder {
    OpenAiCompletions(openai_completions::Decoder),
    AnthropicMessages(anthropic::Decoder),
    OpenAiResponses(openai_responses::Decoder),
    Google(google::Decoder),
}

impl Decoder {
    fn start(&mut self) -> Vec<StreamEvent> {
        match self {
            Decoder::OpenAiCompletions(d) => d.start(),
            Decoder::AnthropicMessages(d) => d.start(),
            Decoder::OpenAiResponses(d) => d.start(),
            Decoder::Google(d) => d.start(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        match self {
            Decoder::OpenAiCompletions(d) => d.feed(bytes),
            Decoder::AnthropicMessages(d) => d.feed(bytes),
            Decoder::OpenAiResponses(d) => d.feed(bytes),
            Decoder::Google(d) => d.feed(bytes),
        }
    }

    /// An error response, worded as the API's SDK words it (Google's differs from the others).
    fn http_error(
        &self,
        model: &pi_core::model::Model,
        timestamp: u64,
        status: u16,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Vec<StreamEvent> {
        match self {
            Decoder::Google(_) => {
                let message = google::http_error_message(status, content_type, body);
                failed_before_start(model, timestamp, message)
            }
            _ => http_error(model, timestamp, status, body),
        }
    }

    fn finish(&mut self, end: StreamEnd) -> Vec<StreamEvent> {
        match self {
            Decoder::OpenAiCompletions(d) => d.finish(end),
            Decoder::AnthropicMessages(d) => d.finish(end),
            Decoder::OpenAiResponses(d) => d.finish(end),
            Decoder::Google(d) => d.finish(end),
        }
    }
}

/// A call in progress.
#[derive(Debug)]
pub struct ModelCall {
    request: ModelRequest,
    http: Option<HttpRequest>,
    decoder: Decoder,
    response: Option<ResponseStream>,
    started: bool,
    done: bool,
    timestamp: u64,
}

impl ModelCall {
    /// Prepares the call made at `now` (the response's timestamp).
    pub fn new(request: ModelRequest, options: &CallOptions, now: u64) -> Self {
        let model = &request.model;
        let (http, decoder) = match model.api.as_str() {
            "anthropic-messages" => (
                Some(anthropic::encode(&request, options, now)),
                Decoder::AnthropicMessages(anthropic::Decoder::new(model, now)),
            ),
            "openai-responses" => (
                Some(openai_responses::encode(&request, options, now)),
                Decoder::OpenAiResponses(openai_responses::Decoder::new(model, now)),
            ),
            "google-generative-ai" => (
                Some(google::encode(&request, options, now)),
                Decoder::Google(google::Decoder::new(model, now)),
            ),
            "openai-completions" => (
                Some(openai_completions::encode(&request, options, now)),
                Decoder::OpenAiCompletions(openai_completions::Decoder::new(model, now)),
            ),
            // No encoder: `open` fails the call the way pi-ai does, through this decoder.
            _ => (
                None,
                Decoder::OpenAiCompletions(openai_completions::Decoder::new(model, now)),
            ),
        };
        ModelCall {
            decoder,
            request,
            http,
            response: None,
            started: false,
            done: false,
            timestamp: now,
        }
    }

    /// The HTTP request (what a recording stores).
    pub fn http_request(&self) -> Option<&HttpRequest> {
        self.http.as_ref()
    }

    /// Whether the stream has ended.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn failure(&mut self, message: String) -> Vec<StreamEvent> {
        self.done = true;
        self.response = None;
        self.decoder.finish(StreamEnd::Failed(message))
    }

    /// Sends the request; returns `start`, or the whole failed stream.
    pub async fn open(&mut self, transport: &Transport) -> Vec<StreamEvent> {
        let Some(http) = &self.http else {
            let message = format!(
                "No API provider registered for api: {}",
                self.request.model.api
            );
            return self.failure(message);
        };
        match transport.send(http).await {
            Err(error) => self.failure(error.to_string()),
            Ok(response) if !(200..300).contains(&response.status) => {
                let status = response.status;
                let content_type = response
                    .headers
                    .iter()
                    .find(|(name, _)| name == "content-type")
                    .map(|(_, value)| value.clone());
                let body = response.body().await.unwrap_or_default();
                self.done = true;
                let model = &self.request.model;
                self.decoder.http_error(
                    model,
                    self.timestamp,
                    status,
                    content_type.as_deref(),
                    &body,
                )
            }
            Ok(response) => {
                self.response = Some(response);
                self.started = true;
                self.decoder.start()
            }
        }
    }

    /// The events of the next body chunk (empty once done).
    pub async fn next(&mut self) -> Vec<StreamEvent> {
        let Some(response) = &mut self.response else {
            return Vec::new();
        };
        match response.chunk().await {
            Ok(Some(bytes)) => self.decoder.feed(&bytes),
            Ok(None) => {
                self.done = true;
                self.response = None;
                self.decoder.finish(StreamEnd::Complete)
            }
            Err(TransportError::Timeout) => self.failure(TransportError::Timeout.to_string()),
            Err(error) => self.failure(error.to_string()),
        }
    }

    /// Cancels the call: the connection closes and the stream ends as an aborted one.
    pub fn abort(&mut self) -> Vec<StreamEvent> {
        if self.done {
            return Vec::new();
        }
        self.done = true;
        self.response = None;
        if self.started {
            return self.decoder.finish(StreamEnd::Aborted);
        }
        // Aborted before any response: the SDK's own text, no `start`.
        match self
            .decoder
            .finish(StreamEnd::Failed(
                pi_core::agent::ABORTED_REQUEST.to_owned(),
            ))
            .pop()
        {
            Some(StreamEvent::Error { mut error, .. }) => {
                error.stop_reason = StopReason::Aborted;
                vec![StreamEvent::Error {
                    reason: StopReason::Aborted,
                    error,
                }]
            }
            other => other.into_iter().collect(),
        }
    }
}
