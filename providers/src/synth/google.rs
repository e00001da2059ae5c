//! Gemini's `streamGenerateContent?alt=sse` stream for a message: the reverse of
//! [`crate::google::Decoder`], which is the spec. Each content block is one response chunk (one
//! `data:` event) whose first candidate carries the block as one part: a text part, a
//! `thought: true` part, or a `functionCall` part, each with its `thoughtSignature`. The finish
//! reason rides on the chunk after which the decoder must read it, the usage metadata on the
//! last chunk, and every chunk names the model version and the response, as Gemini's do.
//!
//! A failed message is the HTTP error whose body the decoder reports as its text, when nothing
//! came before the failure, or else a stream that ends the way the decoder words as that text.
//! Which way gives which text is asked of the decoder itself, on a stream of just that ending,
//! so that the two cannot drift apart.
//!
//! Two shapes hold only for the reads this synthesizer makes, because the decoder (like the
//! Google SDK) checks each network read for an error object on its own: a stream ending in an
//! error object (`got status: …`) fails only while that object is a read of its own, and a tool
//! call whose arguments hold an object with an `error.code` between 400 and 599 fails the stream
//! if a read is cut to exactly that object. Every other stream decodes the same however cut.

use std::collections::BTreeMap;

use bytes::Bytes;
use pi_core::agent::StreamEvent;
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use serde_json::{json, Map, Value};

use super::{sse, SynthesizedResponse, Unrepresentable};
use crate::cost::calculate_cost;
use crate::google::{http_error_message, Decoder};
use crate::StreamEnd;

/// The API the decoder names in every message it makes, whatever the model says.
const API: &str = "google-generative-ai";

/// The content type of Gemini's error bodies.
const JSON_TYPE: &str = "application/json; charset=UTF-8";

/// An event the connection dropped in the middle of: the decoder fails on what is left over.
const TORN: &[u8] = br#"data: {"candidates":[{"content":{"parts":[{"text":""#;

/// The response `model` streams for `message`, which the decoder reads back as `message` when
/// given the message's timestamp as the request's (made-up tool-call ids are built from it).
pub fn synthesize(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    check_head(model, message)?;
    if let Some(response) = http_error(message) {
        return Ok(response);
    }
    let parts = parts(message)?;
    let usage = usage_metadata(model, &message.usage)?;
    let ending = ending(model, message)?;
    // Pi 1.5.2 keeps the finish reason it read; a stream failing without one has none.
    let sent = match &ending {
        Ending::Finish { reason, .. } | Ending::Unknown(reason) => Some(reason.as_str()),
        Ending::Tail(_) => None,
    };
    if message.raw_stop_reason.as_deref() != sent {
        return Err(refuse(format!(
            "a finish reason of {:?} where the stream sends {sent:?}",
            message.raw_stop_reason
        )));
    }
    Ok(SynthesizedResponse::event_stream(stream(
        model, message, parts, &usage, ending,
    )))
}

fn refuse(why: impl Into<String>) -> Unrepresentable {
    Unrepresentable::new(API, why)
}

/// What the decoder fills in the same for every response: who answered, and nothing else it
/// never writes.
fn check_head(model: &Model, message: &AssistantMessage) -> Result<(), Unrepresentable> {
    let problems = [
        (
            model.api != API,
            "the model is read with another API's decoder",
        ),
        (
            message.api != API,
            "the decoder names the API google-generative-ai",
        ),
        (
            message.provider != model.provider || message.model != model.id,
            "the message names another provider or model than the one answering",
        ),
        (
            message.response_model.is_some(),
            "the decoder records no response model",
        ),
        (
            message.diagnostics.is_some(),
            "the decoder records no diagnostics",
        ),
        (
            !message.extra.is_empty(),
            "the message has fields the decoder never writes",
        ),
        (
            message.response_id.as_deref() == Some(""),
            "the decoder ignores an empty response id",
        ),
    ];
    match problems.iter().find(|(bad, _)| *bad) {
        Some((_, why)) => Err(refuse(*why)),
        None => Ok(()),
    }
}

/// A failed message with nothing before the failure, as the HTTP error whose body the decoder
/// reports. It reports a JSON body as it reads it and wraps any other in JSON, so only a text
/// that is JSON, written as the decoder writes it, comes back as itself.
fn http_error(message: &AssistantMessage) -> Option<SynthesizedResponse> {
    let text = message.error_message.as_deref()?;
    let nothing_before = message.stop_reason == StopReason::Error
        && message.content.is_empty()
        && message.usage == Usage::default()
        && message.response_id.is_none();
    if !nothing_before {
        return None;
    }
    let status = http_status(text);
    (http_error_message(status, Some(JSON_TYPE), text.as_bytes()) == text).then(|| {
        SynthesizedResponse {
            status,
            headers: vec![("content-type".into(), JSON_TYPE.into())],
            chunks: vec![Bytes::copy_from_slice(text.as_bytes())],
        }
    })
}

/// The status Gemini sends an error body with: its `error.code`, or 500 when that is no error
/// status (the decoder reads any status outside 2xx the same).
fn http_status(text: &str) -> u16 {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|body| body.pointer("/error/code").and_then(Value::as_u64))
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500)
}

/// Each block as the one part the decoder rebuilds it from.
fn parts(message: &AssistantMessage) -> Result<Vec<Value>, Unrepresentable> {
    check_neighbours(&message.content)?;
    let mut omit_ids = omitted_ids(message)?.into_iter();
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text_part(text),
            ContentBlock::Thinking(thinking) => thought_part(thinking),
            ContentBlock::ToolCall(call) => {
                function_call_part(call, omit_ids.next().unwrap_or(false))
            }
            ContentBlock::Image(_) => Err(refuse("the decoder reads no images from a response")),
        })
        .collect()
}

/// The decoder extends an open text or thinking block with the next part of its kind, so two
/// such blocks in a row would come back as one.
fn check_neighbours(content: &[ContentBlock]) -> Result<(), Unrepresentable> {
    let joined = content.windows(2).any(|pair| {
        matches!(
            pair,
            [ContentBlock::Text(_), ContentBlock::Text(_)]
                | [ContentBlock::Thinking(_), ContentBlock::Thinking(_)]
        )
    });
    if joined {
        return Err(refuse(
            "two text or two thinking blocks in a row, which the decoder joins into one",
        ));
    }
    Ok(())
}

fn text_part(block: &TextContent) -> Result<Value, Unrepresentable> {
    if !block.extra.is_empty() {
        return Err(refuse("a text block with fields the decoder never writes"));
    }
    part(
        [("text", Value::from(block.text.as_str()))],
        block.text_signature.as_deref(),
    )
}

fn thought_part(block: &ThinkingContent) -> Result<Value, Unrepresentable> {
    if block.redacted.is_some() || !block.extra.is_empty() {
        return Err(refuse(
            "a thinking block marked redacted or with fields the decoder never writes",
        ));
    }
    part(
        [
            ("text", Value::from(block.thinking.as_str())),
            ("thought", Value::Bool(true)),
        ],
        block.thinking_signature.as_deref(),
    )
}

/// A `functionCall` part; `omit_id` leaves the id for the decoder to make up.
fn function_call_part(call: &ToolCall, omit_id: bool) -> Result<Value, Unrepresentable> {
    if !call.extra.is_empty() {
        return Err(refuse("a tool call with fields the decoder never writes"));
    }
    if call.arguments.is_null() {
        return Err(refuse(
            "null tool-call arguments, which the decoder reads as {}",
        ));
    }
    if !survives_the_wire(&call.arguments) {
        return Err(refuse(
            "tool-call arguments with a whole-number float, which JSON writes as an integer",
        ));
    }
    let mut function_call = Map::new();
    function_call.insert("name".into(), Value::from(call.name.as_str()));
    function_call.insert("args".into(), call.arguments.clone());
    if !omit_id {
        function_call.insert("id".into(), Value::from(call.id.as_str()));
    }
    part(
        [("functionCall", Value::Object(function_call))],
        call.thought_signature.as_deref(),
    )
}

/// A part of `fields` and the signature: the decoder keeps only a non-empty one.
fn part<const N: usize>(
    fields: [(&str, Value); N],
    signature: Option<&str>,
) -> Result<Value, Unrepresentable> {
    let mut part: Map<String, Value> = fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect();
    match signature {
        Some("") => return Err(refuse("an empty signature, which the decoder drops")),
        Some(signature) => {
            part.insert("thoughtSignature".into(), Value::from(signature));
        }
        None => {}
    }
    Ok(Value::Object(part))
}

/// Whether `value` reads back the same once written as JSON (JavaScript's way, as all JSON
/// here is): a float with a whole value is written as an integer, and read back as one.
fn survives_the_wire(value: &Value) -> bool {
    pi_core::json::to_string(value)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .as_ref()
        == Some(value)
}

/// For each tool call, whether its `functionCall` leaves the id out for the decoder to make up
/// (`{name}_{timestamp}_{n}`, `n` counting the ids made up so far) rather than carry it. A
/// carried id must be non-empty and new in the message (for a repeated one the decoder makes
/// up another); a left-out one must be the next made-up id. What the earlier calls leave out
/// sets the count the later ones see, so every count reachable after each call is followed;
/// of the ways through, the one leaving out the most wins, as Gemini itself sends no ids.
fn omitted_ids(message: &AssistantMessage) -> Result<Vec<bool>, Unrepresentable> {
    let calls: Vec<&ToolCall> = message.tool_calls().collect();
    // How many ids were left out so far -> which were, one way to get there.
    let mut reachable: BTreeMap<u64, Vec<bool>> = BTreeMap::from([(0, Vec::new())]);
    for (index, call) in calls.iter().enumerate() {
        let repeated = calls[..index].iter().any(|earlier| earlier.id == call.id);
        let carried = !call.id.is_empty() && !repeated;
        let mut next = BTreeMap::new();
        for (count, omitted) in reachable {
            if made_up_id(call, message.timestamp, count + 1) == call.id {
                next.entry(count + 1)
                    .or_insert_with(|| extended(&omitted, true));
            }
            if carried {
                next.entry(count)
                    .or_insert_with(|| extended(&omitted, false));
            }
        }
        if next.is_empty() {
            return Err(refuse(format!(
                "tool call id `{}` is {} and not the one the decoder would make up for the call",
                call.id,
                if call.id.is_empty() {
                    "empty"
                } else {
                    "repeated"
                },
            )));
        }
        reachable = next;
    }
    Ok(reachable
        .pop_last()
        .map(|(_, omitted)| omitted)
        .unwrap_or_default())
}

/// The id the decoder gives the `n`th call it names itself, in a response to a request made
/// at `timestamp`.
fn made_up_id(call: &ToolCall, timestamp: u64, n: u64) -> String {
    format!("{}_{timestamp}_{n}", call.name)
}

fn extended(omitted: &[bool], next: bool) -> Vec<bool> {
    omitted.iter().copied().chain([next]).collect()
}

/// The `usageMetadata` the decoder reads back as `usage`: it takes the prompt less the cached
/// tokens as input, candidates plus thoughts as output, no cache writes, the total as given,
/// and prices the tokens itself. Each count passes through a double on the way, so the prompt,
/// the cached tokens and the total must each fit one; the output may be split in two that do.
fn usage_metadata(model: &Model, usage: &Usage) -> Result<Option<Value>, Unrepresentable> {
    // Without any `usageMetadata` the decoder keeps the empty usage it started with.
    if *usage == Usage::default() {
        return Ok(None);
    }
    if usage.cache_write != 0 {
        return Err(refuse("cache writes, which Gemini does not report"));
    }
    if !usage.extra.is_empty() || !usage.cost.extra.is_empty() {
        return Err(refuse("usage fields the decoder never writes"));
    }
    let prompt = usage
        .input
        .checked_add(usage.cache_read)
        .ok_or_else(|| refuse("input and cache reads add up past any token count"))?;
    let counts = [prompt, usage.cache_read, usage.total_tokens];
    if counts.iter().any(|n| (*n as f64) as u64 != *n) {
        return Err(refuse("a token count a double cannot hold exactly"));
    }
    let mut cost = calculate_cost(model, usage);
    // Pi 1.5.2 marks the cost as computed.
    cost.total_from_provider = Some(false);
    if usage.cost != cost {
        return Err(refuse(
            "a cost other than the model's prices give (the decoder prices the tokens itself)",
        ));
    }
    // Pi 1.5.2 reads the thought tokens as `reasoning` (and adds them to the output).
    let Some(thoughts) = usage.reasoning else {
        return Err(refuse(
            "a usage without reasoning tokens: the decoder always counts them",
        ));
    };
    let candidates = usage
        .output
        .checked_sub(thoughts)
        .ok_or_else(|| refuse("more reasoning tokens than output tokens"))?;
    if [candidates, thoughts]
        .iter()
        .any(|n| (*n as f64) as u64 != *n)
    {
        return Err(refuse("a token count a double cannot hold exactly"));
    }
    let mut meta = Map::new();
    meta.insert("promptTokenCount".into(), prompt.into());
    if usage.cache_read > 0 {
        meta.insert("cachedContentTokenCount".into(), usage.cache_read.into());
    }
    meta.insert("candidatesTokenCount".into(), candidates.into());
    meta.insert("totalTokenCount".into(), usage.total_tokens.into());
    if thoughts > 0 {
        meta.insert("thoughtsTokenCount".into(), thoughts.into());
    }
    Ok(Some(Value::Object(meta)))
}

/// How the stream ends, for the decoder to end with the message's stop reason and error.
enum Ending {
    /// A finish reason the decoder maps to the stop reason; `early` when it has to come before
    /// the first tool call (after one, the decoder reads any finish reason as `toolUse`).
    Finish { reason: String, early: bool },
    /// A finish reason the decoder does not know, which fails the stream there and then.
    Unknown(String),
    /// A last read the decoder fails on: an error object, or an event cut short.
    Tail(Bytes),
}

impl Ending {
    /// This ending alone, as a whole stream.
    fn probe(&self) -> Bytes {
        match self {
            Ending::Finish { reason, .. } => finish_event(reason),
            Ending::Unknown(reason) => finish_event(reason),
            Ending::Tail(bytes) => bytes.clone(),
        }
    }
}

fn finish_event(reason: &str) -> Bytes {
    sse::data(&json!({"candidates": [{"finishReason": reason, "index": 0}]}))
}

fn ending(model: &Model, message: &AssistantMessage) -> Result<Ending, Unrepresentable> {
    let has_calls = message.tool_calls().next().is_some();
    let finish = |reason: &str, early| {
        Ok(Ending::Finish {
            reason: reason.to_owned(),
            early,
        })
    };
    match (message.stop_reason, message.error_message.as_deref()) {
        (StopReason::Stop, None) => finish("STOP", true),
        (StopReason::Length, None) => finish("MAX_TOKENS", true),
        (StopReason::ToolUse, None) if has_calls => finish("STOP", false),
        (StopReason::ToolUse, None) => Err(refuse(
            "toolUse without a tool call: the decoder stops for tools only after one",
        )),
        (StopReason::Error, Some(text)) => failure(model, text),
        (StopReason::Error, None) => Err(refuse(
            "a failure without an error text: the decoder always gives one",
        )),
        (StopReason::Aborted, _) => Err(refuse(
            "an abort, which the decoder sees only when the call is cancelled, never in bytes",
        )),
        (StopReason::Pending | StopReason::Deferred, _) => Err(refuse(
            "an answer that did not end: no finish reason says so",
        )),
        (_, Some(_)) => Err(refuse("an error text on a message that did not fail")),
    }
}

/// The ending the decoder words as `text`: each way a stream can fail that has a text of its
/// own (an error finish reason, a torn last event, an unknown finish reason, an error object),
/// tried on a stream of just that ending, as the decoder's wording is the spec. A JSON syntax
/// error is worded by serde with a line and column, and is not made up here.
fn failure(model: &Model, text: &str) -> Result<Ending, Unrepresentable> {
    let mut candidates = vec![Ending::Tail(Bytes::from_static(TORN))];
    // An error finish reason, which Pi 1.5.2 names at the end of the stream.
    candidates.extend(
        text.strip_prefix("Provider stopped with: ")
            .map(|reason| Ending::Finish {
                reason: reason.to_owned(),
                early: true,
            }),
    );
    candidates.extend(
        text.strip_prefix("Unhandled stop reason: ")
            .map(|reason| Ending::Unknown(reason.to_owned())),
    );
    // `got status: {status}. {the error object as read}`: the object is a tail of the text.
    candidates.extend(
        text.match_indices(". {")
            .filter_map(|(at, _)| text.get(at + 2..))
            .map(|object| Ending::Tail(Bytes::copy_from_slice(object.as_bytes()))),
    );
    candidates
        .into_iter()
        .find(|candidate| error_text(model, &candidate.probe()).as_deref() == Some(text))
        .ok_or_else(|| refuse("an error text the decoder makes of no response"))
}

/// The error text the decoder ends a response of `bytes`, in one read, with.
fn error_text(model: &Model, bytes: &[u8]) -> Option<String> {
    let mut decoder = Decoder::new(model, 0);
    let mut events = decoder.start();
    events.extend(decoder.feed(bytes));
    events.extend(decoder.finish(StreamEnd::Complete));
    events.into_iter().find_map(|event| match event {
        StreamEvent::Error { error, .. } => error.error_message,
        _ => None,
    })
}

/// One response chunk: at most one part, the finish reason, whether the usage rides on it.
#[derive(Default)]
struct Chunk {
    part: Option<Value>,
    finish: Option<String>,
    usage: bool,
}

/// The reads of the response: one event per chunk, and the tail that fails it, if any.
fn stream(
    model: &Model,
    message: &AssistantMessage,
    parts: Vec<Value>,
    usage: &Option<Value>,
    ending: Ending,
) -> Vec<Bytes> {
    let mut chunks: Vec<Chunk> = parts
        .into_iter()
        .map(|part| Chunk {
            part: Some(part),
            ..Chunk::default()
        })
        .collect();
    if let Ending::Finish { reason, early } = &ending {
        let first_call = message
            .content
            .iter()
            .position(|block| matches!(block, ContentBlock::ToolCall(_)));
        place_finish(&mut chunks, reason, first_call.filter(|_| *early));
    }
    if chunks.is_empty() {
        chunks.push(Chunk::default());
    }
    if let Some(last) = chunks.last_mut() {
        last.usage = true;
    }
    // The decoder fails on an unknown finish reason before it reads the usage beside it.
    if let Ending::Unknown(reason) = &ending {
        chunks.push(Chunk {
            finish: Some(reason.clone()),
            ..Chunk::default()
        });
    }
    let response_id = message.response_id.as_deref();
    let mut reads: Vec<Bytes> = chunks
        .iter()
        .map(|chunk| sse::data(&chunk_json(chunk, &model.id, response_id, usage)))
        .collect();
    if let Ending::Tail(bytes) = ending {
        reads.push(bytes);
    }
    reads
}

/// The finish reason on the chunk before the one at `before` (the first tool call's), or on
/// the last; on a chunk of its own when there is none.
fn place_finish(chunks: &mut Vec<Chunk>, reason: &str, before: Option<usize>) {
    let finish = Some(reason.to_owned());
    let at = before.unwrap_or(chunks.len()).checked_sub(1);
    match at.and_then(|at| chunks.get_mut(at)) {
        Some(chunk) => chunk.finish = finish,
        None => chunks.insert(
            0,
            Chunk {
                finish,
                ..Chunk::default()
            },
        ),
    }
}

/// A `GenerateContentResponse` as Gemini writes it.
fn chunk_json(
    chunk: &Chunk,
    model_version: &str,
    response_id: Option<&str>,
    usage: &Option<Value>,
) -> Value {
    let mut candidate = Map::new();
    if let Some(part) = &chunk.part {
        candidate.insert("content".into(), json!({"parts": [part], "role": "model"}));
    }
    if let Some(reason) = &chunk.finish {
        candidate.insert("finishReason".into(), Value::from(reason.as_str()));
    }
    let mut response = Map::new();
    if !candidate.is_empty() {
        candidate.insert("index".into(), Value::from(0));
        response.insert("candidates".into(), json!([candidate]));
    }
    if let (true, Some(usage)) = (chunk.usage, usage) {
        response.insert("usageMetadata".into(), usage.clone());
    }
    response.insert("modelVersion".into(), Value::from(model_version));
    if let Some(id) = response_id {
        response.insert("responseId".into(), Value::from(id));
    }
    Value::Object(response)
}
