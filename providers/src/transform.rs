//! Preparing a conversation for a model that may not be the one that wrote it (pi-ai
//! `transformMessages`): foreign thinking is dropped, foreign signatures are dropped, tool-call
//! ids are normalised for the target API, images are replaced for text-only models, failed turns
//! are dropped, and tool calls left without a result get a synthetic one.

use std::borrow::Cow;
use std::collections::BTreeMap;

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

fn has_image(content: &[ContentBlock]) -> bool {
    content.iter().any(|b| matches!(b, ContentBlock::Image(_)))
}

/// Whether [`transform_assistant`] would give `message` back as it is: the model's own
/// message with no empty unsigned thinking to drop.
fn kept_as_is(message: &AssistantMessage, model: &Model) -> bool {
    same_model(message, model)
        && !message.content.iter().any(|block| {
            matches!(block, ContentBlock::Thinking(t)
                if t.redacted != Some(true)
                    && t.thinking_signature.as_deref().is_none_or(str::is_empty)
                    && t.thinking.trim().is_empty())
        })
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
            // Pi 1.5.2 drops another model's thinking (0.73.1 sent it as text).
            ContentBlock::Thinking(_) if !same => None,
            ContentBlock::Thinking(t) if t.thinking.trim().is_empty() => None,
            ContentBlock::Thinking(_) => Some(block.clone()),
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
/// the message that made the call); `now` stamps the synthetic results. A message the
/// transformation leaves as it is is borrowed, not copied: a conversation is transformed again
/// for every call, and most of it is unchanged.
pub fn transform_messages<'a>(
    messages: &'a [Message],
    model: &Model,
    normalize: &dyn Fn(&str, &AssistantMessage) -> String,
    now: u64,
) -> Vec<Cow<'a, Message>> {
    let text_only = !model.input.iter().any(|i| i == "image");
    let mut id_map: BTreeMap<String, String> = BTreeMap::new();
    let transformed: Vec<Cow<'a, Message>> = messages
        .iter()
        .map(|message| match message {
            Message::User(u) => match &u.content {
                UserContent::Blocks(blocks) if text_only && has_image(blocks) => {
                    let mut u = u.clone();
                    u.content = UserContent::Blocks(replace_images(blocks, USER_IMAGE_PLACEHOLDER));
                    Cow::Owned(Message::User(u))
                }
                _ => Cow::Borrowed(message),
            },
            Message::ToolResult(r) => {
                let images = text_only && has_image(&r.content);
                let id = id_map.get(&r.tool_call_id);
                if !images && id.is_none() {
                    return Cow::Borrowed(message);
                }
                let mut r = r.clone();
                if images {
                    r.content = replace_images(&r.content, TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = id {
                    r.tool_call_id = id.clone();
                }
                Cow::Owned(Message::ToolResult(r))
            }
            Message::Assistant(a) if kept_as_is(a, model) => Cow::Borrowed(message),
            Message::Assistant(a) => Cow::Owned(Message::Assistant(transform_assistant(
                a,
                model,
                normalize,
                &mut id_map,
            ))),
        })
        .collect();

    // The tool calls of the last assistant message kept (its place in `out`) wait for their
    // results until the next assistant or user message; calls left unanswered then get one.
    let mut out: Vec<Cow<'a, Message>> = Vec::with_capacity(transformed.len());
    let mut pending: Option<usize> = None;
    let flush = |out: &mut Vec<Cow<'a, Message>>, pending: &mut Option<usize>| {
        let Some(at) = pending.take() else {
            return;
        };
        let Message::Assistant(caller) = &*out[at] else {
            return;
        };
        let answered = |id: &str| {
            out[at + 1..]
                .iter()
                .any(|m| matches!(&**m, Message::ToolResult(r) if r.tool_call_id == id))
        };
        let missing: Vec<(String, String)> = caller
            .tool_calls()
            .filter(|c| !answered(&c.id))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        for (id, name) in missing {
            out.push(Cow::Owned(Message::ToolResult(ToolResultMessage {
                tool_call_id: id,
                tool_name: name,
                content: vec![ContentBlock::text("No result provided")],
                details: None,
                usage: None,
                is_error: true,
                duration_ms: None,
                timestamp: now,
                extra: Extra::new(),
            })));
        }
    };
    for message in transformed {
        match &*message {
            Message::Assistant(a) => {
                flush(&mut out, &mut pending);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                if a.tool_calls().next().is_some() {
                    pending = Some(out.len());
                }
                out.push(message);
            }
            Message::ToolResult(_) => out.push(message),
            Message::User(_) => {
                flush(&mut out, &mut pending);
                out.push(message);
            }
        }
    }
    flush(&mut out, &mut pending);
    out
}
