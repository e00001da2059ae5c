//! Anthropic message threads: over each conversation of fixtures/anthropic-threads.json (run
//! through Pi 1.5.2's own provider, step by step, against a scripted server), the requests we
//! encode equal the ones the original sent: body, `anthropic-beta` and session-affinity headers
//! and URL, and each streamed answer decodes to the original's message. Each step's
//! request is handed the session's thread state as the core's machine hands it: the one the
//! last call that sent a thread handed back (`Patch::Thread`), kept through calls without one.
//!
//! A refused thread is sent again as the original sends it (a new thread after
//! `thread_not_found` and the like, no thread after `thread_unsupported_request` or a code-less
//! 400 naming threads, which turns threads off for the session), and a call refused by the
//! strict-tool limits goes again without its preferred strict tools, as do the session's later
//! ones; the answer carries the diagnostic: each step runs through [`ModelCall`] over the
//! step's scripted responses, with the diagnostics of the earlier answers, and every request it
//! sends is compared.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::fixture_options;
use pi_core::agent::{ModelRequest, Patch, StreamEvent, ThreadState};
use pi_core::message::{AssistantMessage, Message};
use pi_providers::anthropic;
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::transport::poll_once;
use pi_providers::transport::scripted::{ScriptedResponse, ScriptedTransport};
use serde_json::{json, Value};

/// The options of `step`: its own when it changed them (the thinking level between requests of
/// one session), else the conversation's.
fn step_options<'a>(case: &'a Value, step: &'a Value) -> &'a Value {
    step.get("options").unwrap_or(&case["options"])
}

/// The step's request: its context as the core's machine hands it over
/// ([`common::context_parts`]), with the session's thread state.
fn request(case: &Value, step: &Value, thread: Option<ThreadState>) -> ModelRequest {
    let options = step_options(case, step);
    let parts = common::context_parts(&step["context"]);
    ModelRequest {
        model: serde_json::from_value(step.get("model").unwrap_or(&case["model"]).clone()).unwrap(),
        system_prompt: parts.system_prompt,
        messages: parts.messages,
        tools: parts.tools,
        reasoning: serde_json::from_value(options["reasoning"].clone()).unwrap(),
        session_id: options["sessionId"].as_str().map(str::to_owned),
        max_tokens: None,
        thread,
        session_diagnostics: Arc::default(),
        system_messages: parts.system_messages,
        max_retries: None,
        provider_hooked: None,
    }
}

/// The whole exchange of one step: every request our call sends over the step's scripted
/// responses (as the original's fetch saw them), the answer it ends with, and the thread state
/// it hands back (none from a call that sent no thread).
fn run_step(
    request: &ModelRequest,
    options: &pi_providers::CallOptions,
    step: &Value,
) -> (Vec<Value>, AssistantMessage, Option<Option<ThreadState>>) {
    let attempts = step["requests"].as_array().unwrap().iter().map(|sent| {
        let status = sent["status"].as_u64().unwrap_or(200) as u16;
        let body = sent["response"].as_str().unwrap().to_owned();
        let content_type = if status == 200 {
            "text/event-stream"
        } else {
            "application/json"
        };
        Ok(ScriptedResponse::new(status, body).with_header("content-type", content_type))
    });
    let transport = ScriptedTransport::new(attempts.collect::<Vec<_>>());
    let mut call = ModelCall::new(request, options, 4);
    let clock = FixedClock::new(0, 0.0);
    let mut events = poll_once(call.open(&transport, &clock)).unwrap();
    while !call.is_done() {
        events.extend(poll_once(call.next()).unwrap());
    }
    let sent = transport
        .requests()
        .iter()
        .map(|http| {
            let header = |name: &str| {
                http.headers
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, value)| value.clone())
            };
            json!({
                "url": http.url,
                "beta": header("anthropic-beta"),
                "affinity": {
                    "x-session-affinity": header("x-session-affinity"),
                    "x-session-id": header("x-session-id"),
                },
                "body": http.body.to_value().into_owned(),
            })
        })
        .collect();
    let states: Vec<Option<ThreadState>> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Patch(Patch::Thread(state)) => Some(state.clone()),
            _ => None,
        })
        .collect();
    assert!(states.len() <= 1, "one thread state per call: {states:?}");
    let final_at = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Done { .. } | StreamEvent::Error { .. }));
    if !states.is_empty() {
        let patch_at = events
            .iter()
            .position(|e| matches!(e, StreamEvent::Patch(Patch::Thread(_))));
        assert_eq!(patch_at.map(|at| at + 1), final_at, "just before the end");
    }
    let (_, mut reply) = common::observe(events);
    // The original's diagnostics carry the time of the refusal, written as 0 in the fixture.
    for diagnostic in reply.diagnostics.iter_mut().flatten() {
        diagnostic["timestamp"] = json!(0);
    }
    (sent, reply, states.into_iter().next())
}

#[test]
fn threaded_requests_match_the_original_over_whole_conversations() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("fixtures/anthropic-threads.json")).unwrap();
    assert!(cases.len() >= 46);
    let mut wrong = Vec::new();
    let mut resent = 0;
    for case in &cases {
        let options = fixture_options(case, "key");
        let options = pi_providers::CallOptions {
            max_retries: case["options"]["maxRetries"].as_u64().unwrap_or(0) as u32,
            ..options
        };
        let mut thread: Option<ThreadState> = None;
        let mut diagnostics: Vec<Value> = Vec::new();
        for (k, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let mut request = request(case, step, thread.clone());
            request.session_diagnostics = Arc::new(diagnostics.clone());
            let options = pi_providers::CallOptions {
                temperature: step_options(case, step)["temperature"].as_f64(),
                ..options.clone()
            };
            let (sent, reply, handed_back) = run_step(&request, &options, step);
            let theirs: Vec<Value> = step["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|sent| {
                    json!({"url": sent["url"], "beta": sent["beta"],
                        "affinity": sent["affinity"], "body": sent["body"]})
                })
                .collect();
            resent += theirs.len() - 1;
            let ours = pi_core::json::to_string(&sent).unwrap();
            let theirs = pi_core::json::to_string(&theirs).unwrap();
            if ours != theirs {
                wrong.push(format!(
                    "{} step {k} requests\n  ours:   {ours}\n  theirs: {theirs}",
                    case["name"]
                ));
            }
            let ours = pi_core::json::to_string(&Message::Assistant(reply.clone())).unwrap();
            let theirs = pi_core::json::to_string(&step["reply"]).unwrap();
            if ours != theirs {
                wrong.push(format!(
                    "{} step {k} answer\n  ours:   {ours}\n  theirs: {theirs}",
                    case["name"]
                ));
            }
            diagnostics.extend(reply.diagnostics.iter().flatten().cloned());
            if let Some(state) = handed_back {
                thread = state;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} requests or answers differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(resent, 12, "the calls the original sent again");
}

#[test]
fn each_streamed_answer_decodes_to_the_originals_message() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("fixtures/anthropic-threads.json")).unwrap();
    let mut wrong = Vec::new();
    let mut decoded = 0;
    for case in &cases {
        for (k, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let model: pi_core::model::Model =
                serde_json::from_value(step.get("model").unwrap_or(&case["model"]).clone())
                    .unwrap();
            let requests = step["requests"].as_array().unwrap();
            // A resent call's answer carries the refusal's diagnostic (compared above).
            let Some(response) = requests[0]["response"]
                .as_str()
                .filter(|_| requests.len() == 1 && requests[0]["status"].is_null())
            else {
                continue;
            };
            let events = common::decode_pieces(
                anthropic::Decoder::new(&model, 4),
                response.as_bytes(),
                &[],
                pi_providers::StreamEnd::Complete,
            );
            let (_, mut message) = common::observe(events);
            for diagnostic in message.diagnostics.iter_mut().flatten() {
                diagnostic["timestamp"] = json!(0);
            }
            decoded += 1;
            let ours =
                pi_core::json::to_string(&pi_core::message::Message::Assistant(message)).unwrap();
            // The effort an answer records comes from its request (compared above), not the
            // stream.
            let mut theirs = step["reply"].clone();
            theirs
                .as_object_mut()
                .unwrap()
                .shift_remove("providerThinkingLevel");
            let theirs = pi_core::json::to_string(&theirs).unwrap();
            if ours != theirs {
                wrong.push(format!(
                    "{} step {k}\n  ours:   {ours}\n  theirs: {theirs}",
                    case["name"]
                ));
            }
        }
    }
    assert!(decoded >= 30, "{decoded} answers decoded");
    assert!(
        wrong.is_empty(),
        "{} answers differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
