//! The Google Generative AI codec against the original: the HTTP requests the Google SDK sent
//! for contexts and options (signatures, ids, images in function responses, thinking levels and
//! budgets), and the events and final message for served responses (thinking, text, tool calls
//! with and without ids, finish reasons, bad and cut streams, HTTP errors), for any chunking;
//! arbitrary bytes never panic. Fixtures: `scripts/gen-google-fixtures.mjs`.
//!
//! Made-up tool-call ids differ by design (the original uses the clock and a process-wide
//! counter), and JSON syntax errors are worded by the JavaScript engine: both are compared by
//! shape only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::OnceLock;

use common::{comparable, decode_split, fixture_options, fixture_request, observe, serve_once};
use pi_core::agent::{ModelRequest, StreamEvent};
use pi_core::message::{Message, UserMessage};
use pi_core::model::Model;
use pi_providers::call::ModelCall;
use pi_providers::google::{encode, Decoder};
use pi_providers::transport::{Timeouts, Transport};
use pi_providers::{CallOptions, StreamEnd};
use proptest::prelude::*;
use regex::Regex;
use serde_json::{json, Value};

fn fixtures() -> &'static Value {
    static FIXTURES: OnceLock<Value> = OnceLock::new();
    FIXTURES.get_or_init(|| serde_json::from_str(include_str!("fixtures/google.json")).unwrap())
}

fn stream_model(base_url: &str) -> Model {
    serde_json::from_value(json!({
        "id": "gemini-2.5-flash", "name": "Gemini", "api": "google-generative-ai",
        "provider": "google", "baseUrl": base_url, "reasoning": true, "input": ["text", "image"],
        "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.075, "cacheWrite": 0},
        "contextWindow": 1048576, "maxTokens": 65536
    }))
    .unwrap()
}

#[test]
fn requests_match_what_the_original_sent() {
    let mut wrong = Vec::new();
    for case in fixtures()["bodies"].as_array().unwrap() {
        let request = fixture_request(case);
        let call_options = fixture_options(case, "gkey");
        let http = encode(&request, &call_options, 0);
        let recorded = &case["request"];
        let name = &case["name"];
        let ours = pi_core::json::to_string(&http.body).unwrap();
        let theirs = pi_core::json::to_string(&recorded["body"]).unwrap();
        if ours != theirs {
            wrong.push(format!(
                "{name}: body\n  ours:   {ours}\n  theirs: {theirs}"
            ));
        }
        let path = http.url.strip_prefix("http://127.0.0.1:1").unwrap();
        if path != recorded["url"] {
            wrong.push(format!("{name}: url {path} vs {}", recorded["url"]));
        }
        let headers: serde_json::Map<String, Value> = http
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if Value::Object(headers) != recorded["headers"] {
            wrong.push(format!(
                "{name}: headers {:?} vs {}",
                http.headers, recorded["headers"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Made-up tool-call ids reduced to their name.
fn normalise(value: &Value) -> Value {
    static MADE_UP: OnceLock<Regex> = OnceLock::new();
    let made_up = MADE_UP.get_or_init(|| Regex::new(r"^([a-z_]+)_\d+_\d+$").unwrap());
    match value {
        Value::String(s) => Value::String(made_up.replace(s, "${1}_<made-up>").into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if k == "errorMessage" && v.as_str().is_some_and(is_engine_json_error) {
                        json!("<JSON syntax error>")
                    } else {
                        normalise(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A JSON syntax error in either engine's words.
fn is_engine_json_error(text: &str) -> bool {
    text.contains("in JSON at position") || text.contains("at line") && text.contains("column")
}

fn decode(body: &[u8], cuts: &[usize]) -> Vec<StreamEvent> {
    let decoder = Decoder::new(&stream_model("http://127.0.0.1:1/v1beta"), 0);
    decode_split(decoder, body, cuts, StreamEnd::Complete)
}

/// Streams whose outcome depends on how the body is split: the SDK checks each network chunk on
/// its own for an error object, so these are only compared unsplit.
const SPLIT_SENSITIVE: [&str; 1] = ["error-object-in-ok-stream"];

fn differences(cuts: &[usize]) -> Vec<String> {
    let mut wrong = Vec::new();
    for stream in fixtures()["streams"].as_array().unwrap() {
        let name = stream["name"].as_str().unwrap();
        if stream.get("status").is_some() || (!cuts.is_empty() && SPLIT_SENSITIVE.contains(&name)) {
            continue;
        }
        let (updates, message) = observe(decode(stream["body"].as_str().unwrap().as_bytes(), cuts));
        let ours = normalise(&json!({"events": updates, "message": comparable(&message)}));
        let theirs_events: Vec<Value> = stream["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(common::summary)
            .collect();
        let theirs = normalise(&json!({"events": theirs_events, "message": stream["message"]}));
        if ours != theirs {
            wrong.push(format!("{name}\n  ours:   {ours}\n  theirs: {theirs}"));
        }
    }
    wrong
}

#[test]
fn streams_decode_as_the_original_decoded_them() {
    let wrong = differences(&[]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn http_errors_read_as_the_google_sdk_reports_them() {
    for stream in fixtures()["streams"].as_array().unwrap() {
        let Some(status) = stream["status"].as_u64() else {
            continue;
        };
        let content_type: &'static str = match stream["type"].as_str().unwrap() {
            "application/json" => "application/json",
            _ => "text/plain",
        };
        let (port, server) = serve_once(
            status as u16,
            content_type,
            stream["body"].as_str().unwrap(),
        );
        let request = ModelRequest {
            model: stream_model(&format!("http://127.0.0.1:{port}/v1beta")),
            system_prompt: String::new(),
            messages: vec![Message::User(UserMessage::from_text("hi", Vec::new(), 1))],
            tools: Vec::new(),
            reasoning: None,
            session_id: None,
            max_tokens: None,
        };
        let options = CallOptions {
            api_key: "gkey".into(),
            ..CallOptions::default()
        };
        let transport = Transport::new(Timeouts {
            connect: std::time::Duration::from_secs(5),
            idle: std::time::Duration::from_secs(10),
        })
        .unwrap();
        let mut call = ModelCall::new(request, &options, 0);
        let events = call.open(&transport).await;
        let (head, _) = server.join().unwrap();
        assert!(
            head.starts_with("POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse "),
            "{head}"
        );
        let Some(StreamEvent::Error { error, .. }) = events.last() else {
            panic!("{events:?}");
        };
        assert_eq!(comparable(error), stream["message"], "{}", stream["name"]);
    }
}

proptest! {
    #[test]
    fn any_chunking_decodes_the_same(cuts in prop::collection::vec(1usize..1_200, 0..10)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        let wrong = differences(&cuts);
        prop_assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut decoder = Decoder::new(&stream_model("http://127.0.0.1:1"), 0);
        decoder.start();
        decoder.feed(&bytes);
        decoder.finish(StreamEnd::Complete);
    }
}

/// Token counts come from the network: absurd ones saturate instead of overflowing.
#[test]
fn absurd_token_counts_saturate() {
    let body =
        "data: {\"usageMetadata\":{\"candidatesTokenCount\":1e30,\"thoughtsTokenCount\":1e30}}\n\n";
    let (_, message) = observe(decode(body.as_bytes(), &[]));
    assert_eq!(message.usage.output, u64::MAX);
}
