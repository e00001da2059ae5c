//! The Chat Completions stream, decoded as pi-ai decodes it: one text and one thinking block per
//! response (created on first use), tool calls keyed by the delta's `index` (else its `id`),
//! usage from the usage chunk, and every `*_end` event at the end of the stream in content order.

use std::collections::BTreeMap;

use pi_core::agent::{Patch, StreamEvent};
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_core::partial_json::{parse_streaming_json, parse_tool_call_arguments};
use serde_json::Value;

use super::chunk::{Chunk, ToolCallDelta};
use crate::cost::{calculate_cost, total_tokens};
use crate::sse::SseParser;
use crate::{failure, raw_reason, response_head, StreamEnd};

#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

/// What a stream that ended without a `finish_reason` fails with (pi-ai 1.5); the retry
/// patterns' "ended without" retries it.
pub const STREAM_CUT: &str = "Stream ended without finish_reason";

/// Decodes one streamed response.
#[derive(Debug)]
pub struct Decoder {
    model: Model,
    head: AssistantMessage,
    sse: SseParser,
    started: bool,
    /// `[DONE]` was seen or the stream failed: later bytes are ignored.
    closed: bool,
    /// The blocks were ended: tool calls carry their final arguments (or why they did not parse).
    ended: bool,
    /// The final `done` or `error` event went out.
    finished: bool,
    /// A chunk carried a `finish_reason`.
    has_finish_reason: bool,
    /// The server's streams end with a `finish_reason` (else a stream ends when its body does).
    supports_finish_reason: bool,
    blocks: Vec<Block>,
    text_block: Option<usize>,
    thinking_block: Option<usize>,
    tools_by_index: BTreeMap<u64, usize>,
    tools_by_id: BTreeMap<String, usize>,
    thought_signatures: BTreeMap<usize, String>,
}

impl Decoder {
    /// A decoder for a response of `model` to a request made at `timestamp`.
    pub fn new(model: &Model, timestamp: u64) -> Self {
        Decoder {
            model: model.clone(),
            head: response_head(model, timestamp),
            sse: SseParser::default(),
            started: false,
            closed: false,
            ended: false,
            finished: false,
            has_finish_reason: false,
            supports_finish_reason: super::compat::supports_finish_reason(model),
            blocks: Vec::new(),
            text_block: None,
            thinking_block: None,
            tools_by_index: BTreeMap::new(),
            tools_by_id: BTreeMap::new(),
            thought_signatures: BTreeMap::new(),
        }
    }

    /// The HTTP response arrived with a success status: the stream starts.
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
        for event in self.sse.feed(bytes) {
            if self.closed {
                break;
            }
            if event.data.starts_with("[DONE]") {
                self.closed = true;
                break;
            }
            match serde_json::from_str::<Chunk<'_>>(&event.data) {
                Ok(chunk) if chunk.error.as_ref().is_some_and(|e| !e.is_null()) => {
                    let message = api_error_message(None, chunk.error.as_ref(), None);
                    out.extend(self.fail(StopReason::Error, message));
                }
                Ok(chunk) => self.chunk(&chunk, &mut out),
                Err(error) => match serde_json::from_str::<Value>(&event.data) {
                    // Valid JSON of an unexpected shape: nothing in it that pi-ai would read.
                    Ok(_) => {}
                    Err(_) => {
                        out.extend(self.fail(
                            StopReason::Error,
                            format!("Could not parse the stream: {error}"),
                        ));
                    }
                },
            }
        }
        out
    }

    /// The end of the response: the body ended, the call was aborted, or the connection failed.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        // The OpenAI SDK drops an event the body did not terminate.
        let _ = self.sse.finish();
        match end {
            StreamEnd::Failed(message) => self.fail(StopReason::Error, message),
            StreamEnd::Aborted => {
                let mut out = self.end_blocks();
                out.extend(self.fail(StopReason::Aborted, "Request was aborted".into()));
                out
            }
            StreamEnd::Complete => {
                let mut out = self.end_blocks();
                if !self.has_finish_reason && !self.supports_finish_reason {
                    let calls = self.blocks.iter().any(|b| matches!(b, Block::Tool { .. }));
                    self.head.stop_reason = match calls {
                        true => StopReason::ToolUse,
                        false => StopReason::Stop,
                    };
                }
                match self.head.stop_reason {
                    StopReason::Error | StopReason::Aborted => {
                        let text = self
                            .head
                            .error_message
                            .clone()
                            .unwrap_or_else(|| "Provider returned an error stop reason".into());
                        out.extend(self.fail(StopReason::Error, text));
                    }
                    _ if !self.has_finish_reason && self.supports_finish_reason => {
                        out.extend(self.fail(StopReason::Error, STREAM_CUT.into()));
                    }
                    reason => {
                        self.closed = true;
                        self.finished = true;
                        out.push(StreamEvent::Done {
                            reason,
                            message: self.message(),
                        });
                    }
                }
                out
            }
        }
    }

    /// The failure event: stop reason and message set, no block ended.
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
        message.content = self
            .blocks
            .iter()
            .enumerate()
            .map(|(i, block)| match block {
                Block::Text(text) => ContentBlock::text(text.clone()),
                Block::Thinking { text, signature } => ContentBlock::Thinking(ThinkingContent {
                    thinking: text.clone(),
                    thinking_signature: Some(signature.clone()),
                    ..ThinkingContent::default()
                }),
                Block::Tool { id, name, json } => {
                    let (arguments, error) = match self.ended {
                        true => parse_tool_call_arguments(json),
                        false => (parse_streaming_json(json), None),
                    };
                    let mut call = ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments,
                        thought_signature: self.thought_signatures.get(&i).cloned(),
                        ..ToolCall::default()
                    };
                    if let Some(error) = error {
                        call.set_arguments_error(error);
                    }
                    ContentBlock::ToolCall(call)
                }
            })
            .collect();
        message
    }

    fn end_blocks(&mut self) -> Vec<StreamEvent> {
        self.ended = true;
        let message = self.message();
        message
            .content
            .into_iter()
            .enumerate()
            .map(|(content_index, block)| match block {
                ContentBlock::Text(t) => StreamEvent::TextEnd {
                    content_index,
                    content: t.text,
                },
                ContentBlock::Thinking(t) => StreamEvent::ThinkingEnd {
                    content_index,
                    content: t.thinking,
                },
                ContentBlock::ToolCall(tool_call) => StreamEvent::ToolCallEnd {
                    content_index,
                    tool_call,
                },
                ContentBlock::Image(_) => StreamEvent::TextEnd {
                    content_index,
                    content: String::new(),
                },
            })
            .collect()
    }

    fn chunk(&mut self, chunk: &Chunk<'_>, out: &mut Vec<StreamEvent>) {
        if self.head.response_id.is_none() {
            if let Some(id) = chunk.id.non_empty() {
                self.head.response_id = Some(id.to_owned());
                out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
            }
        }
        if self.head.response_model.is_none() {
            if let Some(m) = chunk.model.non_empty().filter(|m| *m != self.model.id) {
                self.head.response_model = Some(m.to_owned());
                out.push(StreamEvent::Patch(Patch::ResponseModel(m.to_owned())));
            }
        }
        let usage = chunk.usage.as_ref().filter(|u| u.is_object());
        if let Some(usage) = usage {
            self.set_usage(usage, out);
        }
        let Some(choice) = &chunk.choices.0 else {
            return;
        };
        if usage.is_none() {
            if let Some(usage) = choice.usage.as_ref().filter(|u| u.is_object()) {
                self.set_usage(usage, out);
            }
        }
        if let Some(reason) = choice.finish_reason.as_ref().filter(|r| !r.is_null()) {
            self.has_finish_reason = true;
            self.head.raw_stop_reason = Some(raw_reason(reason));
            let (stop, error) = map_stop_reason(reason);
            self.head.stop_reason = stop;
            out.push(StreamEvent::Patch(Patch::StopReason(stop)));
            if let Some(error) = error {
                self.head.error_message = Some(error.clone());
                out.push(StreamEvent::Patch(Patch::ErrorMessage(error)));
            }
        }
        let Some(delta) = &choice.delta else {
            return;
        };
        // An empty delta makes no event, but one a recording emptied (see `Chunk::emptied`)
        // does, as its text did in the run.
        let emptied = chunk.emptied == Some(Value::Bool(true));
        if let Some(text) = delta.content.delta(emptied) {
            let index = self.ensure_text(out);
            if let Block::Text(so_far) = &mut self.blocks[index] {
                so_far.push_str(text);
            }
            out.push(StreamEvent::TextDelta {
                content_index: index,
                delta: text.to_owned(),
            });
        }
        let reasoning = [
            ("reasoning_content", &delta.reasoning_content),
            ("reasoning", &delta.reasoning),
            ("reasoning_text", &delta.reasoning_text),
        ]
        .into_iter()
        .find_map(|(field, text)| text.delta(emptied).map(|t| (field, t)));
        if let Some((field, text)) = reasoning {
            let index = self.ensure_thinking(field, out);
            if let Block::Thinking { text: so_far, .. } = &mut self.blocks[index] {
                so_far.push_str(text);
            }
            out.push(StreamEvent::ThinkingDelta {
                content_index: index,
                delta: text.to_owned(),
            });
        }
        for call in &delta.tool_calls.0 {
            self.tool_call_delta(call, out);
        }
        for detail in &delta.reasoning_details.0 {
            let encrypted =
                detail.get("type").and_then(Value::as_str) == Some("reasoning.encrypted");
            let id = detail
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
            let has_data = detail.get("data").is_some_and(|d| !d.is_null() && d != "");
            if let (true, Some(id), true) = (encrypted, id, has_data) {
                let target = self
                    .blocks
                    .iter()
                    .position(|b| matches!(b, Block::Tool { id: tid, .. } if tid == id));
                if let Some(index) = target {
                    let signature = pi_core::json::to_string(detail).unwrap_or_default();
                    self.thought_signatures.insert(index, signature.clone());
                    out.push(StreamEvent::Patch(Patch::ThoughtSignature {
                        content_index: index,
                        signature,
                    }));
                }
            }
        }
    }

    fn set_usage(&mut self, raw: &Value, out: &mut Vec<StreamEvent>) {
        let number = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
        let details = raw.get("prompt_tokens_details");
        let prompt = number(raw.get("prompt_tokens"));
        let reported_cached = match details
            .and_then(|d| d.get("cached_tokens"))
            .filter(|v| !v.is_null())
        {
            Some(v) => number(Some(v)),
            None => number(raw.get("prompt_cache_hit_tokens")),
        };
        let cache_write = number(details.and_then(|d| d.get("cache_write_tokens")));
        let cache_read = if cache_write > 0 {
            reported_cached.saturating_sub(cache_write)
        } else {
            reported_cached
        };
        let input = prompt
            .saturating_sub(cache_read)
            .saturating_sub(cache_write);
        let output = number(raw.get("completion_tokens"));
        let reasoning = number(
            raw.get("completion_tokens_details")
                .and_then(|d| d.get("reasoning_tokens")),
        );
        let mut usage = Usage {
            input,
            output,
            cache_read,
            cache_write,
            reasoning: Some(reasoning),
            ..Usage::default()
        };
        usage.total_tokens = total_tokens(&usage);
        usage.cost = calculate_cost(&self.model, &usage);
        // Pi 1.5's `calculateCost` marks the total as computed, not billed by the provider.
        usage.cost.total_from_provider = Some(false);
        self.head.usage = usage.clone();
        out.push(StreamEvent::Patch(Patch::Usage(usage)));
    }

    fn ensure_text(&mut self, out: &mut Vec<StreamEvent>) -> usize {
        if let Some(index) = self.text_block {
            return index;
        }
        let index = self.blocks.len();
        self.blocks.push(Block::Text(String::new()));
        self.text_block = Some(index);
        out.push(StreamEvent::TextStart {
            content_index: index,
            block: TextContent::default(),
        });
        index
    }

    fn ensure_thinking(&mut self, signature: &str, out: &mut Vec<StreamEvent>) -> usize {
        if let Some(index) = self.thinking_block {
            return index;
        }
        let index = self.blocks.len();
        self.blocks.push(Block::Thinking {
            text: String::new(),
            signature: signature.to_owned(),
        });
        self.thinking_block = Some(index);
        out.push(StreamEvent::ThinkingStart {
            content_index: index,
            block: ThinkingContent {
                thinking_signature: Some(signature.to_owned()),
                ..ThinkingContent::default()
            },
        });
        index
    }

    fn tool_call_delta(&mut self, call: &ToolCallDelta, out: &mut Vec<StreamEvent>) {
        let stream_index = call.index.as_ref().and_then(Value::as_u64);
        let id = call
            .id
            .as_ref()
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let function = call.function.as_ref();
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let existing = stream_index
            .and_then(|i| self.tools_by_index.get(&i).copied())
            .or_else(|| id.and_then(|id| self.tools_by_id.get(id).copied()));
        let index = match existing {
            Some(index) => index,
            None => {
                let index = self.blocks.len();
                self.blocks.push(Block::Tool {
                    id: id.unwrap_or("").to_owned(),
                    name: name.unwrap_or("").to_owned(),
                    json: String::new(),
                });
                if let Some(i) = stream_index {
                    self.tools_by_index.insert(i, index);
                }
                out.push(StreamEvent::ToolCallStart {
                    content_index: index,
                    block: ToolCall {
                        id: id.unwrap_or("").to_owned(),
                        name: name.unwrap_or("").to_owned(),
                        arguments: Value::Object(Default::default()),
                        ..ToolCall::default()
                    },
                });
                index
            }
        };
        if let Some(i) = stream_index {
            self.tools_by_index.entry(i).or_insert(index);
        }
        if let Some(id) = id {
            self.tools_by_id.insert(id.to_owned(), index);
        }
        let mut delta = String::new();
        if let Block::Tool {
            id: block_id,
            name: block_name,
            json,
        } = &mut self.blocks[index]
        {
            if block_id.is_empty() {
                if let Some(id) = id {
                    *block_id = id.to_owned();
                    out.push(StreamEvent::Patch(Patch::ToolCallId {
                        content_index: index,
                        id: id.to_owned(),
                    }));
                }
            }
            if block_name.is_empty() {
                if let Some(name) = name {
                    *block_name = name.to_owned();
                    out.push(StreamEvent::Patch(Patch::ToolCallName {
                        content_index: index,
                        name: name.to_owned(),
                    }));
                }
            }
            if let Some(fragment) = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                json.push_str(fragment);
                delta = fragment.to_owned();
            }
        }
        out.push(StreamEvent::ToolCallDelta {
            content_index: index,
            delta,
        });
    }
}

/// pi-ai's finish-reason mapping: unknown reasons are errors naming the reason.
pub fn map_stop_reason(reason: &Value) -> (StopReason, Option<String>) {
    match reason.as_str() {
        Some("stop" | "end") => (StopReason::Stop, None),
        Some("length") => (StopReason::Length, None),
        Some("function_call" | "tool_calls") => (StopReason::ToolUse, None),
        _ => {
            let text = match reason {
                Value::String(s) => s.clone(),
                other => pi_core::json::to_string(other).unwrap_or_default(),
            };
            (
                StopReason::Error,
                Some(format!("Provider finish_reason: {text}")),
            )
        }
    }
}

/// The message the OpenAI and Anthropic SDKs give an API error: `"<status> <message>"`, where the
/// message is the body's `error.message`, else the JSON of `error`, else the raw body.
pub fn api_error_message(status: Option<u16>, error: Option<&Value>, raw: Option<&str>) -> String {
    let error = error.filter(|e| !e.is_null());
    let message = match error.and_then(|e| e.get("message")).filter(|m| {
        !m.is_null() && m != &&Value::Bool(false) && m != &&Value::String(String::new())
    }) {
        Some(Value::String(m)) => Some(m.clone()),
        Some(other) => Some(pi_core::json::to_string(other).unwrap_or_default()),
        None => match error {
            Some(e) => Some(
                pi_core::json::to_string(&pi_core::validate::js_key_order(e)).unwrap_or_default(),
            ),
            None => raw.filter(|r| !r.is_empty()).map(str::to_owned),
        },
    };
    match (status, message) {
        (Some(status), Some(message)) => format!("{status} {message}"),
        (Some(status), None) => format!("{status} status code (no body)"),
        (None, Some(message)) => message,
        (None, None) => "(no status code or body)".to_owned(),
    }
}
