//! The Gemini stream synthesizer, called directly, against the Gemini decoder: any message the
//! API can express (text, thinking and tool calls with signatures, made-up and carried
//! tool-call ids, usage, stop reasons, failures the decoder words itself, response ids) comes
//! back from the bytes synthesized for it, however they are cut; any message near one is
//! either refused or comes back; what the decoder can never make is refused, for its reason;
//! and the wire spelling of small messages is pinned byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::{
    AssistantMessage, ContentBlock, ImageContent, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage,
};
use pi_core::model::Model;
use pi_providers::catalog::builtin;
use pi_providers::cost::calculate_cost;
// The Google synthesizer itself, not `synth::synthesize`, which decodes what it returns and
// refuses on a difference: that check would hide this one's mistakes.
use pi_providers::synth::google::synthesize;
use pi_providers::synth::{decode, SynthesizedResponse};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Map, Value};

const TIMESTAMP: u64 = 1_700_000_000_000;

fn model() -> Model {
    builtin()
        .get_model("google", "gemini-2.5-flash")
        .expect("gemini-2.5-flash is in the catalog")
        .clone()
}

/// A message of `model` at `timestamp`, as the decoder heads its messages.
fn message(content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    let model = model();
    AssistantMessage {
        content,
        api: "google-generative-ai".into(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason,
        timestamp: TIMESTAMP,
        // Pi 1.5.2 keeps the finish reason Gemini sent.
        raw_stop_reason: match stop_reason {
            StopReason::Stop | StopReason::ToolUse => Some("STOP".into()),
            StopReason::Length => Some("MAX_TOKENS".into()),
            _ => None,
        },
        // An answer that finished carries the usage of its last chunk.
        usage: match stop_reason {
            StopReason::Error | StopReason::Aborted => Usage::default(),
            _ => usage(0, 0, 0, 0),
        },
        ..AssistantMessage::default()
    }
}

fn usage(input: u64, output: u64, cache_read: u64, total_tokens: u64) -> Usage {
    let mut usage = Usage {
        input,
        output,
        cache_read,
        total_tokens,
        reasoning: Some(0),
        ..Usage::default()
    };
    usage.cost = calculate_cost(&model(), &usage);
    usage.cost.total_from_provider = Some(false);
    usage
}

fn text(text: &str, signature: Option<&str>) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: text.into(),
        text_signature: signature.map(Into::into),
        ..TextContent::default()
    })
}

fn thinking(thinking: &str, signature: Option<&str>) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: thinking.into(),
        thinking_signature: signature.map(Into::into),
        ..ThinkingContent::default()
    })
}

fn call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        ..ToolCall::default()
    })
}

fn body(response: &SynthesizedResponse) -> String {
    let bytes: Vec<u8> = response.body();
    String::from_utf8(bytes).unwrap()
}

/// The message comes back from its stream as synthesized, from the stream cut at `cuts`
/// (indices into the part of the body that may be cut anywhere), and from the stream cut at
/// every byte of that part.
fn assert_round_trip(message: &AssistantMessage, cuts: &[Index]) -> Result<(), TestCaseError> {
    let model = model();
    let response = synthesize(&model, message).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let whole = body(&response);
    prop_assert_eq!(
        &decode(&model, message.timestamp, &response),
        message,
        "{}",
        whole
    );
    let (cuttable, kept) = cuttable(&response, message);
    let cuts: Vec<usize> = cuts
        .iter()
        .map(|c| c.index(cuttable + 1))
        .chain(kept)
        .collect();
    prop_assert_eq!(
        &decode(&model, message.timestamp, &response.recut(&cuts)),
        message,
        "cut at {:?}: {}",
        cuts,
        whole
    );
    let every_byte: Vec<usize> = (0..cuttable).chain(kept).collect();
    prop_assert_eq!(
        &decode(&model, message.timestamp, &response.recut(&every_byte)),
        message
    );
    Ok(())
}

/// How much of the body may be cut anywhere, and the cut that must stay: a stream failing on
/// an error object keeps that object a read of its own, as the decoder (like the SDK) checks
/// each read for one on its own.
fn cuttable(response: &SynthesizedResponse, message: &AssistantMessage) -> (usize, Option<usize>) {
    let length: usize = response.chunks.iter().map(|c| c.len()).sum();
    let error_object = message
        .error_message
        .as_deref()
        .is_some_and(|text| text.starts_with("got status: "));
    if !error_object {
        return (length, None);
    }
    let tail_start = length - response.chunks.last().map_or(0, |c| c.len());
    (tail_start, Some(tail_start))
}

// ---- what the API can express ------------------------------------------------------------------

/// Text as models write it, with what is hard to escape or to cut: quotes, backslashes, line
/// breaks, multi-byte characters, and text that looks like the framing.
fn words() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(
        &[
            "a", "Hello", " ", "\"", "\\", "\n", "\r\n", "\r", "\t", "ü", "✓", "😀", "}", "{",
            "data: ", "\n\n", "\u{2028}", "\u{0}", "\u{7f}", "</", "\u{feff}",
        ][..],
    );
    prop_oneof![
        3 => prop::collection::vec(pieces, 0..8).prop_map(|p| p.concat()),
        1 => any::<String>(),
    ]
}

fn signature() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[A-Za-z0-9+/=]{1,16}")
}

/// A JSON key; never `error`, so that no cut can make an argument object look like the error
/// object the decoder checks each read for.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["path", "n", "deep", "ü✓", "\"q\"", "a\\b", "\n", ""][..])
            .prop_map(str::to_owned),
        "[a-z]{1,8}".prop_filter("not error", |k| k != "error"),
    ]
}

/// A number that reads back as itself: integers, fractions, and whole doubles too large to be
/// written as integers.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("a finite fraction", |f| f.is_finite() && f.fract() != 0.0)
            .prop_map(Value::from),
        prop::sample::select(&[1e21, -1e300, 5e-324, 1e20][..]).prop_map(Value::from),
    ]
}

/// Any JSON, nested.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        words().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Arguments as Gemini sends them (an object), and now and then any other JSON but null.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec((key(), json_value()), 0..4)
            .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        1 => json_value().prop_filter("not null", |v| !v.is_null()),
    ]
}

/// Which id a tool call comes with from Gemini.
#[derive(Clone, Debug)]
enum IdSpec {
    /// None: the decoder makes one up.
    Missing,
    /// One of a few, so that some repeat (the decoder makes up another for a repeat).
    Given(&'static str),
    /// One that looks made up: `{name}_{timestamp}_{n}`.
    LooksMadeUp(u64),
}

#[derive(Clone, Debug)]
enum BlockSpec {
    Text(String, Option<String>),
    Thinking(String, Option<String>),
    Call {
        name: &'static str,
        id: IdSpec,
        arguments: Value,
        signature: Option<String>,
    },
}

fn block() -> impl Strategy<Value = BlockSpec> {
    let id = prop_oneof![
        2 => Just(IdSpec::Missing),
        2 => prop::sample::select(&["call_1", "call_2", "fc-ü"][..]).prop_map(IdSpec::Given),
        1 => (1u64..4).prop_map(IdSpec::LooksMadeUp),
    ];
    prop_oneof![
        (words(), signature()).prop_map(|(t, s)| BlockSpec::Text(t, s)),
        (words(), signature()).prop_map(|(t, s)| BlockSpec::Thinking(t, s)),
        (
            prop::sample::select(&["read", "bash", "", "ü"][..]),
            id,
            arguments(),
            signature(),
        )
            .prop_map(|(name, id, arguments, signature)| BlockSpec::Call {
                name,
                id,
                arguments,
                signature,
            }),
    ]
}

/// The blocks the decoder makes of `specs`: tool-call ids carried when new, made up otherwise
/// (numbered from 1 within the response); a text or thinking block right after one of its kind
/// is dropped, as the decoder would have joined them.
fn blocks(specs: Vec<BlockSpec>, timestamp: u64) -> Vec<ContentBlock> {
    let mut made_up = 0;
    let mut out: Vec<ContentBlock> = Vec::new();
    for spec in specs {
        let block = match spec {
            BlockSpec::Text(t, s) => ContentBlock::Text(TextContent {
                text: t,
                text_signature: s,
                ..TextContent::default()
            }),
            BlockSpec::Thinking(t, s) => ContentBlock::Thinking(ThinkingContent {
                thinking: t,
                thinking_signature: s,
                ..ThinkingContent::default()
            }),
            BlockSpec::Call {
                name,
                id,
                arguments,
                signature,
            } => {
                let given = match id {
                    IdSpec::Missing => None,
                    IdSpec::Given(id) => Some(id.to_owned()),
                    IdSpec::LooksMadeUp(n) => Some(format!("{name}_{timestamp}_{n}")),
                };
                let taken = |id: &str| {
                    out.iter()
                        .any(|b| matches!(b, ContentBlock::ToolCall(c) if c.id == id))
                };
                let id = match given {
                    Some(id) if !taken(&id) => id,
                    _ => {
                        made_up += 1;
                        format!("{name}_{timestamp}_{made_up}")
                    }
                };
                ContentBlock::ToolCall(ToolCall {
                    id,
                    name: name.to_owned(),
                    arguments,
                    thought_signature: signature,
                    ..ToolCall::default()
                })
            }
        };
        let joins = matches!(
            (out.last(), &block),
            (Some(ContentBlock::Text(_)), ContentBlock::Text(_))
                | (Some(ContentBlock::Thinking(_)), ContentBlock::Thinking(_))
        );
        if !joins {
            out.push(block);
        }
    }
    out
}

fn token_count() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..100_000,
        1 => 0u64..(1 << 53),
        1 => Just(u64::MAX),
    ]
}

fn any_usage() -> impl Strategy<Value = Usage> {
    prop_oneof![
        1 => Just(Usage::default()),
        // Any output: the decoder adds two counts for it, so it need not fit a double.
        // Pi 1.5.2 reads the thoughts as `reasoning`: the part of the output past a double's
        // precision is sent as thoughts.
        4 => (0u64..(1 << 52), prop_oneof![token_count(), any::<u64>()], 0u64..(1 << 52), token_count())
            .prop_map(|(input, output, cache_read, total)| {
                let shift = (u64::BITS - output.leading_zeros()).saturating_sub(f64::MANTISSA_DIGITS);
                let mut usage = usage(input, output, cache_read, total);
                usage.reasoning = Some(output - (output >> shift << shift));
                usage
            }),
    ]
}

/// The error objects Gemini fails a stream with, and the text the decoder gives each.
const ERROR_OBJECTS: [(&str, &str); 3] = [
    (
        r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
        "UNAVAILABLE",
    ),
    (
        r#"{"error":{"code":429,"message":"Quota ✓ \"exceeded\""}}"#,
        "undefined",
    ),
    (
        r#"{"error":{"code":500,"status":7,"details":[{"1":2}]}}"#,
        "7",
    ),
];

/// How an expressible message ends.
/// How an expressible message ends: its stop reason, error text and (Pi 1.5.2) the finish
/// reason as sent.
fn ending(has_calls: bool) -> impl Strategy<Value = (StopReason, Option<String>, Option<String>)> {
    let error =
        |text: String, raw: Option<&str>| (StopReason::Error, Some(text), raw.map(str::to_owned));
    let stop = if has_calls {
        StopReason::ToolUse
    } else {
        StopReason::Stop
    };
    prop_oneof![
        3 => Just((StopReason::Stop, None, Some("STOP".to_owned()))),
        2 => Just((StopReason::Length, None, Some("MAX_TOKENS".to_owned()))),
        3 => Just((stop, None, Some("STOP".to_owned()))),
        1 => Just(error("Provider stopped with: OTHER".into(), Some("OTHER"))),
        1 => Just(error("Incomplete JSON segment at the end".into(), None)),
        1 => prop::sample::select(&["SOMETHING_NEW", "finish ✓", "\"quoted\"\n", "3", "stop"][..])
            .prop_map(move |reason| error(format!("Unhandled stop reason: {reason}"), Some(reason))),
        1 => prop::sample::select(&ERROR_OBJECTS[..])
            .prop_map(move |(object, status)| error(format!("got status: {status}. {object}"), None)),
    ]
}

/// A message Gemini's decoder can make.
fn expressible() -> impl Strategy<Value = AssistantMessage> {
    (
        any::<u64>(),
        prop::collection::vec(block(), 0..6),
        any_usage(),
        prop::option::of("[A-Za-z0-9_-]{1,24}|[ü✓😀 ]{1,4}"),
    )
        .prop_flat_map(|(timestamp, specs, usage, response_id)| {
            let content = blocks(specs, timestamp);
            let has_calls = content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(_)));
            ending(has_calls).prop_map(move |(stop_reason, error_message, raw_stop_reason)| {
                AssistantMessage {
                    content: content.clone(),
                    usage: usage.clone(),
                    timestamp,
                    response_id: response_id.clone(),
                    error_message,
                    raw_stop_reason,
                    ..message(Vec::new(), stop_reason)
                }
            })
        })
}

/// An HTTP error as Gemini sends one: a failure before anything was streamed.
fn http_failure() -> impl Strategy<Value = AssistantMessage> {
    prop::sample::select(
        &[
            r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#,
            r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#,
            r#"{"error":{"code":200,"message":"odd"}}"#,
            r#"[1,"two"]"#,
        ][..],
    )
    .prop_map(|text| AssistantMessage {
        error_message: Some(text.into()),
        ..message(Vec::new(), StopReason::Error)
    })
}

// ---- anything at all ------------------------------------------------------------------------

/// One change to an expressible message, which may or may not leave it expressible.
#[derive(Clone, Debug)]
enum Change {
    Block(Index, ContentBlock),
    Duplicate(Index),
    EmptySignature(Index),
    Id(Index, &'static str),
    Arguments(Index, Value),
    Stop(StopReason, Option<String>),
    Usage(u64, f64),
    ResponseId(&'static str),
}

fn change() -> impl Strategy<Value = Change> {
    let block = prop_oneof![
        Just(ContentBlock::Image(ImageContent {
            data: "AA==".into(),
            mime_type: "image/png".into(),
            ..ImageContent::default()
        })),
        any::<bool>().prop_map(|r| ContentBlock::Thinking(ThinkingContent {
            redacted: Some(r),
            ..ThinkingContent::default()
        })),
        words().prop_map(|t| text(&t, None)),
        words().prop_map(|t| thinking(&t, None)),
    ];
    let stop = prop::sample::select(
        &[
            StopReason::Stop,
            StopReason::Length,
            StopReason::ToolUse,
            StopReason::Error,
            StopReason::Aborted,
        ][..],
    );
    let error_text = prop::option::of(prop_oneof![
        words(),
        prop::sample::select(
            &[
                "An unknown error occurred",
                "Request was aborted",
                "Unhandled stop reason: STOP",
                "Unhandled stop reason: SAFETY",
                "Unhandled stop reason: ",
                "Unhandled stop reason: NEW",
                r#"{"error":{"code":404}}"#,
                r#"got status: x. {"error":{"code":404}}"#,
                r#"got status: undefined. {"error":{"code":404}}"#,
                r#"got status: undefined. {"error":{"code":200}}"#,
            ][..]
        )
        .prop_map(str::to_owned),
    ]);
    prop_oneof![
        (any::<Index>(), block).prop_map(|(i, b)| Change::Block(i, b)),
        any::<Index>().prop_map(Change::Duplicate),
        any::<Index>().prop_map(Change::EmptySignature),
        (
            any::<Index>(),
            prop::sample::select(&["", "call_1", "read_0_1", "read_0_2", "bash_0_1"][..])
        )
            .prop_map(|(i, id)| Change::Id(i, id)),
        (
            any::<Index>(),
            prop::sample::select(vec![Value::Null, json!({"n": 1.0}), json!([2.0]), json!(1)])
        )
            .prop_map(|(i, v)| Change::Arguments(i, v)),
        (stop, error_text).prop_map(|(s, e)| Change::Stop(s, e)),
        (0u64..3, prop::sample::select(&[0.0, 1e-9, -1.0][..]))
            .prop_map(|(w, c)| Change::Usage(w, c)),
        prop::sample::select(&["", "r"][..]).prop_map(Change::ResponseId),
    ]
}

/// The block at `i`, if there are any.
fn block_at(i: Index, message: &mut AssistantMessage) -> Option<&mut ContentBlock> {
    let length = message.content.len();
    (length > 0)
        .then(|| i.index(length))
        .and_then(|at| message.content.get_mut(at))
}

fn apply(message: &mut AssistantMessage, change: Change) {
    match change {
        Change::Block(i, b) => match block_at(i, message) {
            Some(slot) => *slot = b,
            None => message.content.push(b),
        },
        Change::Duplicate(i) => {
            if let Some(b) = block_at(i, message).map(|b| b.clone()) {
                message.content.insert(i.index(message.content.len()), b);
            }
        }
        Change::EmptySignature(i) => match block_at(i, message) {
            Some(ContentBlock::Text(t)) => t.text_signature = Some(String::new()),
            Some(ContentBlock::Thinking(t)) => t.thinking_signature = Some(String::new()),
            Some(ContentBlock::ToolCall(c)) => c.thought_signature = Some(String::new()),
            _ => {}
        },
        Change::Id(i, id) => {
            if let Some(ContentBlock::ToolCall(c)) = block_at(i, message) {
                c.id = id.into();
            }
        }
        Change::Arguments(i, v) => {
            if let Some(ContentBlock::ToolCall(c)) = block_at(i, message) {
                c.arguments = v;
            }
        }
        Change::Stop(s, e) => {
            message.stop_reason = s;
            message.error_message = e;
        }
        Change::Usage(cache_write, extra_cost) => {
            message.usage.cache_write = cache_write;
            message.usage.cost = calculate_cost(&model(), &message.usage);
            message.usage.cost.total += extra_cost;
        }
        Change::ResponseId(id) => message.response_id = Some(id.into()),
    }
}

/// Any message near an expressible one: a few changes, of which many leave a message the
/// decoder cannot make (images, redacted thinking, empty signatures, null or whole-float
/// arguments, empty or repeated ids, stop reasons without their tool calls, aborts, error texts
/// of no stream, cache writes, costs of other prices, empty response ids) and some do not.
fn near_expressible() -> impl Strategy<Value = AssistantMessage> {
    (
        expressible(),
        prop::collection::vec(change(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(mut message, changes, at_zero)| {
            if at_zero {
                // Where `read_0_1` is the made-up id.
                message.timestamp = 0;
            }
            for change in changes {
                apply(&mut message, change);
            }
            message
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the API can express comes back, however the bytes are cut.
    #[test]
    fn expressible_messages_come_back_however_cut(
        message in expressible(),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        assert_round_trip(&message, &cuts)?;
    }

    /// HTTP errors come back whole, however the body is cut.
    #[test]
    fn http_failures_come_back(
        message in http_failure(),
        cuts in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let response = synthesize(&model(), &message).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!(200..300).contains(&response.status));
        assert_round_trip(&message, &cuts)?;
    }

    /// Any message is refused, or its bytes decode back to it: never to something else.
    #[test]
    fn any_message_is_refused_or_comes_back(message in near_expressible()) {
        if synthesize(&model(), &message).is_ok() {
            assert_round_trip(&message, &[])?;
        }
    }
}

// ---- the wire ---------------------------------------------------------------------------------

/// Thinking, text and a tool call without an id, as Gemini streams them.
#[test]
fn a_small_message_is_spelled_as_gemini_spells_it() {
    let message = AssistantMessage {
        usage: usage(90, 25, 10, 125),
        response_id: Some("resp-1".into()),
        ..message(
            vec![
                thinking("Let me think.", Some("c2ln")),
                text("Hi \"there\" ✓\n", None),
                call(
                    &format!("read_{TIMESTAMP}_1"),
                    "read",
                    json!({"path": "a.txt", "n": 1.5}),
                ),
            ],
            StopReason::ToolUse,
        )
    };
    let response = synthesize(&model(), &message).unwrap();
    assert_eq!(
        pi_providers::synth::synthesize(&model(), &message).as_ref(),
        Ok(&response),
        "synth::synthesize streams Gemini's models with this synthesizer"
    );
    let expected = [
        r#"data: {"candidates":[{"content":{"parts":[{"text":"Let me think.","thought":true,"thoughtSignature":"c2ln"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}"#,
        r#"data: {"candidates":[{"content":{"parts":[{"text":"Hi \"there\" ✓\n"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}"#,
        r#"data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"read","args":{"path":"a.txt","n":1.5}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":10,"candidatesTokenCount":25,"totalTokenCount":125},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}"#,
    ];
    let chunks: Vec<String> = response
        .chunks
        .iter()
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let expected: Vec<String> = expected.iter().map(|e| format!("{e}\n\n")).collect();
    assert_eq!(chunks, expected);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.headers,
        vec![("content-type".to_owned(), "text/event-stream".to_owned())]
    );
    assert_eq!(decode(&model(), TIMESTAMP, &response), message);
}

/// A finish reason that must not turn into `toolUse` comes before the first tool call; a call
/// whose id is not the made-up one carries it.
#[test]
fn a_length_stop_with_a_tool_call_finishes_before_the_call() {
    let message = message(
        vec![text("cut", None), call("fc1", "ls", json!({}))],
        StopReason::Length,
    );
    let response = synthesize(&model(), &message).unwrap();
    assert_eq!(
        body(&response),
        concat!(
            r#"data: {"candidates":[{"content":{"parts":[{"text":"cut"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"modelVersion":"gemini-2.5-flash"}"#,
            "\n\n",
            r#"data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls","args":{},"id":"fc1"}}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":0,"candidatesTokenCount":0,"totalTokenCount":0},"modelVersion":"gemini-2.5-flash"}"#,
            "\n\n",
        )
    );
    assert_eq!(decode(&model(), TIMESTAMP, &response), message);
}

/// An HTTP error is sent with the status its body names, and its body as the decoder reports it.
#[test]
fn a_failure_before_anything_is_an_http_error() {
    let text = r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#;
    let message = AssistantMessage {
        error_message: Some(text.into()),
        ..message(Vec::new(), StopReason::Error)
    };
    let response = synthesize(&model(), &message).unwrap();
    assert_eq!(response.status, 429);
    assert_eq!(body(&response), text);
    assert_eq!(decode(&model(), TIMESTAMP, &response), message);
}

/// An error object ends the stream as a read of its own, after the usage.
#[test]
fn a_failure_mid_stream_is_an_error_object_read() {
    let (object, status) = ERROR_OBJECTS[0];
    let message = AssistantMessage {
        usage: usage(3, 4, 0, 7),
        error_message: Some(format!("got status: {status}. {object}")),
        ..message(vec![text("Hel", None)], StopReason::Error)
    };
    let response = synthesize(&model(), &message).unwrap();
    assert_eq!(response.chunks.len(), 2);
    assert_eq!(response.chunks[1], object.as_bytes());
    assert_eq!(decode(&model(), TIMESTAMP, &response), message);
}

/// Made-up ids are numbered by how many were made up before, so which calls carry theirs is
/// chosen over the whole message.
#[test]
fn tool_call_ids_are_carried_or_left_out_as_the_count_needs() {
    let f = |n: u64| format!("f_{TIMESTAMP}_{n}");
    let cases = [
        // A repeat must be made up: the first carries its id, or the repeat would be the 2nd.
        vec![f(1), f(1)],
        // The third (a repeat) is the 2nd made up: only the first may be left out.
        vec![f(1), f(2), f(2)],
        vec![f(1), f(2), f(3)],
        // The third (a repeat) is the 1st made up: the second must carry its id.
        vec!["a".into(), f(1), f(1)],
    ];
    for ids in cases {
        let content = ids.iter().map(|id| call(id, "f", json!({}))).collect();
        let message = message(content, StopReason::ToolUse);
        let response = synthesize(&model(), &message).unwrap_or_else(|e| panic!("{ids:?}: {e}"));
        assert_eq!(decode(&model(), TIMESTAMP, &response), message, "{ids:?}");
    }
    let body = body(
        &synthesize(
            &model(),
            &message(vec![call(&f(1), "f", json!({}))], StopReason::ToolUse),
        )
        .unwrap(),
    );
    assert!(!body.contains("\"id\""), "a made-up id is left out: {body}");
}

/// An output no double holds is sent as candidates and thoughts that each fit one.
#[test]
fn an_output_past_doubles_is_split_into_thoughts() {
    let message = AssistantMessage {
        usage: Usage {
            reasoning: Some(1),
            ..usage(1, (1 << 53) + 1, 0, 7)
        },
        ..message(vec![text("x", None)], StopReason::Stop)
    };
    let response = synthesize(&model(), &message).unwrap();
    let body = body(&response);
    assert!(
        body.contains(
            r#""candidatesTokenCount":9007199254740992,"totalTokenCount":7,"thoughtsTokenCount":1}"#
        ),
        "{body}"
    );
    assert_eq!(decode(&model(), TIMESTAMP, &response), message);
}

// ---- refusals ---------------------------------------------------------------------------------

/// A message the decoder can make, to spoil one way at a time.
fn representable() -> AssistantMessage {
    AssistantMessage {
        usage: usage(5, 6, 1, 12),
        response_id: Some("r".into()),
        ..message(
            vec![
                thinking("t", Some("s")),
                text("x", Some("s")),
                call("c1", "read", json!({"a": [1, "b"]})),
            ],
            StopReason::ToolUse,
        )
    }
}

#[test]
fn what_the_decoder_never_makes_is_refused() {
    let model = model();
    assert_eq!(
        decode(
            &model,
            TIMESTAMP,
            &synthesize(&model, &representable()).unwrap()
        ),
        representable()
    );
    let spoil = |change: &dyn Fn(&mut AssistantMessage)| {
        let mut message = representable();
        change(&mut message);
        message
    };
    let set_block = |index: usize, block: ContentBlock| {
        move |m: &mut AssistantMessage| m.content[index] = block.clone()
    };
    let with_error = |reason: StopReason, text: Option<&'static str>| {
        move |m: &mut AssistantMessage| {
            m.stop_reason = reason;
            m.error_message = text.map(Into::into);
        }
    };
    let mut extra = pi_core::extra::Extra::new();
    extra.insert("x".into(), json!(1));
    // Each with a part of the reason it must be refused for.
    let cases: Vec<(&str, AssistantMessage)> = vec![
        (
            "an abort",
            spoil(&with_error(
                StopReason::Aborted,
                Some("Request was aborted"),
            )),
        ),
        (
            "without an error text",
            spoil(&with_error(StopReason::Error, None)),
        ),
        (
            "of no response",
            spoil(&with_error(StopReason::Error, Some("boom"))),
        ),
        (
            "of no response",
            spoil(&with_error(
                StopReason::Error,
                Some("Unhandled stop reason: SAFETY"),
            )),
        ),
        (
            "of no response",
            spoil(&with_error(
                StopReason::Error,
                Some("Unhandled stop reason: "),
            )),
        ),
        (
            "of no response",
            spoil(&with_error(
                StopReason::Error,
                Some(r#"got status: x. {"error":{"code":200}}"#),
            )),
        ),
        (
            "of no response",
            spoil(&with_error(
                StopReason::Error,
                Some(r#"{"error":{"code":400}}"#),
            )),
        ),
        (
            "did not fail",
            spoil(&with_error(
                StopReason::Stop,
                Some("An unknown error occurred"),
            )),
        ),
        (
            "toolUse without a tool call",
            spoil(&|m: &mut AssistantMessage| m.content.truncate(2)),
        ),
        (
            "no images",
            spoil(&set_block(
                0,
                ContentBlock::Image(ImageContent {
                    data: "AA==".into(),
                    mime_type: "image/png".into(),
                    ..ImageContent::default()
                }),
            )),
        ),
        ("in a row", spoil(&set_block(0, text("y", None)))),
        ("in a row", spoil(&set_block(1, thinking("y", None)))),
        (
            "redacted",
            spoil(&set_block(
                0,
                ContentBlock::Thinking(ThinkingContent {
                    redacted: Some(true),
                    ..ThinkingContent::default()
                }),
            )),
        ),
        (
            "an empty signature",
            spoil(&set_block(1, text("x", Some("")))),
        ),
        (
            "null tool-call arguments",
            spoil(&set_block(2, call("c1", "read", Value::Null))),
        ),
        (
            "whole-number float",
            spoil(&set_block(2, call("c1", "read", json!({"n": 1.0})))),
        ),
        (
            "is empty",
            spoil(&set_block(2, call("", "read", json!({})))),
        ),
        (
            "`a` is repeated",
            message(
                vec![call("a", "f", json!({})), call("a", "f", json!({}))],
                StopReason::ToolUse,
            ),
        ),
        (
            "`c1` is repeated",
            spoil(&|m: &mut AssistantMessage| m.content.push(call("c1", "read", json!({})))),
        ),
        (
            "cache writes",
            spoil(&|m: &mut AssistantMessage| {
                m.usage.cache_write = 1;
                m.usage.cost = calculate_cost(&model, &m.usage);
            }),
        ),
        (
            "a cost other than",
            spoil(&|m: &mut AssistantMessage| m.usage.cost.total += 1.0),
        ),
        (
            "double",
            spoil(&|m: &mut AssistantMessage| {
                m.usage.total_tokens = (1 << 53) + 1;
            }),
        ),
        (
            "add up past",
            spoil(&|m: &mut AssistantMessage| {
                m.usage.input = u64::MAX;
                m.usage.cost = calculate_cost(&model, &m.usage);
            }),
        ),
        (
            "usage fields",
            spoil(&|m: &mut AssistantMessage| m.usage.extra = extra.clone()),
        ),
        (
            "message has fields",
            spoil(&|m: &mut AssistantMessage| m.extra = extra.clone()),
        ),
        (
            "response model",
            spoil(&|m: &mut AssistantMessage| m.response_model = Some("gemini".into())),
        ),
        (
            "diagnostics",
            spoil(&|m: &mut AssistantMessage| m.diagnostics = Some(vec![json!(1)])),
        ),
        (
            "empty response id",
            spoil(&|m: &mut AssistantMessage| m.response_id = Some(String::new())),
        ),
        (
            "names the API",
            spoil(&|m: &mut AssistantMessage| m.api = "openai-completions".into()),
        ),
        (
            "another provider or model",
            spoil(&|m: &mut AssistantMessage| m.model = "gemini-2.5-pro".into()),
        ),
    ];
    for (why, message) in cases {
        match synthesize(&model, &message) {
            Err(refused) => {
                assert_eq!(refused.api, "google-generative-ai", "{why}");
                assert!(refused.why.contains(why), "{why}: {}", refused.why);
            }
            Ok(response) => panic!("{why}: synthesized {}", body(&response)),
        }
    }
    let other_api = builtin().get_model("openai", "gpt-4o-mini").unwrap();
    let refused = synthesize(other_api, &representable()).unwrap_err();
    assert!(
        refused.why.contains("another API's decoder"),
        "{}",
        refused.why
    );
}
