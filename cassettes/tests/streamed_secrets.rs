//! A key a model streams a few characters per event, in each of the four stream formats (text,
//! thinking where the format streams it, a tool call's arguments), written through the
//! recorder's redaction and decoded by the API's real decoder, as a replay decodes it: the
//! message reads the placeholder where the live one read the key, and the events are those of
//! the live stream but for one per delta the redaction emptied and marked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use pi_cassettes::redact::Secrets;
use pi_core::message::{
    AssistantMessage, ContentBlock, Cost, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_providers::catalog::builtin;
use pi_providers::synth::{decode, decode_events, synthesize_nearest, SynthesizedResponse};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Of characters that no event's framing holds three of in a row.
const KEY: &str = "Qv7Zx-0123456789-WjKpLmNb";
const PLACEHOLDER: &str = "<<secret-1>>";
const APIS: [&str; 4] = [
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
    "google-generative-ai",
];

fn model(api: &str) -> Model {
    builtin()
        .all()
        .find(|m| m.api == api && m.reasoning)
        .expect("a built-in reasoning model of the API")
        .clone()
}

/// A message that says the key in its thinking, its text and a tool call's arguments.
fn message(model: &Model) -> AssistantMessage {
    let thinking = format!("The user's key is {KEY}, I think.");
    // What each API keeps of a thinking block beside its text.
    let signature = match model.api.as_str() {
        "openai-completions" => Some("reasoning_content".to_owned()),
        "anthropic-messages" => Some("sig".to_owned()),
        "openai-responses" => Some(
            json!({"type": "reasoning", "id": "rs_1",
                   "summary": [{"type": "summary_text", "text": thinking}]})
            .to_string(),
        ),
        _ => None,
    };
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: 1_700_000_000_000,
        content: vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking,
                thinking_signature: signature,
                ..ThinkingContent::default()
            }),
            ContentBlock::Text(TextContent {
                text: format!("The key is {KEY}."),
                // The Responses API's message item, which a finished text block names.
                text_signature: (model.api == "openai-responses")
                    .then(|| r#"{"v":1,"id":"msg_1"}"#.to_owned()),
                ..TextContent::default()
            }),
            ContentBlock::ToolCall(ToolCall {
                // The Responses API names a call by its id and its item's.
                id: match model.api.as_str() {
                    "openai-responses" => "call_1|fc_1".into(),
                    _ => "call_1".into(),
                },
                name: "read".into(),
                arguments: json!({"path": format!("{KEY}.txt")}),
                ..ToolCall::default()
            }),
        ],
        stop_reason: StopReason::ToolUse,
        // The provider's own finish reason, which Pi 1.5.2 keeps and its stream must say.
        raw_stop_reason: match model.api.as_str() {
            "google-generative-ai" => Some("STOP".to_owned()),
            "openai-responses" => Some("completed".to_owned()),
            _ => None,
        },
        // Pi 1.5.2's Responses decoder prices every response that ends itself.
        usage: Usage {
            cost: Cost {
                total_from_provider: (model.api == "openai-responses").then_some(false),
                ..Cost::default()
            },
            ..Usage::default()
        },
        ..AssistantMessage::default()
    }
}

/// The string member of a delta event that holds streamed text, as a path, when the event is
/// one that may be repeated with its text in pieces.
fn delta_path(api: &str, event: &Value) -> Option<Vec<String>> {
    let path: &[&str] = match api {
        "anthropic-messages" if event["type"] == "content_block_delta" => {
            match event["delta"]["type"].as_str()? {
                "text_delta" => &["delta", "text"],
                "thinking_delta" => &["delta", "thinking"],
                "input_json_delta" => &["delta", "partial_json"],
                _ => return None,
            }
        }
        "openai-responses" if event["type"].as_str()?.ends_with(".delta") => &["delta"],
        "openai-completions" if event["choices"][0]["finish_reason"].is_null() => {
            let delta = &event["choices"][0]["delta"];
            if delta["content"].is_string() {
                &["choices", "0", "delta", "content"]
            } else if delta["reasoning_content"].is_string() {
                &["choices", "0", "delta", "reasoning_content"]
            } else if delta["tool_calls"][0]["function"]["arguments"].is_string()
                && delta["tool_calls"][0]["id"].is_null()
            {
                &[
                    "choices",
                    "0",
                    "delta",
                    "tool_calls",
                    "0",
                    "function",
                    "arguments",
                ]
            } else {
                return None;
            }
        }
        "google-generative-ai"
            if event["candidates"][0]["finishReason"].is_null()
                && event["candidates"][0]["content"]["parts"][0]["text"].is_string() =>
        {
            &["candidates", "0", "content", "parts", "0", "text"]
        }
        _ => return None,
    };
    Some(path.iter().map(|s| s.to_string()).collect())
}

fn at<'v>(value: &'v mut Value, path: &[String]) -> &'v mut Value {
    path.iter()
        .fold(value, |v, step| match step.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => &mut v[step.as_str()],
        })
}

/// `body` (one event per blank line) with each delta event repeated, its text cut into pieces
/// of the `sizes` in turn.
fn in_pieces(api: &str, body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let body = String::from_utf8(body.to_vec()).unwrap();
    let mut out = String::new();
    let mut turn = sizes.iter().cycle();
    for event in body.split_inclusive("\n\n") {
        let data = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .and_then(|d| serde_json::from_str::<Value>(d).ok());
        let Some((data, path)) = data.and_then(|d| delta_path(api, &d).map(|p| (d, p))) else {
            out.push_str(event);
            continue;
        };
        // The event's other fields (`event: content_block_delta`), kept in each piece.
        let head: String = event
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("data:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let text: Vec<char> = at(&mut data.clone(), &path)
            .as_str()
            .unwrap()
            .chars()
            .collect();
        let mut start = 0;
        while start < text.len() {
            let end = (start + turn.next().unwrap()).min(text.len());
            let mut piece = data.clone();
            *at(&mut piece, &path) = Value::String(text[start..end].iter().collect());
            out.push_str(&format!("{head}data: {piece}\n\n"));
            start = end;
        }
    }
    out.into_bytes()
}

fn response(body: Vec<u8>, cuts: &[usize]) -> SynthesizedResponse {
    SynthesizedResponse::event_stream(vec![Bytes::from(body)]).recut(cuts)
}

/// `message` with the key replaced by the placeholder wherever it says it.
fn with_placeholder(message: &AssistantMessage) -> AssistantMessage {
    let text = pi_core::json::to_string(message)
        .unwrap()
        .replace(KEY, PLACEHOLDER);
    serde_json::from_str(&text).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_key_streamed_in_pieces_decodes_as_its_placeholder_in_every_format(
        api in prop::sample::select(APIS.to_vec()),
        sizes in prop::collection::vec(1usize..4, 1..12),
        cuts in prop::collection::vec(0usize..6000, 0..10),
    ) {
        let model = model(api);
        let (synthesized, _) = synthesize_nearest(&model, &message(&model)).unwrap();
        let streamed = in_pieces(api, &synthesized.body(), &sizes);
        let events = |body: &[u8]| String::from_utf8_lossy(body).matches("data:").count();
        // Thinking, text and arguments each say the key: each is cut in pieces.
        prop_assert!(events(&streamed) >= events(&synthesized.body()) + KEY.len());
        let live = response(streamed, &cuts);
        let live_events = decode_events(&model, 1_700_000_000_000, &live);
        let live_message = decode(&model, 1_700_000_000_000, &live);
        prop_assert!(pi_core::json::to_string(&live_message).unwrap().contains(KEY));

        let mut secrets = Secrets::default();
        secrets.add(KEY);
        let mut written: Vec<Bytes> = live
            .chunks
            .iter()
            .map(|chunk| Bytes::from(secrets.body_part(1, chunk)))
            .collect();
        written.push(Bytes::from(secrets.release(1)));
        let whole: Vec<u8> = written.concat();
        let text = String::from_utf8_lossy(&whole);
        for window in KEY.as_bytes().windows(3) {
            let window = std::str::from_utf8(window).unwrap();
            prop_assert!(!text.contains(window), "{} in {}", window, text);
        }

        let replayed = SynthesizedResponse { chunks: written, ..live.clone() };
        let replayed_events = decode_events(&model, 1_700_000_000_000, &replayed);
        let replayed_message = decode(&model, 1_700_000_000_000, &replayed);
        prop_assert_eq!(replayed_message, with_placeholder(&live_message));
        // An emptied piece still makes its event, as its text did in the run: the replay decodes
        // as many events, so hook points asked at each line up with the recording's.
        prop_assert_eq!(replayed_events.len(), live_events.len());
    }
}
