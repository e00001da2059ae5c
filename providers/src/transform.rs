//! Preparing a conversation for a model that may not be the one that wrote it (pi-ai
//! `transformMessages`): foreign thinking becomes text, foreign signatures are dropped, tool-call
//! ids are normalised for the target API, images are replaced for text-only models, failed turns
//! are dropped, and tool calls left without a result get a synthetic one.

use std::collections::{BTreeMap, BTreeSet};

use pi_core::message::{
    AssistantMessage, ContentBlock, Extra, Message, StopReason, TextContent, ToolCall,
    ToolResultMessage, UserContent,
};
use pi_core::model::Model;

const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

fn replace_images(content: &[ContentBlock], placeholder: &str) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(content.len());
    let mut previous_was_placeholder = false;
    for block in content {
        if let ContentBlock::Image(_) = block {
            if !previous_was_placeholder {
                out.push(ContentBlock::text(placeholder));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder = matches!(block, ContentBlock::Text(t) if t.text == placeholder);
        out.push(block.clone());
    }
    out
}

fn same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider && message.api == model.api && message.model == model.id
}

fn transform_assistant(
    message: &AssistantMessage,
    model: &Model,
    normalize: &dyn Fn(&str, &AssistantMessage) -> String,
    id_map: &mut BTreeMap<String, String>,
) -> AssistantMessage {
    let same = same_model(message, model);
    let content = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking(t) if t.redacted == Some(true) => same.then(|| block.clone()),
            ContentBlock::Thinking(t)
                if same
                    && t.thinking_signature
                        .as_deref()
                        .is_some_and(|s| !s.is_empty()) =>
            {
                Some(block.clone())
            }
            ContentBlock::Thinking(t) if t.thinking.trim().is_empty() => None,
            ContentBlock::Thinking(_) if same => Some(block.clone()),
            ContentBlock::Thinking(t) => Some(ContentBlock::text(t.thinking.clone())),
            ContentBlock::Text(_) if same => Some(block.clone()),
            ContentBlock::Text(t) => Some(ContentBlock::Text(TextContent {
                text: t.text.clone(),
                ..TextContent::default()
            })),
            ContentBlock::ToolCall(call) if !same => {
                let id = normalize(&call.id, message);
                if id != call.id {
                    id_map.insert(call.id.clone(), id.clone());
                }
                Some(ContentBlock::ToolCall(ToolCall {
                    id,
                    thought_signature: None,
                    ..call.clone()
                }))
            }
            other => Some(other.clone()),
        })
        .collect();
    AssistantMessage {
        content,
        ..message.clone()
    }
}

/// Pi's `transformMessages` for `model`, with the API's tool-call id normaliser (given the id and
/// the message that made the call); `now` stamps the synthetic results.
pub fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize: &dyn Fn(&str, &AssistantMessage) -> String,
    now: u64,
) -> Vec<Message> {
    let text_only = !model.input.iter().any(|i| i == "image");
    let mut id_map: BTreeMap<String, String> = BTreeMap::new();
    let transformed: Vec<Message> = messages
        .iter()
        .map(|message| match message {
            Message::User(u) => {
                let mut u = u.clone();
                if let (true, UserContent::Blocks(blocks)) = (text_only, &u.content) {
                    u.content = UserContent::Blocks(replace_images(blocks, USER_IMAGE_PLACEHOLDER));
                }
                Message::User(u)
            }
            Message::ToolResult(r) => {
                let mut r = r.clone();
                if text_only {
                    r.content = replace_images(&r.content, TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = id_map.get(&r.tool_call_id) {
                    r.tool_call_id = id.clone();
                }
                Message::ToolResult(r)
            }
            Message::Assistant(a) => {
                Message::Assistant(transform_assistant(a, model, normalize, &mut id_map))
            }
        })
        .collect();

    let mut out = Vec::with_capacity(transformed.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: BTreeSet<String> = BTreeSet::new();
    let flush = |out: &mut Vec<Message>,
                 pending: &mut Vec<(String, String)>,
                 answered: &mut BTreeSet<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                out.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![ContentBlock::text("No result provided")],
                    details: None,
                    is_error: true,
                    timestamp: now,
                    extra: Extra::new(),
                }));
            }
        }
        answered.clear();
    };
    for message in transformed {
        match &message {
            Message::Assistant(a) => {
                flush(&mut out, &mut pending, &mut answered);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let calls: Vec<(String, String)> = a
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                if !calls.is_empty() {
                    pending = calls;
                    answered.clear();
                }
                out.push(message);
            }
            Message::ToolResult(r) => {
                answered.insert(r.tool_call_id.clone());
                out.push(message);
            }
            Message::User(_) => {
                flush(&mut out, &mut pending, &mut answered);
                out.push(message);
            }
        }
    }
    flush(&mut out, &mut pending, &mut answered);
    out
}
