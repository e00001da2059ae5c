//! The Anthropic Messages stream, decoded as pi-ai decodes it: blocks are located by the
//! provider's `index`, each ends when its `content_block_stop` arrives, usage comes from
//! `message_start` and `message_delta`, and a stream that started but never sent `message_stop`
//! is an error.

use std::borrow::Cow;

use pi_core::agent::{Patch, StreamEvent};
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_core::partial_json::{
    parse_json_with_repair, parse_streaming_json, parse_tool_call_arguments,
};
use serde_json::Value;

use crate::cost::{calculate_cost, total_tokens};
use crate::sse::{SseEvent, SseParser};
use crate::{failure, raw_reason, response_head, StreamEnd};

/// The Anthropic events pi-ai reads (`ANTHROPIC_MESSAGE_EVENTS`); others are passed over.
pub(crate) const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

/// The most frequent event, read without copying: the general path parses any event loosely.
#[derive(serde::Deserialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow)]
    delta: DeltaBody<'a>,
}

#[derive(serde::Deserialize)]
struct DeltaBody<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

#[derive(Debug)]
struct Block {
    /// The provider's index while the block is open.
    index: Option<u64>,
    content: ContentBlock,
    /// Tool-call argument JSON received so far.
    json: String,
}

/// Decodes one streamed response.
#[derive(Debug)]
pub struct Decoder {
    model: Model,
    /// The model the usage is priced as: a fallback model that answered has its own cost.
    usage_model: Model,
    head: AssistantMessage,
    sse: SseParser,
    started: bool,
    saw_start: bool,
    saw_stop: bool,
    /// A `message_delta` named the stop reason (until then Pi 1.5.2's answer is `pending`).
    saw_stop_reason: bool,
    finished: bool,
    blocks: Vec<Block>,
    /// The last `input_transformations` list the stream sent (in `message_start`'s message or
    /// a `message_delta`), which an answer without error reports as a diagnostic.
    input_transformations: Option<Vec<Value>>,
}

/// What Pi 1.5.2 fails a stream with whose model changed after content had begun.
const MID_OUTPUT_FALLBACK: &str = "Anthropic performed an unsupported mid-output model fallback";

/// The model as priced when `answered_by` answered for it: one of its
/// `compat.allowedFallbackModels` of the same provider with a cost is priced at that cost,
/// any other answer at the model's own (Pi 1.5.2's `usageModel`).
fn fallback_pricing(model: &Model, answered_by: &str) -> Model {
    let cost = super::encode::allowed_fallback_models(model)
        .iter()
        .find(|f| {
            f.get("provider").and_then(Value::as_str) == Some(model.provider.as_str())
                && f.get("model").and_then(Value::as_str) == Some(answered_by)
        })
        .and_then(|f| f.get("cost"))
        .and_then(|c| serde_json::from_value(c.clone()).ok());
    match cost {
        Some(cost) => Model {
            id: answered_by.to_owned(),
            cost,
            ..model.clone()
        },
        None => model.clone(),
    }
}

/// `message` with `diagnostic` added last: to its `diagnostics` when it has some, else as a
/// new key after every other the stream set, where Pi 1.5.2 appends it at the stream's end.
fn with_last_diagnostic(mut message: AssistantMessage, diagnostic: Value) -> AssistantMessage {
    if let Some(diagnostics) = &mut message.diagnostics {
        diagnostics.push(diagnostic);
        return message;
    }
    // The key order goes with the message as read: write it out, add the key, read it back.
    if let Ok(Value::Object(mut fields)) = serde_json::to_value(&message) {
        fields.insert("diagnostics".into(), Value::Array(vec![diagnostic.clone()]));
        if let Ok(placed) = serde_json::from_value(Value::Object(fields)) {
            return placed;
        }
    }
    message.diagnostics = Some(vec![diagnostic]);
    message
}

/// What Pi 1.5.2 fails a stream with that ended while its answer was still `pending`.
const NO_STOP_REASON: &str = "Anthropic stream ended without a stop reason";

impl Decoder {
    /// A decoder for a response of `model` to a request made at `timestamp`.
    pub fn new(model: &Model, timestamp: u64) -> Self {
        Decoder {
            model: model.clone(),
            usage_model: model.clone(),
            head: response_head(model, timestamp),
            sse: SseParser::anthropic(),
            started: false,
            saw_start: false,
            saw_stop: false,
            saw_stop_reason: false,
            finished: false,
            input_transformations: None,
            blocks: Vec::new(),
        }
    }

    /// The same decoder for a request that asked for `effort` mid-conversation, which every
    /// message it makes records (`providerThinkingLevel`), as Pi 1.5.2 sets it before sending.
    pub fn with_requested_effort(mut self, effort: Option<String>) -> Self {
        self.head.provider_thinking_level = effort;
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
        if self.finished || !self.started {
            return out;
        }
        for event in self.sse.feed(bytes) {
            self.event(event, &mut out);
            if self.finished {
                break;
            }
        }
        out
    }

    /// The end of the response.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        match end {
            StreamEnd::Aborted => {
                return self.fail(StopReason::Aborted, "Request was aborted".into())
            }
            StreamEnd::Failed(message) => return self.fail(StopReason::Error, message),
            StreamEnd::Complete => {}
        }
        if let Some(event) = self.sse.finish() {
            self.event(event, &mut out);
            if self.finished {
                return out;
            }
        }
        if self.saw_start && !self.saw_stop {
            out.extend(self.fail(
                StopReason::Error,
                "Anthropic stream ended before message_stop".into(),
            ));
            return out;
        }
        if !self.saw_stop_reason {
            out.extend(self.fail(StopReason::Error, NO_STOP_REASON.into()));
            return out;
        }
        match self.head.stop_reason {
            StopReason::Error | StopReason::Aborted => {
                let text = self.head.error_message.clone();
                let text = text.unwrap_or_else(|| "An unknown error occurred".into());
                out.extend(self.fail(StopReason::Error, text));
            }
            reason => {
                self.finished = true;
                let mut message = self.message();
                if let Some(diagnostic) = self.transformations_diagnostic() {
                    message = with_last_diagnostic(message, diagnostic);
                }
                out.push(StreamEvent::Done { reason, message });
            }
        }
        out
    }

    /// Pi 1.5.2's `anthropic_input_transformations` diagnostic: each transformation's `type`,
    /// `path` and `reason` (those present), stamped with the call's time where Pi stamps the
    /// end of the stream.
    fn transformations_diagnostic(&self) -> Option<Value> {
        let list = self
            .input_transformations
            .as_ref()
            .filter(|l| !l.is_empty())?;
        let list: Vec<Value> = list
            .iter()
            .map(|t| {
                let fields = ["type", "path", "reason"]
                    .into_iter()
                    .filter_map(|key| {
                        let value = t.get(key).filter(|v| !v.is_null())?;
                        Some((key.to_owned(), value.clone()))
                    })
                    .collect();
                Value::Object(fields)
            })
            .collect();
        Some(serde_json::json!({
            "type": "anthropic_input_transformations",
            "timestamp": self.head.timestamp,
            "details": {"transformations": list},
        }))
    }

    fn fail(&mut self, reason: StopReason, message: String) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        vec![failure(self.message(), reason, message)]
    }

    fn message(&self) -> AssistantMessage {
        let mut message = self.head.clone();
        message.content = self
            .blocks
            .iter()
            .map(|b| match &b.content {
                ContentBlock::ToolCall(call) if b.index.is_some() && !b.json.is_empty() => {
                    ContentBlock::ToolCall(ToolCall {
                        arguments: parse_streaming_json(&b.json),
                        ..call.clone()
                    })
                }
                other => other.clone(),
            })
            .collect();
        message
    }

    fn position(&self, index: Option<u64>) -> Option<usize> {
        index.and_then(|i| self.blocks.iter().position(|b| b.index == Some(i)))
    }

    fn set_usage(&mut self, usage: Usage, out: &mut Vec<StreamEvent>) {
        let mut usage = usage;
        usage.total_tokens = total_tokens(&usage);
        usage.cost = calculate_cost(&self.usage_model, &usage);
        // Pi 1.5's `calculateCost` marks the total as computed, not billed by the provider.
        usage.cost.total_from_provider = Some(false);
        let usage = in_anthropic_order(usage);
        self.head.usage = usage.clone();
        out.push(StreamEvent::Patch(Patch::Usage(usage)));
    }

    fn block_delta(
        &mut self,
        index: Option<u64>,
        kind: Option<&str>,
        field: &dyn Fn(&str) -> String,
        out: &mut Vec<StreamEvent>,
    ) {
        let Some(position) = self.position(index) else {
            return;
        };
        let block = &mut self.blocks[position];
        match (kind, &mut block.content) {
            (Some("text_delta"), ContentBlock::Text(t)) => {
                let text = field("text");
                t.text.push_str(&text);
                out.push(StreamEvent::TextDelta {
                    content_index: position,
                    delta: text,
                });
            }
            (Some("thinking_delta"), ContentBlock::Thinking(t)) => {
                let text = field("thinking");
                t.thinking.push_str(&text);
                out.push(StreamEvent::ThinkingDelta {
                    content_index: position,
                    delta: text,
                });
            }
            (Some("input_json_delta"), ContentBlock::ToolCall(_)) => {
                let fragment = field("partial_json");
                // Arguments are parsed when the block ends or the message is read,
                // not on every fragment (which would be quadratic).
                block.json.push_str(&fragment);
                out.push(StreamEvent::ToolCallDelta {
                    content_index: position,
                    delta: fragment,
                });
            }
            (Some("signature_delta"), ContentBlock::Thinking(t)) => {
                let signature = field("signature");
                t.thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(&signature);
                out.push(StreamEvent::Patch(Patch::ThinkingSignatureDelta {
                    content_index: position,
                    delta: signature,
                }));
            }
            _ => {}
        }
    }

    /// Keeps a stream's `input_transformations` when it is a list (the last one counts).
    fn note_transformations(&mut self, list: Option<&Value>) {
        if let Some(Value::Array(list)) = list {
            self.input_transformations = Some(list.clone());
        }
    }

    fn event(&mut self, sse: SseEvent, out: &mut Vec<StreamEvent>) {
        let name = sse.event.as_deref().unwrap_or("");
        if name == "error" {
            out.extend(self.fail(StopReason::Error, sse.data));
            return;
        }
        if !MESSAGE_EVENTS.contains(&name) {
            return;
        }
        if name == "content_block_delta" {
            if let Ok(delta) = serde_json::from_str::<DeltaEvent<'_>>(&sse.data) {
                if delta.kind == "content_block_delta" {
                    let body = &delta.delta;
                    let field = |key: &str| {
                        let value = match key {
                            "text" => &body.text,
                            "thinking" => &body.thinking,
                            "partial_json" => &body.partial_json,
                            "signature" => &body.signature,
                            _ => &None,
                        };
                        value.as_deref().unwrap_or("").to_owned()
                    };
                    self.block_delta(delta.index, body.kind.as_deref(), &field, out);
                    return;
                }
            }
        }
        let event = match parse_json_with_repair(&sse.data) {
            Ok(event) => event,
            Err(error) => {
                out.extend(self.fail(StopReason::Error, unparsed_event(name, &error, &sse)));
                return;
            }
        };
        let number = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64;
        let index = event.get("index").and_then(Value::as_u64);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                self.saw_start = true;
                let message = event.get("message");
                self.note_transformations(message.and_then(|m| m.get("input_transformations")));
                if let Some(id) = message.and_then(|m| m.get("id")).and_then(Value::as_str) {
                    self.head.response_id = Some(id.to_owned());
                    out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
                }
                let answered_by = message.and_then(|m| m.get("model")).and_then(Value::as_str);
                if let Some(answered_by) = answered_by.filter(|m| *m != self.model.id) {
                    self.head.response_model = Some(answered_by.to_owned());
                    out.push(StreamEvent::Patch(Patch::ResponseModel(
                        answered_by.to_owned(),
                    )));
                    self.usage_model = fallback_pricing(&self.model, answered_by);
                }
                let usage = message.and_then(|m| m.get("usage"));
                let field = |name: &str| number(usage.and_then(|u| u.get(name)));
                let usage = Usage {
                    input: field("input_tokens"),
                    output: field("output_tokens"),
                    cache_read: field("cache_read_input_tokens"),
                    cache_write: field("cache_creation_input_tokens"),
                    cache_write_1h: Some(number(
                        usage
                            .and_then(|u| u.get("cache_creation"))
                            .and_then(|c| c.get("ephemeral_1h_input_tokens")),
                    )),
                    ..Usage::default()
                };
                self.set_usage(usage, out);
            }
            "content_block_start" => {
                let block = event.get("content_block");
                let kind = block
                    .and_then(|b| b.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let text = |key: &str| {
                    block
                        .and_then(|b| b.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let content_index = self.blocks.len();
                if kind == "fallback" {
                    if content_index > 0 {
                        out.extend(self.fail(StopReason::Error, MID_OUTPUT_FALLBACK.to_owned()));
                    }
                    return;
                }
                let (content, event) = match kind {
                    "text" => {
                        let content = TextContent::default();
                        (
                            ContentBlock::Text(content.clone()),
                            StreamEvent::TextStart {
                                content_index,
                                block: content,
                            },
                        )
                    }
                    "thinking" | "redacted_thinking" => {
                        let content = if kind == "thinking" {
                            ThinkingContent {
                                thinking_signature: Some(String::new()),
                                ..ThinkingContent::default()
                            }
                        } else {
                            ThinkingContent {
                                thinking: "[Reasoning redacted]".into(),
                                thinking_signature: Some(text("data")),
                                redacted: Some(true),
                                ..ThinkingContent::default()
                            }
                        };
                        (
                            ContentBlock::Thinking(content.clone()),
                            StreamEvent::ThinkingStart {
                                content_index,
                                block: content,
                            },
                        )
                    }
                    "tool_use" => {
                        let call = ToolCall {
                            id: text("id"),
                            name: text("name"),
                            arguments: block
                                .and_then(|b| b.get("input"))
                                .filter(|i| !i.is_null())
                                .cloned()
                                .unwrap_or_else(|| Value::Object(Default::default())),
                            ..ToolCall::default()
                        };
                        (
                            ContentBlock::ToolCall(call.clone()),
                            StreamEvent::ToolCallStart {
                                content_index,
                                block: call,
                            },
                        )
                    }
                    _ => return,
                };
                self.blocks.push(Block {
                    index,
                    content,
                    json: String::new(),
                });
                out.push(event);
            }
            "content_block_delta" => {
                let delta = event.get("delta");
                let field = |key: &str| {
                    delta
                        .and_then(|d| d.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let kind = delta.and_then(|d| d.get("type")).and_then(Value::as_str);
                self.block_delta(index, kind, &field, out);
            }
            "content_block_stop" => {
                let Some(position) = self.position(index) else {
                    return;
                };
                let block = &mut self.blocks[position];
                block.index = None;
                out.push(match &mut block.content {
                    ContentBlock::Text(t) => StreamEvent::TextEnd {
                        content_index: position,
                        content: t.text.clone(),
                    },
                    ContentBlock::Thinking(t) => StreamEvent::ThinkingEnd {
                        content_index: position,
                        content: t.thinking.clone(),
                    },
                    ContentBlock::ToolCall(call) => {
                        let (arguments, error) = parse_tool_call_arguments(&block.json);
                        call.arguments = arguments;
                        if let Some(error) = error {
                            call.set_arguments_error(error);
                        }
                        StreamEvent::ToolCallEnd {
                            content_index: position,
                            tool_call: call.clone(),
                        }
                    }
                    ContentBlock::Image(_) => return,
                });
            }
            "message_delta" => {
                self.note_transformations(event.get("input_transformations"));
                if let Some(reason) = event
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .filter(|r| !r.is_null())
                {
                    self.head.raw_stop_reason = Some(raw_reason(reason));
                    match map_stop_reason(reason) {
                        Ok(stop) => {
                            self.saw_stop_reason = true;
                            self.head.stop_reason = stop;
                            out.push(StreamEvent::Patch(Patch::StopReason(stop)));
                            let details = event.get("delta").and_then(|d| d.get("stop_details"));
                            if let Some(text) = stop_error_text(reason, details) {
                                self.head.error_message = Some(text.clone());
                                out.push(StreamEvent::Patch(Patch::ErrorMessage(text)));
                            }
                        }
                        Err(message) => {
                            out.extend(self.fail(StopReason::Error, message));
                            return;
                        }
                    }
                }
                let usage = event.get("usage");
                let mut next = self.head.usage.clone();
                let set = |slot: &mut u64, key: &str| {
                    if let Some(v) = usage.and_then(|u| u.get(key)).filter(|v| !v.is_null()) {
                        *slot = number(Some(v));
                    }
                };
                set(&mut next.input, "input_tokens");
                set(&mut next.output, "output_tokens");
                set(&mut next.cache_read, "cache_read_input_tokens");
                set(&mut next.cache_write, "cache_creation_input_tokens");
                let present =
                    |value: Option<&Value>| value.filter(|v| !v.is_null()).map(|v| number(Some(v)));
                let details = |object: &str, key: &str| {
                    present(usage.and_then(|u| u.get(object)).and_then(|o| o.get(key)))
                };
                if let Some(long) = details("cache_creation", "ephemeral_1h_input_tokens") {
                    next.cache_write_1h = Some(long);
                }
                if let Some(thinking) = details("output_tokens_details", "thinking_tokens") {
                    next.reasoning = Some(thinking);
                }
                self.set_usage(next, out);
            }
            "message_stop" => self.saw_stop = true,
            _ => {}
        }
    }
}

/// The usage with its keys in the order pi-ai's Anthropic stream adds them: `cacheWrite1h`
/// (set by `message_start`) and then `reasoning` (by `message_delta`) after `cost`.
/// pi-ai's error for a message event whose data does not parse, even repaired: `JSON.parse`'s
/// message, the data, and the raw lines the reader kept, joined by a literal backslash-n (as
/// pi-ai's source writes it).
fn unparsed_event(name: &str, error: &str, sse: &SseEvent) -> String {
    format!(
        "Could not parse Anthropic SSE event {name}: {error}; data={}; raw={}",
        sse.data,
        sse.raw.join("\\n")
    )
}

fn in_anthropic_order(usage: Usage) -> Usage {
    let Ok(Value::Object(mut object)) = serde_json::to_value(&usage) else {
        return usage;
    };
    if let Some(reasoning) = object.shift_remove("reasoning") {
        object.insert("reasoning".into(), reasoning);
    }
    serde_json::from_value(Value::Object(object)).unwrap_or(usage)
}

/// Pi 1.5.2's error text for a stop reason that ends the answer as an error: a refusal's own
/// explanation (`stop_details.explanation`) or its fixed texts.
fn stop_error_text(reason: &Value, details: Option<&Value>) -> Option<String> {
    match reason.as_str()? {
        "refusal" => Some(
            details
                .and_then(|d| d.get("explanation"))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .unwrap_or("The model refused to complete the request")
                .to_owned(),
        ),
        "sensitive" => Some("Provider stopped with: sensitive".into()),
        _ => None,
    }
}

/// pi-ai's Anthropic stop-reason mapping; an unknown reason is an error.
pub fn map_stop_reason(reason: &Value) -> Result<StopReason, String> {
    match reason.as_str() {
        Some("end_turn" | "pause_turn" | "stop_sequence") => Ok(StopReason::Stop),
        Some("max_tokens") => Ok(StopReason::Length),
        Some("tool_use") => Ok(StopReason::ToolUse),
        Some("refusal" | "sensitive") => Ok(StopReason::Error),
        _ => Err(format!(
            "Unhandled stop reason: {}",
            reason
                .as_str()
                .map_or_else(|| reason.to_string(), str::to_owned)
        )),
    }
}
