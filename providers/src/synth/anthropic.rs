//! The Anthropic Messages stream of a message: `message_start`, each block as
//! `content_block_start`, deltas and `content_block_stop` at its `index`, then `message_delta`
//! and `message_stop` (or an `error` event), each event one read, shaped and ordered as the API
//! (and the kit's mock) sends them. Only what the anthropic decoder can read back exactly is
//! written; anything else is refused with the reason.

use bytes::Bytes;
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use serde_json::{json, Map, Value};

use super::{sse, SynthesizedResponse, Unrepresentable};
use crate::anthropic::map_stop_reason;

/// The text the decoder gives a redacted thinking block: the API never shows its reasoning.
const REDACTED: &str = "[Reasoning redacted]";

/// A block's `content_block` (as started) and the deltas that fill it.
type BlockEvents = (Value, Vec<Value>);

/// The response the Messages API streams for `message`, or why the decoder could not give it back.
pub fn synthesize(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    events(model, message)
        .map(SynthesizedResponse::event_stream)
        .map_err(|why| Unrepresentable::new(&model.api, why))
}

fn events(model: &Model, message: &AssistantMessage) -> Result<Vec<Bytes>, String> {
    check_head(model, message)?;
    check_usage(&message.usage)?;
    let ending = ending(message)?;
    let mut chunks = vec![message_start(model, message)];
    for (index, block) in message.content.iter().enumerate() {
        chunks.extend(content_block(index, block)?);
    }
    chunks.extend(ending.chunks(message.usage.output));
    Ok(chunks)
}

/// The decoder takes who answered from the model, sets a response model only when the stream
/// names another, and never sets diagnostics or unknown fields, so a message with other values
/// cannot come out of it.
fn check_head(model: &Model, message: &AssistantMessage) -> Result<(), String> {
    if message.api != model.api || message.provider != model.provider || message.model != model.id {
        return Err(format!(
            "the message is {}'s {} over {}, not {}'s {} over {}",
            message.provider, message.model, message.api, model.provider, model.id, model.api
        ));
    }
    if message.response_model.as_deref() == Some(model.id.as_str()) {
        return Err("the decoder sets a response model only when it is another model".into());
    }
    if message.diagnostics.is_some() || !message.extra.is_empty() {
        return Err("the decoder never sets diagnostics or unknown fields".into());
    }
    Ok(())
}

/// The decoder reads token counts as doubles. It computes the total and the cost itself from the
/// model's prices: a usage it would compute otherwise (a wrong figure, or an older Pi's cost,
/// whose cache writes were priced with another rounding and which does not say
/// `totalFromProvider`) is named when the stream is read back.
fn check_usage(usage: &Usage) -> Result<(), String> {
    let counts = [
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
    ];
    if let Some(count) = counts.iter().find(|n| **n as f64 as u64 != **n) {
        return Err(format!("{count} tokens read as a double are another count"));
    }
    Ok(())
}

/// How the stream ends: the API's stop reason, or an `error` event whose data the decoder
/// takes as the error text.
enum Ending<'a> {
    /// The stop reason as sent, and the thinking tokens the final usage reports.
    Stop(&'a str, Option<u64>),
    Error(&'a str),
}

fn ending(message: &AssistantMessage) -> Result<Ending<'_>, String> {
    // Pi 1.5.2 keeps the stop reason as the API sent it; one the message does not name is the
    // usual one for its stop.
    let raw = message.raw_stop_reason.as_deref();
    let said = |usual: &'static str| {
        let reason = raw.unwrap_or(usual);
        match map_stop_reason(&json!(reason)) {
            Ok(stop) if stop == message.stop_reason => {
                Ok(Ending::Stop(reason, message.usage.reasoning))
            }
            _ => Err(format!(
                "the stop reason {reason:?} does not end an answer with {:?}",
                message.stop_reason
            )),
        }
    };
    match (message.stop_reason, message.error_message.as_deref()) {
        (StopReason::Stop, None) => said("end_turn"),
        (StopReason::Length, None) => said("max_tokens"),
        (StopReason::ToolUse, None) => said("tool_use"),
        (StopReason::Error, Some(text)) if text.contains('\r') => {
            Err("an error text with a carriage return: an event's data cannot hold one".into())
        }
        (StopReason::Error, Some(text)) => Ok(Ending::Error(text)),
        (StopReason::Error, None) => Err("the decoder gives every error a text".into()),
        (StopReason::Aborted, _) => {
            Err("only the caller aborts a request: no stream says it was aborted".into())
        }
        (StopReason::Pending | StopReason::Deferred, _) => {
            Err("an answer that did not end: no stop reason says so".into())
        }
        (_, Some(_)) => Err("only an error has an error text".into()),
    }
}

impl Ending<'_> {
    fn chunks(&self, output_tokens: u64) -> Vec<Bytes> {
        match self {
            Ending::Stop(reason, thinking) => {
                let mut usage = json!({"output_tokens": output_tokens});
                if let (Some(thinking), Some(fields)) = (thinking, usage.as_object_mut()) {
                    fields.insert(
                        "output_tokens_details".into(),
                        json!({"thinking_tokens": thinking}),
                    );
                }
                vec![
                    sse::named(
                        "message_delta",
                        &json!({"type": "message_delta",
                            "delta": {"stop_reason": reason, "stop_sequence": null},
                            "usage": usage}),
                    ),
                    sse::named("message_stop", &json!({"type": "message_stop"})),
                ]
            }
            Ending::Error(text) => vec![error_event(text)],
        }
    }
}

/// `event: error` with `text` as its data, one `data:` line per line of it (the decoder keeps
/// the data as it is, as pi-ai keeps the API's error JSON).
fn error_event(text: &str) -> Bytes {
    let mut event = String::from("event: error\n");
    for line in text.split('\n') {
        event.push_str("data: ");
        event.push_str(line);
        event.push('\n');
    }
    event.push('\n');
    Bytes::from(event)
}

/// `message_start`'s usage; hour-long cache writes only when there are some (the decoder reads
/// none as 0).
fn usage_start(usage: &Usage) -> Value {
    let mut start = json!({"input_tokens": usage.input, "output_tokens": usage.output,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_write});
    if let (Some(long), Some(fields)) = (
        usage.cache_write_1h.filter(|n| *n > 0),
        start.as_object_mut(),
    ) {
        fields.insert(
            "cache_creation".into(),
            json!({"ephemeral_1h_input_tokens": long}),
        );
    }
    start
}

/// The whole usage is in `message_start`, so a stream ending in an error (which has no
/// `message_delta`) carries it too; no `id` when the message has none, as the decoder then
/// records none.
fn message_start(model: &Model, message: &AssistantMessage) -> Bytes {
    let usage = &message.usage;
    let id = message.response_id.as_ref().map(|id| ("id", json!(id)));
    let fields = id.into_iter().chain([
        ("type", json!("message")),
        ("role", json!("assistant")),
        (
            "model",
            json!(message.response_model.as_deref().unwrap_or(&model.id)),
        ),
        ("content", json!([])),
        ("stop_reason", Value::Null),
        ("stop_sequence", Value::Null),
        ("usage", usage_start(usage)),
    ]);
    let fields: Map<String, Value> = fields.map(|(key, value)| (key.to_owned(), value)).collect();
    sse::named(
        "message_start",
        &json!({"type": "message_start", "message": fields}),
    )
}

fn content_block(index: usize, block: &ContentBlock) -> Result<Vec<Bytes>, String> {
    let (start, deltas) = match block {
        ContentBlock::Text(text) => text_block(text)?,
        ContentBlock::Thinking(thinking) if thinking.redacted == Some(true) => {
            redacted_block(thinking)?
        }
        ContentBlock::Thinking(thinking) => thinking_block(thinking)?,
        ContentBlock::ToolCall(call) => tool_use_block(call)?,
        ContentBlock::Image(_) => return Err("the API never answers with an image".into()),
    };
    let mut chunks = vec![sse::named(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    )];
    chunks.extend(deltas.into_iter().map(|delta| {
        sse::named(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    }));
    chunks.push(sse::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
    Ok(chunks)
}

fn text_block(text: &TextContent) -> Result<BlockEvents, String> {
    if text.text_signature.is_some() || !text.extra.is_empty() {
        return Err("the decoder never signs a text block or adds fields to it".into());
    }
    Ok((
        json!({"type": "text", "text": ""}),
        vec![json!({"type": "text_delta", "text": text.text})],
    ))
}

/// The decoder starts a thinking block with an empty signature and no `redacted` flag.
fn thinking_block(thinking: &ThinkingContent) -> Result<BlockEvents, String> {
    match (&thinking.thinking_signature, thinking.redacted, thinking.extra.is_empty()) {
        (Some(signature), None, true) => Ok((
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": thinking.thinking}),
                json!({"type": "signature_delta", "signature": signature}),
            ],
        )),
        _ => Err(
            "a thinking block from the decoder has a signature (maybe empty), no `redacted` flag and no other fields"
                .into(),
        ),
    }
}

/// The API sends redacted reasoning as opaque data only, which the decoder keeps as the
/// signature of a placeholder text.
fn redacted_block(thinking: &ThinkingContent) -> Result<BlockEvents, String> {
    match (&thinking.thinking_signature, thinking.extra.is_empty()) {
        (Some(data), true) if thinking.thinking == REDACTED => Ok((
            json!({"type": "redacted_thinking", "data": data}),
            Vec::new(),
        )),
        _ => Err(format!(
            "a redacted thinking block reads {REDACTED:?}, has its data as signature and no other fields"
        )),
    }
}

/// The input streams as JSON text, which the decoder parses when the block stops (leniently
/// past serde_json's 128 levels of nesting, to the same value). serde_json writes it rather
/// than the `JSON.stringify` writer, which drops the `.0` of a whole float (the decoder would
/// read an integer back).
fn tool_use_block(call: &ToolCall) -> Result<BlockEvents, String> {
    if call.thought_signature.is_some() || !call.extra.is_empty() {
        return Err(
            "the decoder never gives a tool call a thought signature or other fields".into(),
        );
    }
    if !call.arguments.is_object() {
        return Err("a tool's input is always a JSON object".into());
    }
    let text = serde_json::to_string(&call.arguments).map_err(|e| e.to_string())?;
    Ok((
        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
        vec![json!({"type": "input_json_delta", "partial_json": text})],
    ))
}
