//! The transport seam below `ModelCall`: bytes taken off real HTTP (the kit's mock LLM on
//! 127.0.0.1) and the same bytes given by the scripted transport decode to the same events, and
//! SDK retries over scripted responses with a fixed clock come out the same every time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{kinds, mock_claude, mock_model_at};
use pi_core::agent::{ModelRequest, StreamEvent};
use pi_core::message::{ContentBlock, Message, StopReason, UserMessage};
use pi_core::model::Model;
use pi_effects::network::{Timeouts, Transport};
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::transport::scripted::{ScriptedEnd, ScriptedResponse, ScriptedTransport};
use pi_providers::transport::{BoxFuture, HttpResponse, HttpTransport, TransportError};
use pi_providers::{CallOptions, HttpRequest};
use pi_testkit::MockLlm;
use serde_json::json;

fn request(model: Model) -> ModelRequest {
    ModelRequest {
        model,
        system_prompt: "Be brief.".into(),
        messages: vec![Message::User(UserMessage::from_text("Hi", Vec::new(), 1))].into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    }
}

fn options(max_retries: u32) -> CallOptions {
    CallOptions {
        api_key: "mock-key".into(),
        max_retries,
        ..CallOptions::default()
    }
}

/// Runs a call to its end over `transport`; every event, in order.
async fn run(
    model: Model,
    options: &CallOptions,
    transport: &dyn HttpTransport,
    clock: &FixedClock,
) -> Vec<StreamEvent> {
    let mut call = ModelCall::new(&request(model), options, 1_000);
    let mut events = call.open(transport, clock).await;
    while !call.is_done() {
        events.extend(call.next().await);
    }
    events
}

/// A transport that passes requests to another and keeps a copy of the last response as it
/// is read: status, headers and the body's chunks as they arrived.
struct Recorder<'t> {
    inner: &'t dyn HttpTransport,
    taken: Arc<Mutex<Option<ScriptedResponse>>>,
}

#[derive(Debug)]
struct Recording {
    inner: Box<dyn HttpResponse>,
    taken: Arc<Mutex<Option<ScriptedResponse>>>,
}

impl HttpTransport for Recorder<'_> {
    fn send<'a>(
        &'a self,
        request: &'a HttpRequest,
        headers_timeout: Option<Duration>,
    ) -> BoxFuture<'a, Result<Box<dyn HttpResponse>, TransportError>> {
        Box::pin(async move {
            let inner = self.inner.send(request, headers_timeout).await?;
            *self.taken.lock().unwrap() = Some(ScriptedResponse {
                status: inner.status(),
                headers: inner.headers().to_vec(),
                chunks: Vec::new(),
                end: ScriptedEnd::Complete,
            });
            let taken = Arc::clone(&self.taken);
            Ok(Box::new(Recording { inner, taken }) as Box<dyn HttpResponse>)
        })
    }
}

impl HttpResponse for Recording {
    fn status(&self) -> u16 {
        self.inner.status()
    }

    fn headers(&self) -> &[(String, String)] {
        self.inner.headers()
    }

    fn chunk(&mut self) -> BoxFuture<'_, Result<Option<Bytes>, TransportError>> {
        Box::pin(async move {
            let chunk = self.inner.chunk().await;
            let mut taken = self.taken.lock().unwrap();
            let taken = taken.as_mut().unwrap();
            match &chunk {
                Ok(Some(bytes)) => taken.chunks.push(bytes.clone()),
                Ok(None) => taken.end = ScriptedEnd::Complete,
                Err(error) => taken.end = ScriptedEnd::Fail(error.clone()),
            }
            chunk
        })
    }
}

/// The same body cut into `size`-byte chunks.
fn rechunked(response: &ScriptedResponse, size: usize) -> ScriptedResponse {
    let body: Vec<u8> = response.chunks.concat();
    ScriptedResponse {
        chunks: body.chunks(size).map(Bytes::copy_from_slice).collect(),
        ..response.clone()
    }
}

#[tokio::test]
async fn the_same_bytes_give_the_same_events_over_http_and_from_a_script() {
    let mock = MockLlm::start(&json!([
        {"text": ["Hello", " there."], "usage": {"input": 12, "output": 3}},
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"path\"", ": \"a.txt\"}"]}]},
        {"thinking": ["Let me think."], "text": ["Claude says hi."]},
        {"status": 400, "error_body": {"error": {"message": "Bad things", "type": "invalid_request_error"}}}
    ]));
    let mut claude = mock_claude();
    claude.base_url = mock.url("");
    let models = [
        mock_model_at(&mock.url("/v1")),
        mock_model_at(&mock.url("/v1")),
        claude,
        mock_model_at(&mock.url("/v1")),
    ];
    let network = Transport::new(Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(10),
    })
    .unwrap();
    let clock = FixedClock::new(1_000, 0.5);
    for (step, model) in models.into_iter().enumerate() {
        let recorder = Recorder {
            inner: &network,
            taken: Arc::new(Mutex::new(None)),
        };
        let live = run(model.clone(), &options(0), &recorder, &clock).await;
        let taken = recorder.taken.lock().unwrap().clone().unwrap();
        assert!(!taken.chunks.is_empty(), "step {step}: no body was read");

        let scripted = ScriptedTransport::new([Ok(taken.clone())]);
        let replayed = run(model.clone(), &options(0), &scripted, &clock).await;
        assert_eq!(replayed, live, "step {step}");
        assert_eq!(scripted.requests().len(), 1);
        // Where the body is cut does not matter to the decoder.
        let scripted = ScriptedTransport::new([Ok(rechunked(&taken, 7))]);
        let cut = run(model, &options(0), &scripted, &clock).await;
        assert_eq!(cut, live, "step {step}, 7-byte chunks");

        let (_, message) = kinds(live);
        if step == 3 {
            assert_eq!(
                message.error_message.as_deref(),
                Some(r#"400: {"message":"Bad things","type":"invalid_request_error"}"#)
            );
        } else {
            assert_eq!(
                message.stop_reason,
                if step == 1 {
                    StopReason::ToolUse
                } else {
                    StopReason::Stop
                }
            );
        }
    }
    assert_eq!(mock.requests().len(), 4);
}

/// A Chat Completions stream answering `text`.
fn completion(text: &str) -> String {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let event = json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        });
        format!("data: {event}\n\n")
    };
    [
        chunk(json!({"role": "assistant", "content": text}), json!(null)),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

#[tokio::test]
async fn sdk_retries_over_a_script_with_a_fixed_clock_are_deterministic() {
    let script = || {
        ScriptedTransport::new([
            // A date two seconds after the clock's time: wait exactly that.
            Ok(ScriptedResponse::new(503, "busy")
                .with_header("retry-after", "Thu, 01 Jan 1970 00:00:03 GMT")),
            // No header: the SDK's backoff for the second retry, 1 s less a quarter of jitter.
            Ok(ScriptedResponse::new(
                500,
                r#"{"error":{"message":"oops"}}"#,
            )),
            Ok(ScriptedResponse::new(200, completion("Recovered."))),
        ])
    };
    let model = mock_model_at("http://127.0.0.1:1/v1");
    let mut outcomes = Vec::new();
    for _ in 0..2 {
        let transport = script();
        let clock = FixedClock::new(1_000, 0.25);
        let events = run(model.clone(), &options(2), &transport, &clock).await;
        assert_eq!(transport.requests().len(), 3);
        assert_eq!(clock.waits(), [2_000, 937]);
        outcomes.push(events);
    }
    assert_eq!(outcomes[0], outcomes[1]);
    let (seen, message) = kinds(outcomes.remove(0));
    assert_eq!(seen.first().map(String::as_str), Some("start"));
    assert_eq!(message.content, vec![ContentBlock::text("Recovered.")]);

    // One retry fewer: the 500 is the answer, worded as the SDK words it.
    let transport = script();
    let clock = FixedClock::new(1_000, 0.25);
    let (seen, message) = kinds(run(model, &options(1), &transport, &clock).await);
    assert!(seen.is_empty());
    assert_eq!(
        message.error_message.as_deref(),
        Some(r#"500: {"message":"oops"}"#)
    );
    assert_eq!(clock.waits(), [2_000]);
}

#[tokio::test]
async fn a_scripted_body_can_break_or_hang_until_aborted() {
    let model = mock_model_at("http://127.0.0.1:1/v1");
    let body = completion("Cut short.");
    let head = &body[..body.find("\n\n").unwrap() + 2];
    let broken = ScriptedResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: vec![Bytes::copy_from_slice(head.as_bytes())],
        end: ScriptedEnd::Fail(TransportError::Body("connection reset".into())),
    };
    let transport = ScriptedTransport::new([Ok(broken.clone())]);
    let clock = FixedClock::default();
    let (_, message) = kinds(run(model.clone(), &options(0), &transport, &clock).await);
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_message.as_deref(), Some("connection reset"));

    let hanging = ScriptedResponse {
        end: ScriptedEnd::Hang,
        ..broken
    };
    let transport = ScriptedTransport::new([Ok(hanging)]);
    let mut call = ModelCall::new(&request(model.clone()), &options(0), 1_000);
    let mut events = call.open(&transport, &clock).await;
    events.extend(call.next().await);
    let waited = tokio::time::timeout(Duration::from_millis(50), call.next()).await;
    assert!(waited.is_err(), "a hanging body gave {waited:?}");
    events.extend(call.abort());
    let (_, message) = kinds(events);
    assert_eq!(message.stop_reason, StopReason::Aborted);

    // A script used up answers with a connection error, which is not retried forever.
    let transport = ScriptedTransport::new([]);
    let (_, message) = kinds(run(model, &options(1), &transport, &clock).await);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error: no scripted response left"),
        "{message:?}"
    );
    assert_eq!(transport.requests().len(), 2);
}
