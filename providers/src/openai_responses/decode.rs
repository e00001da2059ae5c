//! The Responses stream, decoded as pi-ai decodes it (`processResponsesStream`): output items
//! open blocks (reasoning -> thinking, message -> text, function_call -> tool call), deltas
//! extend the current one, `output_item.done` settles its final text and signature, and
//! `response.completed` brings usage and the status.

use pi_core::agent::{Patch, StreamEvent};
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_core::partial_json::{parse_streaming_json, parse_tool_call_arguments};
use serde_json::Value;

use crate::cost::calculate_cost;
use crate::openai_completions::api_error_message;
use crate::sse::SseParser;
use crate::{failure, response_head, StreamEnd};

/// The output item being streamed, as far as the decoder needs to remember it.
#[derive(Debug)]
enum Item {
    /// Summary parts received so far.
    Reasoning {
        summary_parts: usize,
    },
    /// Kinds of the content parts received so far (`output_text`, `refusal`).
    Message {
        parts: Vec<String>,
    },
    FunctionCall,
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
    blocks: Vec<ContentBlock>,
    item: Option<Item>,
    /// Whether the last block is still being streamed.
    block_open: bool,
    /// Tool-call argument JSON of the open tool call.
    json: String,
    /// Whether `json` has grown since the call opened (only then are its arguments re-read).
    json_grew: bool,
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
            blocks: Vec::new(),
            item: None,
            block_open: false,
            json: String::new(),
            json_grew: false,
        }
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
                Ok(event) if event.get("error").is_some_and(|e| !e.is_null()) => {
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
            StreamEnd::Complete => match self.head.stop_reason {
                StopReason::Error | StopReason::Aborted => {
                    self.fail(StopReason::Error, "An unknown error occurred".into())
                }
                reason => {
                    self.closed = true;
                    self.finished = true;
                    self.keep_scratch_arguments();
                    vec![StreamEvent::Done {
                        reason,
                        message: self.message(),
                    }]
                }
            },
        }
    }

    /// A tool call the stream left open keeps its raw argument text as `partialJson` in the
    /// final message, as the original's does when the body ends without the call's `done`.
    fn keep_scratch_arguments(&mut self) {
        let json = self.json.clone();
        if let Some(ContentBlock::ToolCall(call)) = self.open_block() {
            call.extra.insert("partialJson".into(), Value::String(json));
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
        if let (true, Some(ContentBlock::ToolCall(call))) =
            (self.block_open, message.content.last_mut())
        {
            if self.json_grew {
                call.arguments = parse_streaming_json(&self.json);
            }
        }
        message
    }

    fn last(&self) -> usize {
        self.blocks.len().saturating_sub(1)
    }

    /// The block still being streamed (always the last one).
    fn open_block(&mut self) -> Option<&mut ContentBlock> {
        if self.block_open {
            self.blocks.last_mut()
        } else {
            None
        }
    }

    fn event(&mut self, event: &Value, out: &mut Vec<StreamEvent>) {
        let text = |key: &str| {
            event
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "response.created" => {
                if let Some(id) = event.pointer("/response/id").and_then(Value::as_str) {
                    self.head.response_id = Some(id.to_owned());
                    out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
                }
            }
            "response.output_item.added" => self.item_added(event.get("item"), out),
            "response.reasoning_summary_part.added" => {
                if let Some(Item::Reasoning { summary_parts }) = &mut self.item {
                    *summary_parts += 1;
                }
            }
            "response.reasoning_summary_text.delta" => {
                let has_part = matches!(self.item, Some(Item::Reasoning { summary_parts }) if summary_parts > 0);
                if has_part {
                    self.thinking_delta(text("delta"), out);
                }
            }
            "response.reasoning_summary_part.done" => {
                let has_part = matches!(self.item, Some(Item::Reasoning { summary_parts }) if summary_parts > 0);
                if has_part {
                    self.thinking_delta("\n\n".into(), out);
                }
            }
            "response.reasoning_text.delta" => {
                if matches!(self.item, Some(Item::Reasoning { .. })) {
                    self.thinking_delta(text("delta"), out);
                }
            }
            "response.content_part.added" => {
                if let Some(Item::Message { parts }) = &mut self.item {
                    let kind = event.pointer("/part/type").and_then(Value::as_str);
                    if let Some(kind @ ("output_text" | "refusal")) = kind {
                        parts.push(kind.to_owned());
                    }
                }
            }
            "response.output_text.delta" => self.text_delta("output_text", text("delta"), out),
            "response.refusal.delta" => self.text_delta("refusal", text("delta"), out),
            "response.function_call_arguments.delta" => {
                if !matches!(self.item, Some(Item::FunctionCall)) {
                    return;
                }
                let fragment = text("delta");
                let index = self.last();
                // Arguments are parsed when the call ends or the message is read, not on every
                // fragment (which would be quadratic).
                if let Some(ContentBlock::ToolCall(_)) = self.open_block() {
                    self.json.push_str(&fragment);
                    self.json_grew = true;
                    out.push(StreamEvent::ToolCallDelta {
                        content_index: index,
                        delta: fragment,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if !matches!(self.item, Some(Item::FunctionCall)) {
                    return;
                }
                let arguments = text("arguments");
                let index = self.last();
                let previous = std::mem::take(&mut self.json);
                if let Some(ContentBlock::ToolCall(call)) = self.open_block() {
                    call.arguments = parse_streaming_json(&arguments);
                    if let Some(rest) = arguments.strip_prefix(previous.as_str()) {
                        if !rest.is_empty() {
                            out.push(StreamEvent::ToolCallDelta {
                                content_index: index,
                                delta: rest.to_owned(),
                            });
                        }
                    }
                }
                self.json = arguments;
                self.json_grew = true;
            }
            "response.output_item.done" => self.item_done(event.get("item"), out),
            "response.completed" => self.completed(event.get("response"), out),
            "error" => {
                let message = format!(
                    "Error Code {}: {}",
                    js_text(event.get("code")),
                    js_text(event.get("message"))
                );
                out.extend(self.fail(StopReason::Error, message));
            }
            "response.failed" => {
                let response = event.get("response");
                let error = response
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null());
                let reason = response
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty());
                let message = match (error, reason) {
                    (Some(error), _) => {
                        let field = |key: &str, fallback: &str| match error
                            .get(key)
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                        {
                            Some(text) => text.to_owned(),
                            None => fallback.to_owned(),
                        };
                        format!(
                            "{}: {}",
                            field("code", "unknown"),
                            field("message", "no message")
                        )
                    }
                    (None, Some(reason)) => format!("incomplete: {reason}"),
                    (None, None) => "Unknown error (no error details in response)".to_owned(),
                };
                out.extend(self.fail(StopReason::Error, message));
            }
            _ => {}
        }
    }

    fn item_added(&mut self, item: Option<&Value>, out: &mut Vec<StreamEvent>) {
        let Some(item) = item else { return };
        let field = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
        let content_index = self.blocks.len();
        match field("type") {
            "reasoning" => {
                let summary_parts = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                self.item = Some(Item::Reasoning { summary_parts });
                let block = ThinkingContent::default();
                self.blocks.push(ContentBlock::Thinking(block.clone()));
                out.push(StreamEvent::ThinkingStart {
                    content_index,
                    block,
                });
            }
            "message" => {
                let parts = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        p.get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned()
                    })
                    .collect();
                self.item = Some(Item::Message { parts });
                let block = TextContent::default();
                self.blocks.push(ContentBlock::Text(block.clone()));
                out.push(StreamEvent::TextStart {
                    content_index,
                    block,
                });
            }
            "function_call" => {
                self.item = Some(Item::FunctionCall);
                self.json = field("arguments").to_owned();
                self.json_grew = false;
                let call = ToolCall {
                    id: format!(
                        "{}|{}",
                        js_text(item.get("call_id")),
                        js_text(item.get("id"))
                    ),
                    name: field("name").to_owned(),
                    arguments: Value::Object(Default::default()),
                    ..ToolCall::default()
                };
                self.blocks.push(ContentBlock::ToolCall(call.clone()));
                out.push(StreamEvent::ToolCallStart {
                    content_index,
                    block: call,
                });
            }
            _ => return,
        }
        self.block_open = true;
    }

    fn thinking_delta(&mut self, delta: String, out: &mut Vec<StreamEvent>) {
        let index = self.last();
        if let Some(ContentBlock::Thinking(t)) = self.open_block() {
            t.thinking.push_str(&delta);
            out.push(StreamEvent::ThinkingDelta {
                content_index: index,
                delta,
            });
        }
    }

    fn text_delta(&mut self, kind: &str, delta: String, out: &mut Vec<StreamEvent>) {
        let Some(Item::Message { parts }) = &self.item else {
            return;
        };
        if parts.last().map(String::as_str) != Some(kind) {
            return;
        }
        let index = self.last();
        if let Some(ContentBlock::Text(t)) = self.open_block() {
            t.text.push_str(&delta);
            out.push(StreamEvent::TextDelta {
                content_index: index,
                delta,
            });
        }
    }

    fn item_done(&mut self, item: Option<&Value>, out: &mut Vec<StreamEvent>) {
        let Some(item) = item else { return };
        let index = self.last();
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let joined = |key: &str, field: &str, separator: &str| {
            let parts: Vec<&str> = item
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| p.get(field).and_then(Value::as_str).unwrap_or(""))
                .collect();
            parts.join(separator)
        };
        let json = if kind == "function_call" {
            std::mem::take(&mut self.json)
        } else {
            String::new()
        };
        match (kind, self.open_block()) {
            ("reasoning", Some(ContentBlock::Thinking(t))) => {
                let summary = joined("summary", "text", "\n\n");
                let content = joined("content", "text", "\n\n");
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
                self.block_open = false;
            }
            ("message", Some(ContentBlock::Text(t))) => {
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
                self.block_open = false;
            }
            // A call that never opened a block has no place in the message; only an open one
            // is settled.
            ("function_call", Some(ContentBlock::ToolCall(call))) => {
                // The item's own arguments, when it has them, replace what streamed.
                let raw = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|a| !a.is_empty());
                let (arguments, error) = parse_tool_call_arguments(raw.unwrap_or(json.as_str()));
                call.arguments = arguments;
                if let Some(error) = error {
                    call.set_arguments_error(error);
                }
                let tool_call = call.clone();
                out.push(StreamEvent::ToolCallEnd {
                    content_index: index,
                    tool_call,
                });
                self.block_open = false;
            }
            ("function_call", _) => self.block_open = false,
            _ => {}
        }
    }

    fn completed(&mut self, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        let Some(response) = response else {
            self.set_stop(StopReason::Stop, out);
            return;
        };
        if let Some(id) = response
            .get("id")
            .and_then(Value::as_str)
            .filter(|i| !i.is_empty())
        {
            self.head.response_id = Some(id.to_owned());
            out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
        }
        let mut usage = self.head.usage.clone();
        if let Some(raw) = response.get("usage").filter(|u| !u.is_null()) {
            let number = |pointer: &str| {
                raw.pointer(pointer)
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    .max(0.0) as u64
            };
            let cached = number("/input_tokens_details/cached_tokens");
            usage = Usage {
                input: number("/input_tokens").saturating_sub(cached),
                output: number("/output_tokens"),
                cache_read: cached,
                cache_write: 0,
                total_tokens: number("/total_tokens"),
                ..Usage::default()
            };
        }
        usage.cost = calculate_cost(&self.model, &usage);
        let multiplier = match response.get("service_tier").and_then(Value::as_str) {
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
        self.head.usage = usage.clone();
        out.push(StreamEvent::Patch(Patch::Usage(usage)));
        match map_stop_reason(response.get("status")) {
            Ok(StopReason::Stop)
                if self
                    .blocks
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolCall(_))) =>
            {
                self.set_stop(StopReason::ToolUse, out)
            }
            Ok(reason) => self.set_stop(reason, out),
            Err(message) => out.extend(self.fail(StopReason::Error, message)),
        }
    }

    fn set_stop(&mut self, reason: StopReason, out: &mut Vec<StreamEvent>) {
        self.head.stop_reason = reason;
        out.push(StreamEvent::Patch(Patch::StopReason(reason)));
    }
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
    payload.insert("id".into(), item.get("id").cloned().unwrap_or(Value::Null));
    if let Some(phase) = item
        .get("phase")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        payload.insert("phase".into(), Value::from(phase));
    }
    pi_core::json::to_string(&Value::Object(payload)).unwrap_or_default()
}

/// pi-ai's Responses status mapping; an unknown status is an error.
pub fn map_stop_reason(status: Option<&Value>) -> Result<StopReason, String> {
    match status.filter(|s| !s.is_null()).map(|s| s.as_str()) {
        None | Some(Some("")) => Ok(StopReason::Stop),
        Some(Some("completed" | "in_progress" | "queued")) => Ok(StopReason::Stop),
        Some(Some("incomplete")) => Ok(StopReason::Length),
        Some(Some("failed" | "cancelled")) => Ok(StopReason::Error),
        Some(other) => Err(format!(
            "Unhandled stop reason: {}",
            other.map_or_else(|| js_text(status), str::to_owned)
        )),
    }
}
