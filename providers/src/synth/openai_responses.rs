//! The OpenAI Responses stream for a message: the exact reverse of
//! [`crate::openai_responses::Decoder`], which is the spec. Each content block is one output item
//! (`reasoning` for thinking, `message` for text, `function_call` for a tool call) streamed as the
//! API streams it, from `response.output_item.added` to `response.output_item.done`; then
//! `response.completed` (or `response.incomplete`) brings usage, service tier and status, or a
//! failed message ends with the failure event the decoder words as its error text. What the
//! decoder can never produce is refused with [`Unrepresentable`] rather than said
//! approximately.

use bytes::Bytes;
use pi_core::agent::StreamEvent;
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_core::partial_json::parse_streaming_json;
use serde_json::{json, Map, Value};

use super::{sse, SynthesizedResponse, Unrepresentable};
use crate::openai_responses::{Decoder, INCOMPLETE_WITHOUT_REASON, NO_TERMINAL_EVENT};
use crate::StreamEnd;

/// The decoder's error text for a response that completed with status `failed` or `cancelled`.
const UNKNOWN_FAILURE: &str = "An unknown error occurred";
/// The decoder's error text for a `response.failed` with neither error nor incomplete details.
const NO_DETAILS: &str = "Unknown error (no error details in response)";
/// The incomplete reason the decoder reads as the output limit (stop reason `length`).
const LENGTH: &str = "max_output_tokens";
/// The service tiers a response reports, the usual one first (the decoder prices `flex` and
/// `priority` with multipliers).
const SERVICE_TIERS: [&str; 3] = ["default", "flex", "priority"];

/// The response `model`'s Responses endpoint streams for `message`: one server-sent event per
/// read, as the API writes them.
pub fn synthesize(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    events(model, message)
        .map(SynthesizedResponse::event_stream)
        .map_err(|why| Unrepresentable::new(&model.api, why))
}

/// The events for `message`, or why the decoder could never make it.
fn events(model: &Model, message: &AssistantMessage) -> Result<Vec<Bytes>, String> {
    check_head(model, message)?;
    let mut stream = Stream {
        model,
        response_id: message.response_id.as_deref(),
        created_at: message.timestamp / 1000,
        chunks: Vec::new(),
        output: Vec::new(),
    };
    stream.created();
    for (index, block) in message.content.iter().enumerate() {
        let last = index + 1 == message.content.len();
        stream.block(index, block, last)?;
    }
    // Pi 1.5.2 keeps the status (and incomplete reason) it read; a stream failing before any
    // terminal event has none.
    let sent = stream.end(message)?;
    if message.raw_stop_reason != sent {
        return Err(format!(
            "a rawStopReason of {:?} where the stream leaves {sent:?}",
            message.raw_stop_reason
        ));
    }
    Ok(stream.chunks)
}

/// The decoder writes the model's api, provider and id and nothing it does not read: a message
/// naming another model, or carrying fields no Responses stream sets, cannot come from it.
fn check_head(model: &Model, message: &AssistantMessage) -> Result<(), String> {
    let head = (&message.api, &message.provider, &message.model);
    if head != (&model.api, &model.provider, &model.id) {
        return Err(format!(
            "the message names {}/{} ({}), but the decoder writes the model's {}/{} ({})",
            message.provider, message.model, message.api, model.provider, model.id, model.api
        ));
    }
    if message.response_model.is_some() {
        return Err("a responseModel (the decoder never records one)".into());
    }
    if message.diagnostics.is_some() || !message.extra.is_empty() {
        return Err("diagnostics or other fields the decoder never writes".into());
    }
    Ok(())
}

/// Where an item's events point: the item's id and its place in the response's output.
struct Place {
    id: Value,
    index: usize,
}

impl Place {
    fn fields(&self) -> [(&'static str, Value); 2] {
        [
            ("item_id", self.id.clone()),
            ("output_index", self.index.into()),
        ]
    }
}

/// The events written so far, and what later ones repeat.
struct Stream<'a> {
    model: &'a Model,
    response_id: Option<&'a str>,
    /// Seconds since the epoch, as the API's `created_at`.
    created_at: u64,
    chunks: Vec<Bytes>,
    /// The finished items, which `response.completed` lists as the response's output.
    output: Vec<Value>,
}

impl Stream<'_> {
    /// One event, `type` and `sequence_number` first as the API writes them (each event is one
    /// read, so the sequence number is the number of reads before it).
    fn event(&mut self, kind: &str, fields: impl IntoIterator<Item = (&'static str, Value)>) {
        let mut event = Map::new();
        event.insert("type".into(), kind.into());
        event.insert("sequence_number".into(), self.chunks.len().into());
        event.extend(
            fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value)),
        );
        self.chunks.push(sse::named(kind, &Value::Object(event)));
    }

    /// An event about the item at `place`.
    fn item_event<const N: usize>(
        &mut self,
        kind: &str,
        place: &Place,
        fields: [(&'static str, Value); N],
    ) {
        self.event(kind, place.fields().into_iter().chain(fields));
    }

    /// The `response` object of a lifecycle event. The decoder reads its id from
    /// `response.created` (an empty one too) and from `response.completed` (a non-empty one), so
    /// both carry the message's, and neither carries one when the message has none.
    fn response(
        &self,
        status: &str,
        fields: impl IntoIterator<Item = (&'static str, Value)>,
    ) -> Value {
        let mut response = Map::new();
        if let Some(id) = self.response_id {
            response.insert("id".into(), id.into());
        }
        response.insert("object".into(), "response".into());
        response.insert("created_at".into(), self.created_at.into());
        response.insert("status".into(), status.into());
        response.insert("model".into(), self.model.id.clone().into());
        response.extend(
            fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value)),
        );
        Value::Object(response)
    }

    fn created(&mut self) {
        let response = self.response("in_progress", [("output", json!([]))]);
        self.event("response.created", [("response", response)]);
    }

    fn added(&mut self, index: usize, item: Value) {
        let fields = [("output_index", index.into()), ("item", item)];
        self.event("response.output_item.added", fields);
    }

    /// `response.output_item.done`: the decoder settles the block from this item.
    fn done(&mut self, index: usize, item: Value) {
        let fields = [("output_index", index.into()), ("item", item.clone())];
        self.event("response.output_item.done", fields);
        self.output.push(item);
    }

    /// The output item for `block`. Every block but the last ends with `output_item.done`, which
    /// signs it; a last text or thinking block may stay open (unsigned). A tool call always
    /// finishes: an unfinished one fails the response in Pi 1.5.2 and decodes like a finished
    /// one.
    fn block(&mut self, index: usize, block: &ContentBlock, last: bool) -> Result<(), String> {
        match block {
            ContentBlock::Text(text) => self.text_block(index, text, last),
            ContentBlock::Thinking(thinking) => self.thinking_block(index, thinking, last),
            ContentBlock::ToolCall(call) => self.tool_call_block(index, call),
            ContentBlock::Image(_) => {
                Err("an image block (the Responses API streams no images)".into())
            }
        }
    }

    /// A `message` item with one `output_text` part. The decoder signs a finished text block with
    /// the item's id and phase, so a signed block is said with exactly those.
    fn text_block(&mut self, index: usize, block: &TextContent, last: bool) -> Result<(), String> {
        if !block.extra.is_empty() {
            return Err("a text block with fields the decoder never writes".into());
        }
        let signed = match &block.text_signature {
            Some(signature) => Some(text_item_identity(signature)?),
            None if last => None,
            None => return Err(unfinished("text block without a textSignature")),
        };
        let id = signed
            .as_ref()
            .map_or_else(|| format!("msg_{index}").into(), |(id, _)| id.clone());
        let place = Place { id, index };
        self.added(
            index,
            message_item(&place.id, "in_progress", json!([]), None),
        );
        self.output_text(&place, &block.text, signed.is_some());
        if let Some((id, phase)) = signed {
            let content = json!([output_text_part(&block.text)]);
            self.done(index, message_item(&id, "completed", content, phase));
        }
        Ok(())
    }

    /// The events of a message's one `output_text` part; a finished part ends with its `done`
    /// events (which the decoder ignores, as it takes the text from the finished item).
    fn output_text(&mut self, place: &Place, text: &str, finished: bool) {
        let content_index = ("content_index", Value::from(0));
        let part = ("part", output_text_part(""));
        self.item_event(
            "response.content_part.added",
            place,
            [content_index.clone(), part],
        );
        if !text.is_empty() {
            let delta = ("delta", text.into());
            self.item_event(
                "response.output_text.delta",
                place,
                [content_index.clone(), delta],
            );
        }
        if finished {
            let done = ("text", text.into());
            self.item_event(
                "response.output_text.done",
                place,
                [content_index.clone(), done],
            );
            let part = ("part", output_text_part(text));
            self.item_event("response.content_part.done", place, [content_index, part]);
        }
    }

    /// A `reasoning` item. A finished one is the item its signature holds (the decoder keeps the
    /// whole item as the signature), streamed so that the decoder settles on the block's text.
    fn thinking_block(
        &mut self,
        index: usize,
        block: &ThinkingContent,
        last: bool,
    ) -> Result<(), String> {
        if block.redacted.is_some() || !block.extra.is_empty() {
            return Err(
                "a thinking block with `redacted` or fields the decoder never writes".into(),
            );
        }
        let item = match &block.thinking_signature {
            Some(signature) => Some(reasoning_item_of(signature)?),
            None if last => None,
            None => return Err(unfinished("thinking block without a thinkingSignature")),
        };
        let id = item.as_ref().map_or_else(
            || format!("rs_{index}").into(),
            |item| item.get("id").cloned().unwrap_or(Value::Null),
        );
        let place = Place { id, index };
        self.added(
            index,
            json!({"id": place.id, "type": "reasoning", "summary": []}),
        );
        let Some(item) = item else {
            self.summary_part(&place, 0, &block.thinking, false);
            return Ok(());
        };
        self.reasoning_text(&place, &item, &block.thinking)?;
        self.done(index, item);
        Ok(())
    }

    /// Streams a finished reasoning item's text. The decoder settles on the item's summary parts
    /// joined by blank lines when that is not empty, else likewise its reasoning content, else
    /// on what streamed: the thinking must be that text.
    fn reasoning_text(
        &mut self,
        place: &Place,
        item: &Value,
        thinking: &str,
    ) -> Result<(), String> {
        let summary = texts(item, "summary");
        if !summary.join("\n\n").is_empty() {
            same_text(&summary, thinking, "summary")?;
            for (part, text) in summary.iter().enumerate() {
                self.summary_part(place, part, text, true);
            }
            return Ok(());
        }
        let content = texts(item, "content");
        if !content.join("\n\n").is_empty() {
            same_text(&content, thinking, "content")?;
            for (part, text) in content.iter().enumerate() {
                self.reasoning_text_part(place, part, text);
            }
            return Ok(());
        }
        if !thinking.is_empty() {
            self.reasoning_text_part(place, 0, thinking);
        }
        Ok(())
    }

    /// One summary part; an unfinished one stops after its text.
    fn summary_part(&mut self, place: &Place, part: usize, text: &str, finished: bool) {
        let summary_index = ("summary_index", Value::from(part));
        let empty = ("part", json!({"type": "summary_text", "text": ""}));
        self.item_event(
            "response.reasoning_summary_part.added",
            place,
            [summary_index.clone(), empty],
        );
        if !text.is_empty() {
            let delta = ("delta", text.into());
            self.item_event(
                "response.reasoning_summary_text.delta",
                place,
                [summary_index.clone(), delta],
            );
        }
        if finished {
            let done = ("text", text.into());
            self.item_event(
                "response.reasoning_summary_text.done",
                place,
                [summary_index.clone(), done],
            );
            let full = ("part", json!({"type": "summary_text", "text": text}));
            self.item_event(
                "response.reasoning_summary_part.done",
                place,
                [summary_index, full],
            );
        }
    }

    /// One part of raw reasoning content (open-weight models stream their reasoning so).
    fn reasoning_text_part(&mut self, place: &Place, part: usize, text: &str) {
        let content_index = ("content_index", Value::from(part));
        if !text.is_empty() {
            let delta = ("delta", text.into());
            self.item_event(
                "response.reasoning_text.delta",
                place,
                [content_index.clone(), delta],
            );
        }
        let done = ("text", text.into());
        self.item_event("response.reasoning_text.done", place, [content_index, done]);
    }

    /// A `function_call` item: the decoder composes the tool-call id as `call_id|item_id` and
    /// parses the argument text.
    fn tool_call_block(&mut self, index: usize, call: &ToolCall) -> Result<(), String> {
        if call.thought_signature.is_some() {
            return Err(
                "a tool call with a thoughtSignature (the decoder never writes one)".into(),
            );
        }
        let Some((call_id, item_id)) = call.id.split_once('|') else {
            return Err(format!(
                "tool-call id {:?} is not the decoder's `call_id|item_id`",
                call.id
            ));
        };
        let arguments = argument_text(call)?;
        let item = |status: &str, arguments: &str| {
            json!({"id": item_id, "type": "function_call", "status": status,
                   "arguments": arguments, "call_id": call_id, "name": call.name})
        };
        let place = Place {
            id: item_id.into(),
            index,
        };
        self.added(index, item("in_progress", ""));
        if !arguments.is_empty() {
            let delta = ("delta", Value::from(arguments.as_str()));
            self.item_event("response.function_call_arguments.delta", &place, [delta]);
        }
        let done = ("arguments", Value::from(arguments.as_str()));
        self.item_event("response.function_call_arguments.done", &place, [done]);
        self.done(index, item("completed", &arguments));
        Ok(())
    }

    /// How the response ends: `response.completed` (or `response.incomplete`) with the status
    /// the stop reason maps from, or the failure the error text is the decoder's wording of.
    /// Returns the raw stop reason the decoder is left with.
    fn end(&mut self, message: &AssistantMessage) -> Result<Option<String>, String> {
        let calls = message.tool_calls().next().is_some();
        let usage = &message.usage;
        match (message.stop_reason, message.error_message.as_deref()) {
            (StopReason::Error, Some(text)) => self.fail(usage, text),
            (StopReason::Error, None) => {
                Err("an error without an errorMessage (the decoder always words one)".into())
            }
            (StopReason::Aborted, _) => Err(
                "an aborted message (a stream that stops early decodes as ended or failed)".into(),
            ),
            (_, Some(_)) => Err("an errorMessage on a message that did not fail".into()),
            (StopReason::Stop, None) if calls => Err(
                "stop reason stop with tool calls (the response's end makes it toolUse, and a \
                 stream without one fails)"
                    .into(),
            ),
            (StopReason::ToolUse, None) if !calls => Err(
                "stop reason toolUse without a tool call (the decoder infers it from one)".into(),
            ),
            (StopReason::Length, None) => self.completed("incomplete", Some(LENGTH), usage),
            (_, None) => self.completed("completed", None, usage),
        }
    }

    /// `response.completed`, or `response.incomplete` when there is an incomplete reason: the
    /// decoder reads the usage, prices it by the service tier, and maps the status
    /// (`completed` becomes `toolUse` when the message calls tools).
    fn completed(
        &mut self,
        status: &str,
        reason: Option<&str>,
        usage: &Usage,
    ) -> Result<Option<String>, String> {
        if usage.cost.total_from_provider != Some(false) {
            return Err(
                "a usage without totalFromProvider false (the decoder prices every response \
                 that ends)"
                    .into(),
            );
        }
        let numbers = usage_numbers(usage)?;
        let tier = service_tier(self.model, &numbers, usage)?;
        let details = reason.map_or(Value::Null, |reason| json!({ "reason": reason }));
        let response = self.response(
            status,
            [
                ("incomplete_details", details),
                ("output", Value::Array(self.output.clone())),
                ("usage", numbers),
                ("service_tier", tier.into()),
            ],
        );
        let kind = match status {
            "incomplete" => "response.incomplete",
            _ => "response.completed",
        };
        self.event(kind, [("response", response)]);
        Ok(Some(match reason {
            Some(reason) => format!("{status}.{reason}"),
            None => status.to_owned(),
        }))
    }

    /// A failed message. Only a response that ends reports usage, so a failure with usage
    /// completes first, with status `failed` (which alone the decoder words as
    /// [`UNKNOWN_FAILURE`]); any other text then comes from its failure event. An incomplete
    /// response cut for another reason than the output limit is its own failure, and a stream
    /// that just ends is [`NO_TERMINAL_EVENT`].
    fn fail(&mut self, usage: &Usage, text: &str) -> Result<Option<String>, String> {
        if let Some(reason) = text.strip_prefix("Response incomplete: ") {
            if !reason.is_empty() && reason != LENGTH {
                return self.completed("incomplete", Some(reason), usage);
            }
        }
        if text == INCOMPLETE_WITHOUT_REASON {
            return self.completed("incomplete", None, usage);
        }
        if text == NO_TERMINAL_EVENT && *usage == Usage::default() {
            return Ok(None);
        }
        let mut raw = None;
        if text == UNKNOWN_FAILURE || *usage != Usage::default() {
            raw = self.completed("failed", None, usage)?;
        }
        if text == UNKNOWN_FAILURE {
            return Ok(raw);
        }
        Ok(self.failure(text)?.or(raw))
    }

    /// The failure event the decoder words as `text`, in the API's own forms: `response.failed`
    /// (`{code}: {message}`, `incomplete: {reason}`, or no details) where the text has their
    /// shape, else an `error` event, whose message the decoder takes as it is. Returns the raw
    /// stop reason it sets (`response.failed` its status).
    fn failure(&mut self, text: &str) -> Result<Option<String>, String> {
        let incomplete = text
            .strip_prefix("incomplete: ")
            .filter(|reason| !reason.is_empty());
        if text == NO_DETAILS {
            self.failed(Value::Null, Value::Null);
        } else if let Some(reason) = incomplete {
            self.failed(Value::Null, json!({ "reason": reason }));
        } else if let Some((code, message)) = code_and_message(text) {
            self.failed(json!({"code": code, "message": message}), Value::Null);
        } else if !text.is_empty() {
            let fields = [
                ("code", Value::Null),
                ("message", text.into()),
                ("param", Value::Null),
            ];
            self.event("error", fields);
            return Ok(None);
        } else {
            return Err("an empty errorMessage (every failure the decoder reads has words)".into());
        }
        Ok(Some("failed".into()))
    }

    fn failed(&mut self, error: Value, incomplete_details: Value) {
        let response = self.response(
            "failed",
            [("error", error), ("incomplete_details", incomplete_details)],
        );
        self.event("response.failed", [("response", response)]);
    }
}

/// A finished text block's signature read back as its item's id and phase; only the exact
/// text the decoder writes for them is one.
fn text_item_identity(signature: &str) -> Result<(Value, Option<String>), String> {
    let refused =
        || format!("textSignature {signature:?} is not the decoder's {{\"v\":1,\"id\":…}}");
    let payload: Value = serde_json::from_str(signature).map_err(|_| refused())?;
    let id = payload.get("id").cloned().unwrap_or(Value::Null);
    let phase = payload
        .get("phase")
        .and_then(Value::as_str)
        .filter(|phase| !phase.is_empty())
        .map(str::to_owned);
    if text_signature(&id, phase.as_deref()) != signature {
        return Err(refused());
    }
    Ok((id, phase))
}

/// The decoder's signature of a text block: the item id and phase, as version-1 JSON.
fn text_signature(id: &Value, phase: Option<&str>) -> String {
    let mut payload = Map::new();
    payload.insert("v".into(), Value::from(1));
    payload.insert("id".into(), id.clone());
    if let Some(phase) = phase {
        payload.insert("phase".into(), phase.into());
    }
    pi_core::json::to_string(&Value::Object(payload)).unwrap_or_default()
}

/// A finished thinking block's signature read back as the reasoning item it is the JSON of (the
/// decoder writes the item as it came, so only JSON in the decoder's own writing is one).
fn reasoning_item_of(signature: &str) -> Result<Value, String> {
    let refused = || format!("thinkingSignature {signature:?} is not the JSON of a reasoning item");
    let item: Value = serde_json::from_str(signature).map_err(|_| refused())?;
    let written = pi_core::json::to_string(&item).map_err(|_| refused())?;
    let reasoning = item.get("type").and_then(Value::as_str) == Some("reasoning");
    if written != signature || !reasoning {
        return Err(refused());
    }
    Ok(item)
}

/// The thinking of a block whose reasoning item has text must be the decoder's join of it.
fn same_text(parts: &[&str], thinking: &str, key: &str) -> Result<(), String> {
    if parts.join("\n\n") == thinking {
        Ok(())
    } else {
        Err(format!(
            "thinking other than its signature's {key} (the decoder takes the text from there)"
        ))
    }
}

/// The texts of an item's `summary` or `content` parts, as the decoder reads them (a part
/// without a text string counts as empty).
fn texts<'a>(item: &'a Value, key: &str) -> Vec<&'a str> {
    item.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|part| part.get("text").and_then(Value::as_str).unwrap_or(""))
        .collect()
}

/// A message item's `output_text` content part.
fn output_text_part(text: &str) -> Value {
    json!({"type": "output_text", "annotations": [], "text": text})
}

/// A `message` item (`phase`, which newer models add, last).
fn message_item(id: &Value, status: &str, content: Value, phase: Option<String>) -> Value {
    let mut item = Map::new();
    item.insert("id".into(), id.clone());
    item.insert("type".into(), "message".into());
    item.insert("status".into(), status.into());
    item.insert("content".into(), content);
    item.insert("role".into(), "assistant".into());
    if let Some(phase) = phase {
        item.insert("phase".into(), phase.into());
    }
    Value::Object(item)
}

/// The argument text to stream for `call`, written from its arguments: the decoder parses it,
/// and the parse must give the arguments back. Pi 1.5.2 keeps no `partialJson`.
fn argument_text(call: &ToolCall) -> Result<String, String> {
    if !call.extra.is_empty() {
        return Err(
            "a tool call with fields the decoder never writes (such as partialJson)".into(),
        );
    }
    let text = pi_core::json::to_string(&call.arguments).map_err(|e| e.to_string())?;
    if parse_streaming_json(&text) != call.arguments {
        return Err(format!(
            "arguments that do not read back from their text {text:?} (the decoder parses \
             them; a number such as 1.0 comes back as 1)"
        ));
    }
    Ok(text)
}

/// `text` split as `response.failed`'s `{code}: {message}`, both non-empty (the decoder puts
/// `unknown` or `no message` in place of an empty one).
fn code_and_message(text: &str) -> Option<(&str, &str)> {
    text.match_indices(": ")
        .map(|(at, separator)| (&text[..at], &text[at + separator.len()..]))
        .find(|(code, message)| !code.is_empty() && !message.is_empty())
}

/// The API's `usage` for `usage`, or none when the usage is what the decoder makes of a
/// response without one (no `reasoning` count). The decoder reads `input` as `input_tokens`
/// less the cached and written tokens, and every count through a double.
fn usage_numbers(usage: &Usage) -> Result<Value, String> {
    if !usage.extra.is_empty() || !usage.cost.extra.is_empty() {
        return Err("usage fields the decoder never writes".into());
    }
    if usage.cache_write_1h.is_some() {
        return Err("cacheWrite1h (the Responses API reports no hour-long writes)".into());
    }
    let Some(reasoning) = usage.reasoning else {
        return Ok(Value::Null);
    };
    let Some(input) = usage
        .input
        .checked_add(usage.cache_read)
        .and_then(|n| n.checked_add(usage.cache_write))
    else {
        return Err("input, cached and written tokens adding up past 2^64".into());
    };
    let counts = [
        input,
        usage.cache_read,
        usage.cache_write,
        usage.output,
        reasoning,
        usage.total_tokens,
    ];
    if let Some(count) = counts.iter().find(|n| **n as f64 as u64 != **n) {
        return Err(format!(
            "a token count ({count}) the decoder reads through a double as another"
        ));
    }
    let mut details = json!({"cached_tokens": usage.cache_read});
    if usage.cache_write != 0 {
        details["cache_write_tokens"] = usage.cache_write.into();
    }
    Ok(json!({
        "input_tokens": input,
        "input_tokens_details": details,
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.total_tokens,
    }))
}

/// The service tier under which the decoder prices `numbers` at exactly `usage`'s cost. The
/// decoder itself is asked, so its price rules (the model's prices, the tiers' multipliers)
/// live in one place.
fn service_tier(model: &Model, numbers: &Value, usage: &Usage) -> Result<&'static str, String> {
    SERVICE_TIERS
        .into_iter()
        .find(|tier| decoded_usage(model, numbers, tier).as_ref() == Some(usage))
        .ok_or_else(|| {
            "a cost the model's prices give under no service tier for these tokens".into()
        })
}

/// The usage the decoder makes of a `response.completed` with `numbers` and `tier`.
fn decoded_usage(model: &Model, numbers: &Value, tier: &str) -> Option<Usage> {
    let event = json!({
        "type": "response.completed",
        "response": {"usage": numbers, "service_tier": tier},
    });
    let mut decoder = Decoder::new(model, 0);
    decoder.start();
    let mut events = decoder.feed(&sse::data(&event));
    events.extend(decoder.finish(StreamEnd::Complete));
    events.into_iter().find_map(|event| match event {
        StreamEvent::Done { message, .. } => Some(message.usage),
        _ => None,
    })
}

/// Why a block before the last cannot be unfinished.
fn unfinished(what: &str) -> String {
    format!("a {what} before the last block (only the last can be cut off unfinished)")
}
