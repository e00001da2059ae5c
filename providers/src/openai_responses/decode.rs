//! The Responses stream, decoded as Pi 1.5.2's pi-ai decodes it (`processResponsesStream`):
//! output items open blocks (reasoning -> thinking, message -> text, function_call -> tool call)
//! in slots keyed by their `output_index`, deltas extend the slot's block whatever part they
//! name, `output_item.done` settles its final text and signature, and `response.completed` or
//! `response.incomplete` brings usage and the status. A stream without such a terminal event,
//! or one that calls for tools it never finished, is an error.

use pi_core::agent::{Patch, StreamEvent};
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_core::partial_json::{parse_streaming_json, parse_tool_call_arguments};
use std::collections::BTreeMap;

use pi_core::agent::ToolDefinition;
use serde_json::{Map, Value};

use super::grammar::{self, InputBuffer};
use crate::cost::calculate_cost;
use crate::js_value::truthy;
use crate::openai_completions::api_error_message;
use crate::sse::SseParser;
use crate::{failure, response_head, StreamEnd};

/// The error of a stream that ended without `response.completed`, `incomplete` or `failed`.
pub const NO_TERMINAL_EVENT: &str =
    "OpenAI Responses stream ended before a terminal response event";
/// The error of an incomplete response whose reason is not the output limit, when it has none.
pub const INCOMPLETE_WITHOUT_REASON: &str = "Response incomplete without a provider reason";

/// What a slot's block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
    ToolCall,
}

/// An output item being streamed: its `output_index` (as JSON, `undefined` when absent, as
/// pi-ai's map keys it), the block it fills and, for a tool call, its argument text.
#[derive(Debug)]
struct Slot {
    key: String,
    kind: Kind,
    index: usize,
    json: String,
    /// Whether `json` changed since the block's arguments were last set (arguments are parsed
    /// when the call ends or the message is read, not on every fragment, which is quadratic).
    json_grew: bool,
    /// A custom (grammar) tool call's input, instead of `json`.
    custom: Option<InputBuffer>,
}

/// Decodes one streamed response.
#[derive(Debug)]
pub struct Decoder {
    model: Model,
    head: AssistantMessage,
    sse: SseParser,
    started: bool,
    finished: bool,
    /// `[DONE]` seen: later events are ignored.
    closed: bool,
    /// A `response.completed`, `incomplete` or `failed` event was seen.
    terminal: bool,
    blocks: Vec<ContentBlock>,
    slots: Vec<Slot>,
    /// Content indexes of tool calls whose item has not ended, in the order they opened.
    unfinished: Vec<usize>,
    /// The input property of each grammar tool of the request, by tool name.
    grammar_inputs: BTreeMap<String, String>,
}

impl Decoder {
    /// The provider answering (pi-ai names it in the text of an error response).
    pub fn provider(&self) -> &str {
        &self.model.provider
    }

    /// A decoder for a response of `model` to a request made at `timestamp`.
    pub fn new(model: &Model, timestamp: u64) -> Self {
        Decoder {
            model: model.clone(),
            head: response_head(model, timestamp),
            sse: SseParser::default(),
            started: false,
            finished: false,
            closed: false,
            terminal: false,
            blocks: Vec::new(),
            slots: Vec::new(),
            unfinished: Vec::new(),
            grammar_inputs: BTreeMap::new(),
        }
    }

    /// Reads custom tool calls of the request's grammar `tools` into their input property (as
    /// pi-ai's `grammarToolInputProperties`; other custom calls into `input`).
    pub fn with_tools(mut self, tools: &[ToolDefinition]) -> Self {
        self.grammar_inputs = grammar::input_properties(&self.model, tools);
        self
    }

    /// The same decoder for a request that asked for `effort` mid-conversation, which every
    /// message it makes records (`providerThinkingLevel`, after `model`, where Pi 1.5.2's
    /// Responses provider writes it).
    pub fn with_requested_effort(mut self, effort: Option<String>) -> Self {
        let Some(effort) = effort else {
            return self;
        };
        // The key order goes with the message: write it out, place the key, read it back.
        if let Ok(Value::Object(fields)) = serde_json::to_value(&self.head) {
            let mut placed = Map::new();
            for (key, value) in fields {
                let after = key == "model";
                placed.insert(key, value);
                if after {
                    placed.insert(
                        "providerThinkingLevel".into(),
                        Value::String(effort.clone()),
                    );
                }
            }
            if let Ok(head) = serde_json::from_value(Value::Object(placed)) {
                self.head = head;
                return self;
            }
        }
        self.head.provider_thinking_level = Some(effort);
        self
    }

    /// The HTTP response arrived with a success status.
    pub fn start(&mut self) -> Vec<StreamEvent> {
        self.started = true;
        vec![StreamEvent::Start {
            partial: self.head.clone(),
        }]
    }

    /// Bytes of the response body.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.closed || !self.started {
            return out;
        }
        for sse in self.sse.feed(bytes) {
            if self.closed {
                break;
            }
            if sse.data.starts_with("[DONE]") {
                self.closed = true;
                break;
            }
            match serde_json::from_str::<Value>(&sse.data) {
                // The SDK throws an `error` event's error (or the event itself) and any event
                // carrying an `error` before the decoder sees it.
                Ok(event) if sse.event.as_deref() == Some("error") => {
                    let error = event
                        .get("error")
                        .filter(|e| !e.is_null())
                        .unwrap_or(&event);
                    let message = api_error_message(None, Some(error), None);
                    out.extend(self.fail(StopReason::Error, message));
                }
                Ok(event) if event.get("error").is_some_and(truthy) => {
                    let message = api_error_message(None, event.get("error"), None);
                    out.extend(self.fail(StopReason::Error, message));
                }
                Ok(event) => self.event(&event, &mut out),
                Err(error) => {
                    out.extend(self.fail(
                        StopReason::Error,
                        format!("Could not parse the stream: {error}"),
                    ));
                }
            }
        }
        out
    }

    /// The end of the response: the body ended, the call was aborted, or the connection failed.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        let _ = self.sse.finish();
        match end {
            StreamEnd::Failed(message) => self.fail(StopReason::Error, message),
            StreamEnd::Aborted => self.fail(StopReason::Aborted, "Request was aborted".into()),
            StreamEnd::Complete if !self.terminal => {
                self.fail(StopReason::Error, NO_TERMINAL_EVENT.into())
            }
            StreamEnd::Complete => {
                let unfinished = self
                    .unfinished
                    .first()
                    .and_then(|&i| match &self.blocks[i] {
                        ContentBlock::ToolCall(call) => Some(format!(
                        "OpenAI Responses stream completed with an unfinished tool call: {} ({})",
                        call.name, call.id
                    )),
                        _ => None,
                    });
                match (self.head.stop_reason, unfinished) {
                    (StopReason::ToolUse, Some(message)) => self.fail(StopReason::Error, message),
                    (StopReason::Error | StopReason::Aborted, _) => {
                        let message = self
                            .head
                            .error_message
                            .clone()
                            .unwrap_or_else(|| "An unknown error occurred".into());
                        self.fail(StopReason::Error, message)
                    }
                    (reason, _) => {
                        self.closed = true;
                        self.finished = true;
                        vec![StreamEvent::Done {
                            reason,
                            message: self.message(),
                        }]
                    }
                }
            }
        }
    }

    fn fail(&mut self, reason: StopReason, message: String) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        self.closed = true;
        self.finished = true;
        vec![failure(self.message(), reason, message)]
    }

    fn message(&self) -> AssistantMessage {
        let mut message = self.head.clone();
        message.content = self.blocks.clone();
        for slot in self.slots.iter().filter(|s| s.json_grew) {
            if let Some(ContentBlock::ToolCall(call)) = message.content.get_mut(slot.index) {
                call.arguments = parse_streaming_json(&slot.json);
            }
        }
        message
    }

    fn slot_position(&self, key: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.key == key)
    }

    /// The slot at `key` if it holds a function call (its arguments streaming as JSON).
    fn json_slot(&mut self, key: &str) -> Option<&mut Slot> {
        self.slot(key, Kind::ToolCall)
            .filter(|s| s.custom.is_none())
    }

    /// Feeds the custom tool call at `key` through `step`: the block takes the input so far and
    /// the JSON text made goes out as a delta; a refused step fails the response. False when
    /// there is no such call or the step failed.
    fn custom_input(
        &mut self,
        key: &str,
        out: &mut Vec<StreamEvent>,
        step: impl FnOnce(&mut InputBuffer) -> Result<Option<String>, String>,
    ) -> bool {
        let Some(slot) = self.slot(key, Kind::ToolCall) else {
            return false;
        };
        let index = slot.index;
        let Some(buffer) = slot.custom.as_mut() else {
            return false;
        };
        match step(buffer) {
            Ok(delta) => {
                let mut arguments = serde_json::Map::new();
                arguments.insert(buffer.property.clone(), Value::String(buffer.input.clone()));
                if let Some(ContentBlock::ToolCall(call)) = self.blocks.get_mut(index) {
                    call.arguments = Value::Object(arguments);
                }
                if let Some(delta) = delta {
                    out.push(StreamEvent::ToolCallDelta {
                        content_index: index,
                        delta,
                    });
                }
                true
            }
            Err(message) => {
                out.extend(self.fail(StopReason::Error, message));
                false
            }
        }
    }

    /// The slot at `key` if it holds a block of `kind`.
    fn slot(&mut self, key: &str, kind: Kind) -> Option<&mut Slot> {
        self.slots
            .iter_mut()
            .find(|s| s.key == key && s.kind == kind)
    }

    fn event(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| {
            event
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let key = output_key(event);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "response.created" => {
                if let Some(id) = event.pointer("/response/id").and_then(Value::as_str) {
                    self.head.response_id = Some(id.to_owned());
                    out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.get("item") {
                    self.create_slot(key, item, out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.thinking_delta(&key, text("delta"), out)
            }
            "response.reasoning_summary_part.done" => self.thinking_delta(&key, "\n\n".into(), out),
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(&key, text("delta"), out)
            }
            "response.function_call_arguments.delta" => {
                let fragment = text("delta");
                if let Some(slot) = self.json_slot(&key) {
                    slot.json.push_str(&fragment);
                    slot.json_grew = true;
                    out.push(StreamEvent::ToolCallDelta {
                        content_index: slot.index,
                        delta: fragment,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                let arguments = text("arguments");
                if let Some(slot) = self.json_slot(&key) {
                    if let Some(rest) = arguments.strip_prefix(slot.json.as_str()) {
                        if !rest.is_empty() {
                            out.push(StreamEvent::ToolCallDelta {
                                content_index: slot.index,
                                delta: rest.to_owned(),
                            });
                        }
                    }
                    slot.json = arguments;
                    slot.json_grew = true;
                }
            }
            "response.custom_tool_call_input.delta" => {
                let delta = text("delta");
                self.custom_input(&key, out, |buffer| buffer.append(&delta));
            }
            "response.custom_tool_call_input.done" => {
                let input = event.get("input").and_then(Value::as_str);
                self.custom_input(&key, out, |buffer| buffer.close(input));
            }
            "response.output_item.done" => {
                if let Some(item) = event.get("item") {
                    self.item_done(key, item, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finalize(event.get("response"), out)
            }
            "error" => {
                let message = format!(
                    "Error Code {}: {}",
                    js_text(event.get("code")),
                    js_text(event.get("message"))
                );
                out.extend(self.fail(StopReason::Error, message));
            }
            "response.failed" => self.failed(event.get("response"), out),
            _ => {}
        }
    }

    fn failed(&mut self, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        self.terminal = true;
        self.head.raw_stop_reason = response
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let error = response.and_then(|r| r.get("error")).filter(|e| truthy(e));
        let reason = response
            .and_then(|r| r.pointer("/incomplete_details/reason"))
            .filter(|r| truthy(r));
        let message = match (error, reason) {
            (Some(error), _) => {
                let field = |key: &str, fallback: &str| match error.get(key).filter(|v| truthy(v)) {
                    Some(value) => js_text(Some(value)),
                    None => fallback.to_owned(),
                };
                format!(
                    "{}: {}",
                    field("code", "unknown"),
                    field("message", "no message")
                )
            }
            (None, Some(reason)) => format!("incomplete: {}", js_text(Some(reason))),
            (None, None) => "Unknown error (no error details in response)".to_owned(),
        };
        out.extend(self.fail(StopReason::Error, message));
    }

    /// Opens a block for a new output item in the slot at `key` (replacing whatever the slot
    /// held); an item of another type opens nothing.
    fn create_slot(&mut self, key: String, item: &Value, out: &mut Vec<StreamEvent>) -> bool {
        let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
        let index = self.blocks.len();
        let mut json = String::new();
        let mut custom = None;
        let kind = match field("type") {
            "reasoning" => {
                let block = ThinkingContent::default();
                self.blocks.push(ContentBlock::Thinking(block.clone()));
                out.push(StreamEvent::ThinkingStart {
                    content_index: index,
                    block,
                });
                Kind::Thinking
            }
            "message" => {
                let block = TextContent::default();
                self.blocks.push(ContentBlock::Text(block.clone()));
                out.push(StreamEvent::TextStart {
                    content_index: index,
                    block,
                });
                Kind::Text
            }
            "function_call" => {
                json = field("arguments").to_owned();
                let mut call = ToolCall {
                    id: format!(
                        "{}|{}",
                        js_text(item.get("call_id")),
                        js_text(item.get("id"))
                    ),
                    name: field("name").to_owned(),
                    arguments: parse_streaming_json(&json),
                    ..ToolCall::default()
                };
                if let Some(namespace) = item.get("namespace") {
                    call.extra.insert("namespace".into(), namespace.clone());
                }
                self.blocks.push(ContentBlock::ToolCall(call.clone()));
                self.unfinished.push(index);
                out.push(StreamEvent::ToolCallStart {
                    content_index: index,
                    block: call,
                });
                Kind::ToolCall
            }
            "custom_tool_call" => {
                let property = self
                    .grammar_inputs
                    .get(field("name"))
                    .cloned()
                    .unwrap_or_else(|| "input".to_owned());
                let initial = field("input");
                let mut arguments = serde_json::Map::new();
                arguments.insert(property.clone(), Value::String(initial.to_owned()));
                let mut call = ToolCall {
                    id: format!(
                        "{}|{}",
                        js_text(item.get("call_id")),
                        js_text(item.get("id"))
                    ),
                    name: field("name").to_owned(),
                    arguments: Value::Object(arguments),
                    ..ToolCall::default()
                };
                if let Some(namespace) = item.get("namespace") {
                    call.extra.insert("namespace".into(), namespace.clone());
                }
                custom = Some(InputBuffer::new(property, initial));
                self.blocks.push(ContentBlock::ToolCall(call.clone()));
                self.unfinished.push(index);
                out.push(StreamEvent::ToolCallStart {
                    content_index: index,
                    block: call,
                });
                Kind::ToolCall
            }
            _ => return false,
        };
        let slot = Slot {
            key,
            kind,
            index,
            json,
            json_grew: false,
            custom,
        };
        match self.slot_position(&slot.key) {
            Some(at) => self.slots[at] = slot,
            None => self.slots.push(slot),
        }
        true
    }

    fn thinking_delta(&mut self, key: &str, delta: String, out: &mut Vec<StreamEvent>) {
        let Some(index) = self.slot(key, Kind::Thinking).map(|s| s.index) else {
            return;
        };
        if let Some(ContentBlock::Thinking(t)) = self.blocks.get_mut(index) {
            t.thinking.push_str(&delta);
            out.push(StreamEvent::ThinkingDelta {
                content_index: index,
                delta,
            });
        }
    }

    fn text_delta(&mut self, key: &str, delta: String, out: &mut Vec<StreamEvent>) {
        let Some(index) = self.slot(key, Kind::Text).map(|s| s.index) else {
            return;
        };
        if let Some(ContentBlock::Text(t)) = self.blocks.get_mut(index) {
            t.text.push_str(&delta);
            out.push(StreamEvent::TextDelta {
                content_index: index,
                delta,
            });
        }
    }

    /// Settles the item's block, opening one first when the item was never announced.
    fn item_done(&mut self, key: String, item: &Value, out: &mut Vec<StreamEvent>) {
        if self.slot_position(&key).is_none() && !self.create_slot(key.clone(), item, out) {
            return;
        }
        let Some(at) = self.slot_position(&key) else {
            return;
        };
        let (kind, index) = (self.slots[at].kind, self.slots[at].index);
        let joined = |list: &str, field: &str| {
            let parts: Vec<&str> = item
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| p.get(field).and_then(Value::as_str).unwrap_or(""))
                .collect();
            parts.join("\n\n")
        };
        match (item.get("type").and_then(Value::as_str), kind) {
            (Some("reasoning"), Kind::Thinking) => {
                let Some(ContentBlock::Thinking(t)) = self.blocks.get_mut(index) else {
                    return;
                };
                let summary = joined("summary", "text");
                let content = joined("content", "text");
                if !summary.is_empty() {
                    t.thinking = summary;
                } else if !content.is_empty() {
                    t.thinking = content;
                }
                let signature = pi_core::json::to_string(item).unwrap_or_default();
                t.thinking_signature = Some(signature.clone());
                let content = t.thinking.clone();
                out.push(StreamEvent::Patch(Patch::ThinkingSignatureDelta {
                    content_index: index,
                    delta: signature,
                }));
                out.push(StreamEvent::ThinkingEnd {
                    content_index: index,
                    content,
                });
            }
            (Some("message"), Kind::Text) => {
                let Some(ContentBlock::Text(t)) = self.blocks.get_mut(index) else {
                    return;
                };
                let parts: Vec<&str> = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        let key = if p.get("type").and_then(Value::as_str) == Some("output_text") {
                            "text"
                        } else {
                            "refusal"
                        };
                        p.get(key).and_then(Value::as_str).unwrap_or("")
                    })
                    .collect();
                t.text = parts.concat();
                let signature = text_signature(item);
                t.text_signature = Some(signature.clone());
                let content = t.text.clone();
                out.push(StreamEvent::Patch(Patch::TextSignature {
                    content_index: index,
                    signature,
                }));
                out.push(StreamEvent::TextEnd {
                    content_index: index,
                    content,
                });
            }
            (Some("custom_tool_call"), Kind::ToolCall) if self.slots[at].custom.is_some() => {
                let input = item.get("input").and_then(Value::as_str);
                if !self.custom_input(&key, out, |buffer| buffer.close(input)) {
                    return;
                }
                let Some(ContentBlock::ToolCall(call)) = self.blocks.get_mut(index) else {
                    return;
                };
                if let Some(namespace) = item.get("namespace") {
                    call.extra.insert("namespace".into(), namespace.clone());
                }
                let tool_call = call.clone();
                self.unfinished.retain(|&i| i != index);
                out.push(StreamEvent::ToolCallEnd {
                    content_index: index,
                    tool_call,
                });
            }
            (Some("function_call"), Kind::ToolCall) if self.slots[at].custom.is_none() => {
                // The item's own arguments, when it has them, replace what streamed.
                let streamed = std::mem::take(&mut self.slots[at].json);
                let raw = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|a| !a.is_empty())
                    .unwrap_or(streamed.as_str());
                let (arguments, error) = parse_tool_call_arguments(raw);
                let Some(ContentBlock::ToolCall(call)) = self.blocks.get_mut(index) else {
                    return;
                };
                call.arguments = arguments;
                if let Some(error) = error {
                    call.set_arguments_error(error);
                }
                if let Some(namespace) = item.get("namespace") {
                    call.extra.insert("namespace".into(), namespace.clone());
                }
                let tool_call = call.clone();
                self.unfinished.retain(|&i| i != index);
                out.push(StreamEvent::ToolCallEnd {
                    content_index: index,
                    tool_call,
                });
            }
            _ => return,
        }
        self.slots.remove(at);
    }

    /// `response.completed` or `response.incomplete`: usage, cost and the stop reason.
    fn finalize(&mut self, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        self.terminal = true;
        let response = response.filter(|r| r.is_object());
        self.backfill_reasoning_signatures(response, out);
        if let Some(id) = response
            .and_then(|r| r.get("id"))
            .and_then(Value::as_str)
            .filter(|i| !i.is_empty())
        {
            self.head.response_id = Some(id.to_owned());
            out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
        }
        let mut usage = self.head.usage.clone();
        if let Some(raw) = response.and_then(|r| r.get("usage")).filter(|u| truthy(u)) {
            let number = |pointer: &str| {
                raw.pointer(pointer)
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    .max(0.0) as u64
            };
            let cached = number("/input_tokens_details/cached_tokens");
            let written = number("/input_tokens_details/cache_write_tokens");
            usage = Usage {
                input: number("/input_tokens")
                    .saturating_sub(cached)
                    .saturating_sub(written),
                output: number("/output_tokens"),
                cache_read: cached,
                cache_write: written,
                reasoning: Some(number("/output_tokens_details/reasoning_tokens")),
                total_tokens: number("/total_tokens"),
                ..Usage::default()
            };
        }
        usage.cost = calculate_cost(&self.model, &usage);
        let tier = response.and_then(|r| r.get("service_tier"));
        let multiplier = match tier.and_then(Value::as_str) {
            Some("flex") => 0.5,
            Some("priority") if self.model.id == "gpt-5.5" => 2.5,
            Some("priority") => 2.0,
            _ => 1.0,
        };
        if multiplier != 1.0 {
            let cost = &mut usage.cost;
            cost.input *= multiplier;
            cost.output *= multiplier;
            cost.cache_read *= multiplier;
            cost.cache_write *= multiplier;
            cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
        }
        usage.cost.total_from_provider = Some(false);
        self.head.usage = usage.clone();
        out.push(StreamEvent::Patch(Patch::Usage(usage)));
        let status = response.and_then(|r| r.get("status")).filter(|s| truthy(s));
        let reason = response
            .and_then(|r| r.pointer("/incomplete_details/reason"))
            .and_then(Value::as_str);
        self.head.raw_stop_reason = status.map(|s| match reason {
            Some(reason) => format!("{}.{reason}", js_text(Some(s))),
            None => js_text(Some(s)),
        });
        match map_stop_reason(status, reason) {
            Ok((reason, error)) => {
                let has_call = self
                    .blocks
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolCall(_)));
                let reason = match reason {
                    StopReason::Stop if has_call => StopReason::ToolUse,
                    reason => reason,
                };
                self.head.error_message = error;
                self.head.stop_reason = reason;
                out.push(StreamEvent::Patch(Patch::StopReason(reason)));
            }
            Err(message) => out.extend(self.fail(StopReason::Error, message)),
        }
    }

    /// A reasoning item streamed without its encrypted content gets it from the response's
    /// output list, as pi-ai backfills it.
    fn backfill_reasoning_signatures(
        &mut self,
        response: Option<&Value>,
        out: &mut Vec<StreamEvent>,
    ) {
        let items = response
            .and_then(|r| r.get("output"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for item in items {
            let encrypted = item.get("encrypted_content").filter(|e| truthy(e));
            let (Some("reasoning"), Some(encrypted)) =
                (item.get("type").and_then(Value::as_str), encrypted)
            else {
                continue;
            };
            for (index, block) in self.blocks.iter_mut().enumerate() {
                let ContentBlock::Thinking(t) = block else {
                    continue;
                };
                let Some(stored) = t
                    .thinking_signature
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                else {
                    continue;
                };
                if stored.get("id") != item.get("id")
                    || stored.get("encrypted_content").is_some_and(truthy)
                {
                    continue;
                }
                let mut stored = stored;
                if let Some(fields) = stored.as_object_mut() {
                    fields.insert("encrypted_content".into(), encrypted.clone());
                }
                let signature = pi_core::json::to_string(&stored).unwrap_or_default();
                t.thinking_signature = Some(signature.clone());
                out.push(StreamEvent::Patch(Patch::ThinkingSignature {
                    content_index: index,
                    signature,
                }));
            }
        }
    }
}

/// A slot's key: the event's `output_index` as JSON, `undefined` when it has none.
fn output_key(event: &Value) -> String {
    event
        .get("output_index")
        .map_or_else(|| "undefined".to_owned(), Value::to_string)
}

/// JavaScript's `${value}` for a JSON value (`undefined` when absent).
fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Number(n)) => pi_core::json::format_number(n.as_f64().unwrap_or(0.0)),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Array(_)) => String::new(),
        Some(Value::Object(_)) => "[object Object]".to_owned(),
    }
}

/// A text block's signature: the item id and phase, as version-1 JSON.
fn text_signature(item: &Value) -> String {
    let mut payload = serde_json::Map::new();
    payload.insert("v".into(), Value::from(1));
    if let Some(id) = item.get("id") {
        payload.insert("id".into(), id.clone());
    }
    if let Some(phase) = item
        .get("phase")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        payload.insert("phase".into(), Value::from(phase));
    }
    pi_core::json::to_string(&Value::Object(payload)).unwrap_or_default()
}

/// pi-ai's Responses status mapping: the stop reason and, for an incomplete response cut for
/// another reason than the output limit, its error text; an unknown status is an error.
pub fn map_stop_reason(
    status: Option<&Value>,
    incomplete_reason: Option<&str>,
) -> Result<(StopReason, Option<String>), String> {
    let Some(status) = status.filter(|s| truthy(s)) else {
        return Ok((StopReason::Stop, None));
    };
    match status.as_str() {
        Some("completed" | "in_progress" | "queued") => Ok((StopReason::Stop, None)),
        Some("incomplete") => Ok(match incomplete_reason {
            Some("max_output_tokens") => (StopReason::Length, None),
            Some(reason) => (
                StopReason::Error,
                Some(format!("Response incomplete: {reason}")),
            ),
            None => (StopReason::Error, Some(INCOMPLETE_WITHOUT_REASON.into())),
        }),
        Some("failed" | "cancelled") => Ok((StopReason::Error, None)),
        _ => Err(format!("Unhandled stop reason: {}", js_text(Some(status)))),
    }
}
