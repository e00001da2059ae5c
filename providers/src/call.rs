//! One model call over HTTP: encode, send, decode, with abort. The interpreter drives it and
//! feeds the events to the core; cancelling is [`ModelCall::abort`], which closes the connection
//! and ends the stream the way pi-ai ends an aborted one. The bytes come from whichever
//! [`HttpTransport`] the caller gives (the network, a script, a recording), and the time and
//! jitter of SDK retries from its [`RetryClock`]: the call itself reads neither.

use std::time::Duration;

use pi_core::agent::{ModelRequest, Patch, StreamEvent};
use pi_core::message::StopReason;
use pi_core::model::Model;

use crate::retry::RetryClock;
use crate::transport::{HttpResponse, HttpTransport, TransportError};
use crate::{anthropic, google, openai_completions, openai_responses, retry};
use crate::{failed_before_start, CallOptions, HttpRequest, StreamDecoder, StreamEnd};
use serde_json::{Map, Value};

use crate::report::{self, StreamReport};
use crate::request_body::RequestBody;

/// `options` with the headers a `before_provider_headers` decision left in place of its own
/// (a header a handler deleted is not sent; one that is not text is sent as its JSON).
fn with_hooked_headers(options: &CallOptions, headers: &Map<String, Value>) -> CallOptions {
    let headers = headers
        .iter()
        .filter_map(|(name, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((name.clone(), text.clone())),
            other => Some((name.clone(), other.to_string())),
        })
        .collect();
    CallOptions {
        headers,
        ..options.clone()
    }
}

/// `events` after what was `reported` of the same read (no copy when nothing was).
fn reported_first(mut reported: Vec<StreamEvent>, events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    if reported.is_empty() {
        return events;
    }
    reported.extend(events);
    reported
}

/// A call in progress.
#[derive(Debug)]
pub struct ModelCall {
    /// The model called: what a failure before the stream names.
    model: Model,
    http: Option<HttpRequest>,
    decoder: Box<dyn StreamDecoder>,
    response: Option<Box<dyn HttpResponse>>,
    started: bool,
    done: bool,
    timestamp: u64,
    /// The SDK retries this call may still make (see [`crate::retry`]).
    max_retries: u32,
    /// How long each attempt may wait for the response headers.
    headers_timeout: Option<Duration>,
    /// The SDK's refusal of the options, if any.
    refused: Option<String>,
    /// How an Anthropic request went in a thread, while a refusal of it can still send it again.
    thread: Option<anthropic::Thread>,
    /// What a threaded Anthropic call makes of the session's thread state, handed to the core
    /// before the final event.
    tracking: Option<anthropic::Tracking>,
    /// What the answer's `diagnostics` gain before the stream (a refused thread).
    diagnostics: Vec<serde_json::Value>,
    /// The request and options of an Anthropic call that sent tools strict only because they
    /// prefer it, while it may still go again without when the strict-tool limits refuse it.
    strict_retry: Option<Box<(ModelRequest, CallOptions)>>,
    /// The request asks for the response head (an extension listens; Google's SDK gives none).
    report_head: bool,
    /// The request asks for the stream's events as the SDK reads them (an extension listens).
    report: Option<StreamReport>,
}

impl ModelCall {
    /// Prepares the call made at `now` (the response's timestamp). The request is borrowed: the
    /// call keeps only what it encodes, so a caller that checks requests need not copy one.
    pub fn new(request: &ModelRequest, options: &CallOptions, now: u64) -> Self {
        let hooked = request.provider_hooked.as_deref();
        let hooked_options;
        let options = match hooked.and_then(|h| h.headers.as_ref()) {
            Some(headers) => {
                hooked_options = with_hooked_headers(options, headers);
                &hooked_options
            }
            None => options,
        };
        let model = &request.model;
        let mut thread = None;
        let mut tracking = None;
        let mut strict_retry = None;
        let http = match model.api.as_str() {
            "anthropic-messages" => {
                let given_up = anthropic::strict_tools_given_up(request);
                let encoded = anthropic::encode_call(request, options, now, given_up);
                thread = encoded.thread;
                tracking = encoded.tracking;
                if encoded.preferred_strict {
                    strict_retry = Some(Box::new((request.clone(), options.clone())));
                }
                Some(encoded.http)
            }
            "openai-responses" => Some(openai_responses::encode(request, options, now)),
            "google-generative-ai" => Some(google::encode(request, options, now)),
            "openai-completions" => Some(openai_completions::encode(request, options, now)),
            // No encoder: `open` fails the call the way pi-ai does, through the decoder.
            _ => None,
        };
        let mut http = http;
        if let (Some(http), Some(payload)) =
            (http.as_mut(), hooked.and_then(|h| h.payload.as_ref()))
        {
            http.body = RequestBody::from(payload.clone());
        }
        let decoder: Box<dyn StreamDecoder> = match model.api.as_str() {
            "anthropic-messages" => Box::new(
                anthropic::Decoder::new(model, now)
                    .with_requested_effort(anthropic::requested_effort(request, options)),
            ),
            "openai-responses" => Box::new(
                openai_responses::Decoder::new(model, now)
                    .with_tools(&request.tools)
                    .with_requested_effort(openai_responses::requested_effort(request, options)),
            ),
            _ => ModelCall::decoder_for(model, now),
        };
        let report_head = hooked.is_some_and(|h| h.response) && model.api != "google-generative-ai";
        let report = hooked
            .filter(|h| h.stream)
            .and_then(|_| StreamReport::for_api(&model.api));
        let sdk = retry::applies_to(&model.api);
        // Pi 1.5.2 refuses a request its provider cannot build before the SDK sees the options.
        let refused = match model.api.as_str() {
            "openai-responses" => openai_responses::refusal(request, now),
            _ => None,
        }
        .or_else(|| options.refused.clone());
        ModelCall {
            decoder,
            http,
            response: None,
            started: false,
            done: false,
            timestamp: now,
            // A request's own cap (a cache warm's 0) comes before the setting.
            max_retries: if sdk {
                request.max_retries.unwrap_or(options.max_retries)
            } else {
                0
            },
            headers_timeout: options
                .timeout_ms
                .filter(|_| sdk)
                .map(Duration::from_millis),
            refused,
            thread,
            tracking,
            diagnostics: Vec::new(),
            strict_retry,
            report_head,
            report,
            model: model.clone(),
        }
    }

    /// The decoder of `model`'s API for a response to a request made at `now` (Chat
    /// Completions' for an API with none, which only reports the failure).
    pub fn decoder_for(model: &Model, now: u64) -> Box<dyn StreamDecoder> {
        match model.api.as_str() {
            "anthropic-messages" => Box::new(anthropic::Decoder::new(model, now)),
            "openai-responses" => Box::new(openai_responses::Decoder::new(model, now)),
            "google-generative-ai" => Box::new(google::Decoder::new(model, now)),
            _ => Box::new(openai_completions::Decoder::new(model, now)),
        }
    }

    /// The headers an extension's `before_provider_headers` handlers see for a call with
    /// `options` (Pi's merged provider and request headers; not the SDK's own).
    pub fn hook_headers(options: &CallOptions) -> Map<String, Value> {
        options
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect()
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
        let events = self.decoder.finish(StreamEnd::Failed(message));
        self.noted(events)
    }

    /// `events` with the call's diagnostics first in every whole message they carry, and the
    /// session's thread state before the final event of a threaded call.
    fn noted(&self, events: Vec<StreamEvent>) -> Vec<StreamEvent> {
        self.with_thread_state(self.with_diagnostics(events))
    }

    /// `events` with [`Patch::Thread`] before the final one, for a threaded call.
    fn with_thread_state(&self, mut events: Vec<StreamEvent>) -> Vec<StreamEvent> {
        let Some(tracking) = &self.tracking else {
            return events;
        };
        let end = events.iter().position(|event| {
            matches!(event, StreamEvent::Done { .. } | StreamEvent::Error { .. })
        });
        let state = match end.map(|at| &events[at]) {
            Some(StreamEvent::Done { message, .. }) => tracking.after(message),
            Some(StreamEvent::Error { error, .. }) => tracking.after(error),
            _ => return events,
        };
        if let Some(at) = end {
            events.insert(at, StreamEvent::Patch(Patch::Thread(state)));
        }
        events
    }

    /// `events` with the call's diagnostics first in every whole message they carry.
    fn with_diagnostics(&self, mut events: Vec<StreamEvent>) -> Vec<StreamEvent> {
        if self.diagnostics.is_empty() {
            return events;
        }
        for event in &mut events {
            let message = match event {
                StreamEvent::Start { partial } => partial,
                StreamEvent::Done { message, .. } => message,
                StreamEvent::Error { error, .. } => error,
                _ => continue,
            };
            let own = message.diagnostics.take().unwrap_or_default();
            message.diagnostics = Some(self.diagnostics.iter().cloned().chain(own).collect());
            // Added before the stream, they sit after `timestamp` (the struct's order), where
            // a decoder's own diagnostic alone would have come last.
            message.extra = pi_core::extra::Extra::default();
        }
        events
    }

    /// Sends the request over `transport`; returns `start`, or the whole failed stream. A
    /// connection error, a timeout or a retryable status is tried again while retries remain,
    /// after the SDK's wait, computed and waited through `clock` (any clock, a trait object too); dropping the future (an abort)
    /// stops at once.
    pub async fn open(
        &mut self,
        transport: &dyn HttpTransport,
        clock: &(impl RetryClock + ?Sized),
    ) -> Vec<StreamEvent> {
        if self.http.is_none() {
            let message = format!("No API provider registered for api: {}", self.model.api);
            return self.failure(message);
        }
        if let Some(message) = self.refused.take() {
            return self.failure(message);
        }
        let mut remaining = self.max_retries;
        while let Some(http) = &self.http {
            let sent = transport.send(http, self.headers_timeout).await;
            let wait = match &sent {
                // A request that could not be built fails the same way every time.
                Err(TransportError::Invalid(_)) => None,
                Err(_) if remaining > 0 => Some(None),
                Ok(response)
                    if !(200..300).contains(&response.status())
                        && remaining > 0
                        && retry::should_retry(response.status(), response.headers()) =>
                {
                    Some(Some(response.headers()))
                }
                _ => None,
            };
            if let Some(headers) = wait {
                let ms = retry::delay_ms(
                    headers,
                    remaining,
                    self.max_retries,
                    clock.now_ms(),
                    clock.jitter(),
                );
                drop(sent);
                clock.sleep(ms).await;
                remaining -= 1;
                continue;
            }
            return match sent {
                Err(error) => self.failure(error.to_string()),
                Ok(mut response) if !(200..300).contains(&response.status()) => {
                    let status = response.status();
                    let content_type = response.header("content-type").map(str::to_owned);
                    let body = response.body().await.unwrap_or_default();
                    let message =
                        self.decoder
                            .http_error_message(status, content_type.as_deref(), &body);
                    if let Some(refusal) = self.thread.take().and_then(|thread| {
                        Some((anthropic::refusal(status, &body, &message)?, thread))
                    }) {
                        let (refusal, thread) = refusal;
                        if let Some(tracking) = &mut self.tracking {
                            tracking.refused(refusal.new_thread());
                        }
                        self.diagnostics.push(anthropic::fallback_diagnostic(
                            &refusal,
                            &message,
                            self.timestamp,
                        ));
                        self.http = Some(anthropic::resend(http, &thread, &refusal));
                        remaining = self.max_retries;
                        continue;
                    }
                    if let Some(retry) = self
                        .strict_retry
                        .take()
                        .filter(|_| anthropic::strict_limits_refused(status, &body, &message))
                    {
                        // Built again without preferred strict tools, as Pi builds it: a
                        // thread it was continuing is gone, so it goes in a new one.
                        self.diagnostics.push(anthropic::strict_fallback_diagnostic(
                            &message,
                            self.timestamp,
                        ));
                        let (request, options) = *retry;
                        let request = ModelRequest {
                            thread: self.tracking.as_ref().and_then(|t| t.unchanged().clone()),
                            ..request
                        };
                        let encoded =
                            anthropic::encode_call(&request, &options, self.timestamp, true);
                        self.http = Some(encoded.http);
                        self.thread = encoded.thread;
                        self.tracking = encoded.tracking;
                        remaining = self.max_retries;
                        continue;
                    }
                    self.done = true;
                    let events = failed_before_start(&self.model, self.timestamp, message);
                    self.noted(events)
                }
                Ok(response) => {
                    if let Some(tracking) = &mut self.tracking {
                        tracking.responded();
                    }
                    let head = self
                        .report_head
                        .then(|| report::response_head(response.status(), response.headers()));
                    self.response = Some(response);
                    self.started = true;
                    let events = self.decoder.start();
                    reported_first(head.into_iter().collect(), self.noted(events))
                }
            };
        }
        Vec::new()
    }

    /// The events of the next body chunk (empty once done).
    pub async fn next(&mut self) -> Vec<StreamEvent> {
        let Some(response) = &mut self.response else {
            return Vec::new();
        };
        match response.chunk().await {
            Ok(Some(bytes)) => {
                let Some(reported) = self.report.as_mut().map(|r| r.feed(&bytes)) else {
                    let events = self.decoder.feed(&bytes);
                    return self.noted(events);
                };
                // Each event the SDK read goes to the listeners before pi-ai decodes it, and
                // pi-ai decodes it before the SDK hands on the next: the read is decoded in
                // pieces, each up to the end of an event reported.
                let mut out = Vec::new();
                let mut decoded = 0;
                for (end, reported) in reported {
                    out.push(reported);
                    let events = self.decoder.feed(&bytes[decoded..end]);
                    out.extend(self.noted(events));
                    decoded = end;
                }
                let events = self.decoder.feed(&bytes[decoded..]);
                out.extend(self.noted(events));
                out
            }
            Ok(None) => {
                self.done = true;
                self.response = None;
                let reported = match &mut self.report {
                    Some(report) => report.finish(),
                    None => Vec::new(),
                };
                let events = self.decoder.finish(StreamEnd::Complete);
                reported_first(reported, self.noted(events))
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
            let events = self.decoder.finish(StreamEnd::Aborted);
            return self.noted(events);
        }
        // Aborted before any response: the SDK's own text, no `start`.
        let events = self.decoder.finish(StreamEnd::Failed(
            pi_core::agent::ABORTED_REQUEST.to_owned(),
        ));
        match self.with_diagnostics(events).pop() {
            Some(StreamEvent::Error { mut error, .. }) => {
                error.stop_reason = StopReason::Aborted;
                self.with_thread_state(vec![StreamEvent::Error {
                    reason: StopReason::Aborted,
                    error,
                }])
            }
            other => other.into_iter().collect(),
        }
    }
}
