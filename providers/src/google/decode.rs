//! The `streamGenerateContent` stream, decoded as the Google SDK splits it and pi-ai reads it:
//! each `data:` event is a response chunk whose first candidate's parts extend the current text
//! or thinking block or add a complete tool call; the finish reason and usage metadata arrive
//! in chunks of their own or alongside.

use pi_core::agent::{Patch, StreamEvent};
use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::cost::calculate_cost;
use crate::{failure, raw_reason, response_head, StreamEnd};

/// Event delimiters the SDK splits on (the earliest found wins).
const DELIMITERS: [&[u8]; 3] = [b"\n\n", b"\r\r", b"\r\n\r\n"];

/// Finish reasons pi-ai treats as a failed response.
const ERROR_REASONS: [&str; 16] = [
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "SAFETY",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "RECITATION",
    "FINISH_REASON_UNSPECIFIED",
    "OTHER",
    "LANGUAGE",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "NO_IMAGE",
];

/// One response chunk, read without copying its strings; only what pi-ai looks at.
#[derive(Debug, Default, Deserialize)]
struct Chunk<'a> {
    #[serde(rename = "responseId", borrow, default)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "first_candidate")]
    candidates: Option<Candidate<'a>>,
    #[serde(rename = "usageMetadata", default)]
    usage_metadata: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Candidate<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(rename = "finishReason", default)]
    finish_reason: Option<Box<Value>>,
}

#[derive(Debug, Default, Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<Part<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(rename = "thoughtSignature", borrow, default)]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(rename = "functionCall", default)]
    function_call: Option<Box<Value>>,
}

/// The first candidate of the array (pi-ai reads no other), without collecting the rest.
fn first_candidate<'de, D>(deserializer: D) -> Result<Option<Candidate<'de>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct First;
    impl<'de> serde::de::Visitor<'de> for First {
        type Value = Option<Candidate<'de>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of candidates or null")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(First)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<Candidate<'de>>()?;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    deserializer.deserialize_option(First)
}

impl<'a> Chunk<'a> {
    /// The fields pi-ai reads from a chunk whose fields have unexpected types (they are then
    /// absent, as a string read of them would be).
    fn from_value(value: &'a Value) -> Self {
        let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        let candidate = |c: &'a Value| Candidate {
            content: c.get("content").map(|content| Content {
                parts: content.get("parts").and_then(Value::as_array).map(|parts| {
                    parts
                        .iter()
                        .map(|p| Part {
                            text: text(p, "text"),
                            thought: Some(p.get("thought") == Some(&Value::Bool(true))),
                            thought_signature: text(p, "thoughtSignature"),
                            function_call: p.get("functionCall").cloned().map(Box::new),
                        })
                        .collect()
                }),
            }),
            finish_reason: c.get("finishReason").cloned().map(Box::new),
        };
        Chunk {
            response_id: text(value, "responseId"),
            candidates: value
                .get("candidates")
                .and_then(Value::as_array)
                .and_then(|c| c.first())
                .map(candidate),
            usage_metadata: value.get("usageMetadata").cloned().map(Box::new),
        }
    }
}

/// Decodes one streamed response.
#[derive(Debug)]
pub struct Decoder {
    model: Model,
    head: AssistantMessage,
    buffer: Vec<u8>,
    started: bool,
    finished: bool,
    blocks: Vec<ContentBlock>,
    /// Whether the last block is a text or thinking block still being extended.
    block_open: bool,
    /// Whether a finish reason arrived (Pi 1.5.2: a stream ending without one is an error).
    saw_finish: bool,
    /// Tool calls given made-up ids so far (they are numbered).
    generated_ids: u64,
}

impl Decoder {
    /// A decoder for a response of `model` to a request made at `timestamp`.
    pub fn new(model: &Model, timestamp: u64) -> Self {
        Decoder {
            model: model.clone(),
            head: AssistantMessage {
                // pi-ai names the API itself here, whatever the model says.
                api: "google-generative-ai".into(),
                ..response_head(model, timestamp)
            },
            buffer: Vec::new(),
            started: false,
            finished: false,
            blocks: Vec::new(),
            block_open: false,
            saw_finish: false,
            generated_ids: 0,
        }
    }

    /// The HTTP response arrived with a success status.
    pub fn start(&mut self) -> Vec<StreamEvent> {
        self.started = true;
        vec![StreamEvent::Start {
            partial: self.head.clone(),
        }]
    }

    /// Bytes of the response body, one network chunk at a time: a chunk that is on its own an
    /// error object fails the stream, as the SDK checks each chunk it reads.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.finished || !self.started {
            return out;
        }
        if let Some(message) = chunk_error(bytes) {
            return self.fail(StopReason::Error, message);
        }
        self.buffer.extend_from_slice(bytes);
        let mut consumed = 0;
        let buffer = std::mem::take(&mut self.buffer);
        while let Some((at, len)) = next_delimiter(&buffer[consumed..]) {
            let raw = &buffer[consumed..consumed + at];
            let event = match std::str::from_utf8(raw) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(raw),
            };
            consumed += at + len;
            let Some(data) = event.trim().strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            match serde_json::from_str::<Chunk<'_>>(data) {
                Ok(chunk) => self.chunk(&chunk, &mut out),
                // Fields of unexpected types: read what pi-ai would read from the loose JSON.
                Err(_) => match serde_json::from_str::<Value>(data) {
                    Ok(value) => self.chunk(&Chunk::from_value(&value), &mut out),
                    Err(error) => out.extend(self.fail(StopReason::Error, error.to_string())),
                },
            }
            if self.finished {
                break;
            }
        }
        self.buffer = buffer;
        self.buffer.drain(..consumed);
        out
    }

    /// The end of the response: the body ended, the call was aborted, or the connection failed.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        match end {
            StreamEnd::Failed(message) => self.fail(StopReason::Error, message),
            StreamEnd::Aborted => self.fail(StopReason::Aborted, "Request was aborted".into()),
            StreamEnd::Complete => {
                if !String::from_utf8_lossy(&self.buffer).trim().is_empty() {
                    return self.fail(
                        StopReason::Error,
                        "Incomplete JSON segment at the end".into(),
                    );
                }
                let mut out = Vec::new();
                self.close_block(&mut out);
                if !self.saw_finish {
                    let text = "Google stream ended without a finish reason".into();
                    out.extend(self.fail(StopReason::Error, text));
                    return out;
                }
                match self.head.stop_reason {
                    StopReason::Error | StopReason::Aborted => {
                        // Pi 1.5.2 names the finish reason that ended the answer as an error.
                        let text = match &self.head.raw_stop_reason {
                            Some(raw) => format!("Provider stopped with: {raw}"),
                            None => "An unknown error occurred".into(),
                        };
                        out.extend(self.fail(StopReason::Error, text));
                    }
                    reason => {
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

    fn fail(&mut self, reason: StopReason, message: String) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        vec![failure(self.message(), reason, message)]
    }

    fn message(&self) -> AssistantMessage {
        let mut message = self.head.clone();
        message.content = self.blocks.clone();
        message
    }

    fn close_block(&mut self, out: &mut Vec<StreamEvent>) {
        if !self.block_open {
            return;
        }
        self.block_open = false;
        let content_index = self.blocks.len() - 1;
        match self.blocks.last() {
            Some(ContentBlock::Text(t)) => out.push(StreamEvent::TextEnd {
                content_index,
                content: t.text.clone(),
            }),
            Some(ContentBlock::Thinking(t)) => out.push(StreamEvent::ThinkingEnd {
                content_index,
                content: t.thinking.clone(),
            }),
            _ => {}
        }
    }

    fn chunk(&mut self, chunk: &Chunk<'_>, out: &mut Vec<StreamEvent>) {
        if self.head.response_id.is_none() {
            if let Some(id) = chunk.response_id.as_deref().filter(|i| !i.is_empty()) {
                self.head.response_id = Some(id.to_owned());
                out.push(StreamEvent::Patch(Patch::ResponseId(id.to_owned())));
            }
        }
        let candidate = chunk.candidates.as_ref();
        let parts = candidate
            .and_then(|c| c.content.as_ref())
            .and_then(|c| c.parts.as_ref());
        for part in parts.into_iter().flatten() {
            if let Some(text) = &part.text {
                self.text_part(part, text, out);
            }
            if let Some(call) = part.function_call.as_ref().filter(|c| c.is_object()) {
                self.function_call(part, call, out);
            }
        }
        if let Some(reason) = candidate
            .and_then(|c| c.finish_reason.as_ref())
            .filter(|r| !r.is_null() && r.as_str() != Some(""))
        {
            self.saw_finish = true;
            self.head.raw_stop_reason = Some(raw_reason(reason));
            let stop = match reason.as_str() {
                Some("STOP") => StopReason::Stop,
                Some("MAX_TOKENS") => StopReason::Length,
                Some(r) if ERROR_REASONS.contains(&r) => StopReason::Error,
                _ => {
                    let text = reason
                        .as_str()
                        .map_or_else(|| reason.to_string(), str::to_owned);
                    out.extend(
                        self.fail(StopReason::Error, format!("Unhandled stop reason: {text}")),
                    );
                    return;
                }
            };
            let has_tool_call = self
                .blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(_)));
            let stop = if has_tool_call {
                StopReason::ToolUse
            } else {
                stop
            };
            self.head.stop_reason = stop;
            out.push(StreamEvent::Patch(Patch::StopReason(stop)));
        }
        if let Some(meta) = chunk.usage_metadata.as_ref().filter(|m| m.is_object()) {
            let number = |key: &str| {
                meta.get(key)
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    .max(0.0) as u64
            };
            let cached = number("cachedContentTokenCount");
            let mut usage = Usage {
                input: number("promptTokenCount").saturating_sub(cached),
                output: number("candidatesTokenCount").saturating_add(number("thoughtsTokenCount")),
                cache_read: cached,
                cache_write: 0,
                reasoning: Some(number("thoughtsTokenCount")),
                total_tokens: number("totalTokenCount"),
                ..Usage::default()
            };
            usage.cost = calculate_cost(&self.model, &usage);
            // Pi 1.5's `calculateCost` marks the total as computed, not billed by the provider.
            usage.cost.total_from_provider = Some(false);
            self.head.usage = usage.clone();
            out.push(StreamEvent::Patch(Patch::Usage(usage)));
        }
    }

    fn text_part(&mut self, part: &Part<'_>, text: &str, out: &mut Vec<StreamEvent>) {
        let thinking = part.thought == Some(true);
        let continues = self.block_open
            && matches!(
                (self.blocks.last(), thinking),
                (Some(ContentBlock::Thinking(_)), true) | (Some(ContentBlock::Text(_)), false)
            );
        if !continues {
            self.close_block(out);
            let content_index = self.blocks.len();
            if thinking {
                let block = ThinkingContent::default();
                self.blocks.push(ContentBlock::Thinking(block.clone()));
                out.push(StreamEvent::ThinkingStart {
                    content_index,
                    block,
                });
            } else {
                let block = TextContent::default();
                self.blocks.push(ContentBlock::Text(block.clone()));
                out.push(StreamEvent::TextStart {
                    content_index,
                    block,
                });
            }
            self.block_open = true;
        }
        let content_index = self.blocks.len() - 1;
        let signature = part.thought_signature.as_deref().filter(|s| !s.is_empty());
        match self.blocks.last_mut() {
            Some(ContentBlock::Thinking(t)) => {
                t.thinking.push_str(text);
                if let Some(signature) = signature {
                    t.thinking_signature = Some(signature.to_owned());
                    out.push(StreamEvent::Patch(Patch::ThinkingSignature {
                        content_index,
                        signature: signature.to_owned(),
                    }));
                }
                out.push(StreamEvent::ThinkingDelta {
                    content_index,
                    delta: text.to_owned(),
                });
            }
            Some(ContentBlock::Text(t)) => {
                t.text.push_str(text);
                if let Some(signature) = signature {
                    t.text_signature = Some(signature.to_owned());
                    out.push(StreamEvent::Patch(Patch::TextSignature {
                        content_index,
                        signature: signature.to_owned(),
                    }));
                }
                out.push(StreamEvent::TextDelta {
                    content_index,
                    delta: text.to_owned(),
                });
            }
            _ => {}
        }
    }

    fn function_call(&mut self, part: &Part<'_>, call: &Value, out: &mut Vec<StreamEvent>) {
        self.close_block(out);
        let name = call.get("name").and_then(Value::as_str).unwrap_or("");
        let provided = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let taken = |id: &str| {
            self.blocks
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolCall(c) if c.id == id))
        };
        let id = match provided {
            Some(id) if !taken(id) => id.to_owned(),
            // pi-ai numbers made-up ids with a process-wide counter and the clock; here they
            // count within the response and use the request's timestamp, so replays agree.
            _ => {
                self.generated_ids += 1;
                format!("{name}_{}_{}", self.head.timestamp, self.generated_ids)
            }
        };
        let arguments = call
            .get("args")
            .filter(|a| !a.is_null())
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let tool_call = ToolCall {
            id,
            name: name.to_owned(),
            arguments,
            thought_signature: part
                .thought_signature
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            ..ToolCall::default()
        };
        let content_index = self.blocks.len();
        self.blocks.push(ContentBlock::ToolCall(tool_call.clone()));
        let delta = pi_core::json::to_string(&tool_call.arguments).unwrap_or_default();
        out.push(StreamEvent::ToolCallStart {
            content_index,
            block: tool_call.clone(),
        });
        out.push(StreamEvent::ToolCallDelta {
            content_index,
            delta,
        });
        out.push(StreamEvent::ToolCallEnd {
            content_index,
            tool_call,
        });
    }
}

/// The earliest event delimiter in `buffer`: its position and length.
fn next_delimiter(buffer: &[u8]) -> Option<(usize, usize)> {
    memchr::memchr2_iter(b'\n', b'\r', buffer).find_map(|at| {
        DELIMITERS
            .iter()
            .find(|d| buffer[at..].starts_with(d))
            .map(|d| (at, d.len()))
    })
}

/// The SDK's check of a network chunk that is by itself an error object with an HTTP code.
fn chunk_error(bytes: &[u8]) -> Option<String> {
    let trimmed = bytes.trim_ascii();
    if !(trimmed.starts_with(b"{") && trimmed.ends_with(b"}")) {
        return None;
    }
    let chunk: Value = serde_json::from_slice(bytes).ok()?;
    let error = chunk.get("error")?;
    let code = error.get("code").and_then(Value::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = match error.get("status") {
        Some(Value::String(s)) => s.clone(),
        None => "undefined".to_owned(),
        Some(other) => other.to_string(),
    };
    let json = pi_core::json::to_string(&pi_core::validate::js_key_order(&chunk)).ok()?;
    Some(format!("got status: {status}. {json}"))
}

/// The message the Google SDK gives an HTTP error: the JSON error body as received, or for a
/// non-JSON body an error object with the text, the code and the status text.
pub fn http_error_message(status: u16, content_type: Option<&str>, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let is_json = content_type.is_some_and(|t| t.contains("application/json"));
    if is_json {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            return pi_core::json::to_string(&pi_core::validate::js_key_order(&value))
                .unwrap_or_default();
        }
    }
    let status_text = super::status::status_text(status);
    let wrapped =
        serde_json::json!({"error": {"message": text, "code": status, "status": status_text}});
    pi_core::json::to_string(&wrapped).unwrap_or_default()
}
