//! A Chat Completions stream for a message: a `chat.completion.chunk` per delta, as OpenAI's
//! server sends them (a role chunk, content deltas block by block, the finish reason, a usage
//! chunk, `[DONE]`). The decoder keeps one text and one thinking block per response, created on
//! first use, so a message with two of either cannot be said in this API.

use pi_core::message::{AssistantMessage, ContentBlock, StopReason, ThinkingContent, ToolCall};
use pi_core::model::Model;
use serde_json::{json, Value};

use super::{sse, SynthesizedResponse, Unrepresentable};

const API: &str = "openai-completions";

/// The field names a reasoning delta may come in; the decoder keeps the name as the thinking
/// block's signature.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// The longest piece of text one delta carries (servers send a few tokens at a time).
const DELTA_BYTES: usize = 24;

/// See [`super::synthesize`].
pub fn synthesize(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    let id = message.response_id.clone().unwrap_or_default();
    let answering = message.response_model.as_deref().unwrap_or(&model.id);
    let chunk = |choice: Value, usage: Option<&Value>| {
        let mut chunk = json!({"id": id, "object": "chat.completion.chunk", "created": message.timestamp / 1000, "model": answering, "choices": [choice]});
        if let Some(usage) = usage {
            chunk["choices"] = json!([]);
            chunk["usage"] = usage.clone();
        }
        sse::data(&chunk)
    };
    let delta = |delta: Value| {
        chunk(
            json!({"index": 0, "delta": delta, "finish_reason": null}),
            None,
        )
    };
    let mut chunks = vec![delta(json!({"role": "assistant", "content": ""}))];
    let mut blocks = Blocks::default();
    for block in &message.content {
        chunks.extend(blocks.deltas(block)?.into_iter().map(&delta));
    }
    let usage =
        (message.usage != Default::default()).then(|| chunk(Value::Null, Some(&usage(message))));
    match finish(message)? {
        Finish::Reason(reason) => {
            chunks.push(chunk(
                json!({"index": 0, "delta": {}, "finish_reason": reason}),
                None,
            ));
            chunks.extend(usage);
            chunks.push(sse::done());
        }
        // An error chunk ends the stream: nothing after it is read.
        Finish::Error(text) => {
            chunks.extend(usage);
            chunks.push(sse::data(&json!({"error": {"message": text}})));
        }
    }
    Ok(SynthesizedResponse::event_stream(chunks))
}

/// What the blocks said so far allow next.
#[derive(Default)]
struct Blocks {
    text: bool,
    thinking: bool,
    tools: u64,
}

impl Blocks {
    /// The deltas saying `block`.
    fn deltas(&mut self, block: &ContentBlock) -> Result<Vec<Value>, Unrepresentable> {
        match block {
            ContentBlock::Text(text) => {
                if std::mem::replace(&mut self.text, true) {
                    return Err(Unrepresentable::new(API, "a second text block"));
                }
                if text.text.is_empty() {
                    return Err(Unrepresentable::new(API, "an empty text block"));
                }
                Ok(pieces(&text.text)
                    .map(|piece| json!({"content": piece}))
                    .collect())
            }
            ContentBlock::Thinking(thinking) => {
                if std::mem::replace(&mut self.thinking, true) {
                    return Err(Unrepresentable::new(API, "a second thinking block"));
                }
                let field = reasoning_field(thinking)?;
                Ok(pieces(&thinking.thinking)
                    .map(|piece| json!({ field: piece }))
                    .collect())
            }
            ContentBlock::ToolCall(call) => {
                let index = self.tools;
                self.tools += 1;
                tool_call_deltas(index, call)
            }
            ContentBlock::Image(_) => Err(Unrepresentable::new(API, "an image in an answer")),
        }
    }
}

/// The field a thinking block's text arrives in: its signature names it.
fn reasoning_field(thinking: &ThinkingContent) -> Result<&'static str, Unrepresentable> {
    if thinking.thinking.is_empty() {
        return Err(Unrepresentable::new(API, "an empty thinking block"));
    }
    let signature = thinking.thinking_signature.as_deref().unwrap_or_default();
    REASONING_FIELDS
        .into_iter()
        .find(|field| *field == signature)
        .ok_or_else(|| {
            Unrepresentable::new(
                API,
                format!("a thinking signature that is not a reasoning field: {signature:?}"),
            )
        })
}

/// A tool call's deltas: its id and name, then its arguments' JSON text in pieces, then the
/// encrypted reasoning detail its thought signature was read from.
fn tool_call_deltas(index: u64, call: &ToolCall) -> Result<Vec<Value>, Unrepresentable> {
    let arguments = pi_core::json::to_string(&call.arguments)
        .map_err(|e| Unrepresentable::new(API, format!("tool-call arguments: {e}")))?;
    let mut head = json!({"index": index, "type": "function", "function": {"arguments": ""}});
    if !call.id.is_empty() {
        head["id"] = json!(call.id);
    }
    if !call.name.is_empty() {
        head["function"]["name"] = json!(call.name);
    }
    let mut deltas = vec![json!({"tool_calls": [head]})];
    deltas.extend(
        pieces(&arguments).map(
            |piece| json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
        ),
    );
    if let Some(signature) = &call.thought_signature {
        let detail: Value = serde_json::from_str(signature).map_err(|_| {
            Unrepresentable::new(API, "a tool-call thought signature that is not JSON")
        })?;
        deltas.push(json!({"reasoning_details": [detail]}));
    }
    Ok(deltas)
}

/// `text` in pieces of at most [`DELTA_BYTES`], cut at character boundaries.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = DELTA_BYTES.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, after) = rest.split_at(cut);
        rest = after;
        Some(piece)
    })
}

/// How the stream ends.
enum Finish {
    Reason(Value),
    /// An error chunk with this message.
    Error(String),
}

fn finish(message: &AssistantMessage) -> Result<Finish, Unrepresentable> {
    let reason = match message.stop_reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::Error => {
            let text = message.error_message.clone().unwrap_or_default();
            return Ok(match text.strip_prefix("Provider finish_reason: ") {
                Some(reason) => Finish::Reason(json!(reason)),
                None => Finish::Error(text),
            });
        }
        StopReason::Aborted => {
            return Err(Unrepresentable::new(
                API,
                "an aborted answer (the client ends it, not the stream)",
            ))
        }
        StopReason::Pending | StopReason::Deferred => {
            return Err(Unrepresentable::new(
                API,
                "an answer that did not end (no finish reason says `pending` or `deferred`)",
            ))
        }
    };
    // Pi 1.5 keeps the provider's own reason; the decoder maps it back to `stop_reason`.
    Ok(Finish::Reason(json!(message
        .raw_stop_reason
        .as_deref()
        .unwrap_or(reason))))
}

/// The usage object the decoder reads `message.usage` back from: cached tokens count both cache
/// reads and writes, the prompt counts them all.
fn usage(message: &AssistantMessage) -> Value {
    let u = &message.usage;
    let cached = u.cache_read + u.cache_write;
    let mut details = json!({"cached_tokens": cached});
    if u.cache_write > 0 {
        details["cache_write_tokens"] = json!(u.cache_write);
    }
    let mut usage = json!({
        "prompt_tokens": u.input + cached,
        "completion_tokens": u.output,
        "total_tokens": u.input + cached + u.output,
        "prompt_tokens_details": details,
    });
    if let Some(reasoning) = u.reasoning.filter(|n| *n > 0) {
        usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_at_character_boundaries() {
        let text = "é".repeat(30);
        let cut: Vec<&str> = pieces(&text).collect();
        assert!(cut.len() > 1);
        assert_eq!(cut.concat(), text);
        assert!(pieces("").next().is_none());
    }

    #[test]
    fn bytes_are_sse_data_events() {
        let chunk: bytes::Bytes = sse::data(&json!({"a": 1}));
        assert_eq!(&chunk[..], b"data: {\"a\":1}\n\n");
    }
}
