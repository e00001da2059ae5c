//! The Google Generative AI codec against the original: the HTTP requests the Google SDK sent
//! for contexts and options (signatures, ids, images in function responses, thinking levels and
//! budgets), and the events and final message for served responses (thinking, text, tool calls
//! with and without ids, finish reasons, bad and cut streams, HTTP errors), for any chunking;
//! arbitrary bytes never panic. Fixtures: `scripts/gen-google-fixtures.mjs`.
//!
//! Then streams made up from Gemini's response shapes (candidates whose parts carry text,
//! thoughts, function calls and signatures; usage metadata; finish reasons; a few broken or
//! foreign records), cut anywhere: the same events however they are cut.
//!
//! Made-up tool-call ids differ by design (the original uses the clock and a process-wide
//! counter), and JSON syntax errors are worded by the JavaScript engine: both are compared by
//! shape only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::OnceLock;

use common::{
    comparable, decode_pieces, decode_split, finishes_once, fixture_options, fixture_request,
    observe, serve_once,
};
use pi_core::agent::{ModelRequest, StreamEvent};
use pi_core::message::{Message, UserMessage};
use pi_core::model::Model;
use pi_effects::network::{Timeouts, Transport};
use pi_providers::call::ModelCall;
use pi_providers::google::{encode, Decoder};
use pi_providers::retry::FixedClock;
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
            messages: vec![Message::User(UserMessage::from_text("hi", Vec::new(), 1))].into(),
            tools: Vec::new(),
            reasoning: None,
            session_id: None,
            max_tokens: None,
            thread: None,
            session_diagnostics: Default::default(),
            system_messages: Default::default(),
            max_retries: None,
            provider_hooked: None,
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
        let mut call = ModelCall::new(&request, &options, 0);
        let events = call.open(&transport, &FixedClock::default()).await;
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

// ---- made-up Gemini streams ------------------------------------------------------------------

/// Text as a model streams it, with what is hard to cut or to escape: quotes, backslashes, line
/// breaks, multi-byte characters, and text that looks like the framing.
fn words() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(
        &[
            "a", "Hello", " ", "\"", "\\", "\n", "\r\n", "\t", "ü", "✓", "😀", "}", "{", "data: ",
            "\n\n",
        ][..],
    );
    prop::collection::vec(pieces, 0..6).prop_map(|p| p.concat())
}

fn signature() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(&["c2lnbmF0dXJl", "sig", ""][..]))
}

fn with_signature(mut part: Value, signature: Option<&str>) -> Value {
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

fn arguments() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(prop_oneof![
        Just(json!({})),
        words().prop_map(|w| json!({"path": w})),
        Just(json!({"n": 1.5, "list": [1, "two", null], "deep": {"x": true}})),
        Just(Value::Null),
    ])
}

/// One part of a candidate's content, as Gemini sends them, and a few of unexpected types.
fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (words(), signature()).prop_map(|(t, s)| with_signature(json!({"text": t}), s)),
        3 => (words(), signature())
            .prop_map(|(t, s)| with_signature(json!({"text": t, "thought": true}), s)),
        3 => (
            prop::sample::select(&["read", "bash", ""][..]),
            prop::option::of(prop::sample::select(&["call_1", "call_2", ""][..])),
            arguments(),
            signature(),
        )
            .prop_map(|(name, id, args, s)| {
                let mut call = json!({"name": name});
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                if let Some(args) = args {
                    call["args"] = args;
                }
                with_signature(json!({"functionCall": call}), s)
            }),
        1 => Just(json!({})),
        1 => Just(json!({"text": 7})),
        1 => Just(json!({"functionCall": "not an object"})),
        1 => Just(json!({"text": "t", "thought": "yes"})),
    ]
}

fn finish_reason() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!("STOP"),
        json!("MAX_TOKENS"),
        json!("SAFETY"),
        json!("MALFORMED_FUNCTION_CALL"),
        json!("SOMETHING_NEW"),
        json!(""),
        Value::Null,
        json!(3),
    ])
}

fn usage() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0u64..5_000, 0u64..5_000, prop::option::of(0u64..5_000), prop::option::of(0u64..5_000))
            .prop_map(|(prompt, candidates, thoughts, cached)| {
                let mut usage = json!({
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": candidates,
                    "totalTokenCount": prompt + candidates + thoughts.unwrap_or(0),
                });
                if let Some(thoughts) = thoughts {
                    usage["thoughtsTokenCount"] = json!(thoughts);
                }
                if let Some(cached) = cached {
                    usage["cachedContentTokenCount"] = json!(cached.min(prompt));
                }
                usage
            }),
        1 => Just(json!({"promptTokenCount": -5, "candidatesTokenCount": 1.5})),
        1 => Just(json!("not an object")),
    ]
}

/// One response chunk: the first candidate's parts and finish reason, usage, a response id
/// (a second candidate, which is never read, now and then).
fn chunk() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::collection::vec(part(), 0..4)),
        prop::option::of(finish_reason()),
        prop::option::of(usage()),
        prop::option::of(prop::sample::select(&["resp-1", "resp-2", ""][..])),
        any::<bool>(),
    )
        .prop_map(|(parts, finish, usage, id, second)| {
            let mut chunk = json!({});
            if parts.is_some() || finish.is_some() {
                let mut candidate = json!({"index": 0});
                if let Some(parts) = parts {
                    candidate["content"] = json!({"role": "model", "parts": parts});
                }
                if let Some(finish) = finish {
                    candidate["finishReason"] = finish;
                }
                let mut candidates = vec![candidate];
                if second {
                    candidates.push(json!({"content": {"parts": [{"text": "never read"}]}}));
                }
                chunk["candidates"] = json!(candidates);
            }
            if let Some(usage) = usage {
                chunk["usageMetadata"] = usage;
            }
            if let Some(id) = id {
                chunk["responseId"] = json!(id);
            }
            chunk
        })
}

/// One SSE record: mostly `data: {chunk}`, ended by any of the delimiters the SDK splits on;
/// sometimes torn JSON, or a record that is not a chunk at all.
fn record() -> impl Strategy<Value = String> {
    let end = prop::sample::select(&["\n\n", "\r\n\r\n", "\r\r"][..]);
    prop_oneof![
        10 => (chunk(), end.clone()).prop_map(|(c, end)| format!("data: {c}{end}")),
        1 => (chunk(), any::<prop::sample::Index>(), end)
            .prop_map(|(c, cut, end)| {
                let text = c.to_string();
                let torn: String = text.chars().take(cut.index(text.chars().count())).collect();
                format!("data: {torn}{end}")
            }),
        1 => Just("data:{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"tight\"}]}}]}\n\n".to_owned()),
        1 => Just(": keep-alive\n\n".to_owned()),
        1 => Just("event: message\nid: 4\n\n".to_owned()),
        1 => Just("data: not json\n\n".to_owned()),
        1 => Just("data: [1, 2]\n\n".to_owned()),
        1 => Just("data: {\"candidates\": null, \"usageMetadata\": null}\n\n".to_owned()),
        1 => Just("data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n".to_owned()),
        1 => Just("\n\n".to_owned()),
    ]
}

/// A made-up stream: records in a row, the last one's delimiter sometimes missing.
fn gemini_stream() -> impl Strategy<Value = Vec<u8>> {
    (prop::collection::vec(record(), 0..8), any::<bool>()).prop_map(|(records, cut_tail)| {
        let mut body = records.concat();
        if cut_tail {
            let kept = body.trim_end_matches(['\r', '\n']).len();
            body.truncate(kept);
        }
        body.into_bytes()
    })
}

/// Whether a piece of `body` cut at `cuts` is by itself an error object with an HTTP code: the
/// SDK checks each network chunk for one, so such a cut changes the outcome by design.
fn isolates_an_error_object(body: &[u8], cuts: &[usize]) -> bool {
    let mut cuts = cuts.to_vec();
    cuts.sort_unstable();
    let mut last = 0;
    cuts.into_iter().chain([body.len()]).any(|cut| {
        let piece = &body[last..cut];
        last = cut;
        serde_json::from_slice::<Value>(piece)
            .ok()
            .and_then(|v| v["error"]["code"].as_f64())
            .is_some_and(|code| (400.0..600.0).contains(&code))
    })
}

fn decode_stream(body: &[u8], cuts: &[usize]) -> Vec<StreamEvent> {
    let decoder = Decoder::new(&stream_model("http://127.0.0.1:1/v1beta"), 0);
    decode_pieces(decoder, body, cuts, StreamEnd::Complete)
}

proptest! {
    /// Split-independence over Gemini-shaped streams: every cut (inside records, delimiters,
    /// JSON strings and UTF-8 sequences, empty pieces included) gives the same events as the
    /// whole body, and those events are one well-formed stream.
    #[test]
    fn made_up_streams_decode_the_same_however_cut(
        body in gemini_stream(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..12),
    ) {
        // A cut taken twice is an empty read there.
        let cuts: Vec<usize> = cuts
            .iter()
            .flat_map(|(c, twice)| vec![c.index(body.len() + 1); 1 + usize::from(*twice)])
            .collect();
        prop_assume!(!isolates_an_error_object(&body, &cuts));
        let whole = decode_stream(&body, &[]);
        prop_assert_eq!(&decode_stream(&body, &cuts), &whole, "{}", String::from_utf8_lossy(&body));
        let bytewise: Vec<usize> = (0..=body.len()).collect();
        prop_assert_eq!(&decode_stream(&body, &bytewise), &whole);
        prop_assert!(finishes_once(&whole).is_ok(), "{:?}", finishes_once(&whole));
    }
}
