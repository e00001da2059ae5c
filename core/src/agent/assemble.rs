//! Builds the streaming assistant message from a decoder's [`StreamEvent`]s and turns each event
//! into Pi's [`AssistantMessageEvent`] carrying the snapshot after it.

use std::sync::Arc;

use crate::event::AssistantMessageEvent;
use crate::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall,
};
use crate::partial::{PartialBlock, PartialMessage, TextChain};

use super::contract::{Patch, StreamEvent};

/// What applying one stream event means for the loop.
#[derive(Debug)]
pub enum Applied {
    /// The stream started: emit `message_start` with this message.
    Started(AssistantMessage),
    /// A content event: emit `message_update`.
    Update(AssistantMessageEvent),
    /// Nothing to emit (a patch, or a delta before `start`, which Pi drops).
    Silent,
    /// The response is complete: `done` or `error` with the final message.
    Finished(AssistantMessage),
}

/// The message being streamed; `None` until the `start` event.
#[derive(Debug, Default)]
pub struct Assembly {
    partial: Option<PartialMessage>,
}

/// A stream event that does not fit the message so far.
pub type AssembleError = String;

impl Assembly {
    /// Whether `start` was seen.
    pub fn started(&self) -> bool {
        self.partial.is_some()
    }

    /// The message so far.
    pub fn snapshot(&self) -> Option<&PartialMessage> {
        self.partial.as_ref()
    }

    /// Whether `event` fits the stream so far, without applying it.
    pub fn check(&self, event: &StreamEvent) -> Result<(), AssembleError> {
        let Some(partial) = &self.partial else {
            return Ok(());
        };
        let blocks = partial.blocks();
        let open = |index: usize, kind: &str| -> Result<(), AssembleError> {
            let fits = matches!(
                (blocks.get(index), kind),
                (Some(PartialBlock::Text { .. }), "text")
                    | (Some(PartialBlock::Thinking { .. }), "thinking")
                    | (Some(PartialBlock::ToolCall { .. }), "tool call")
            );
            if fits {
                Ok(())
            } else {
                Err(not_open(index, kind))
            }
        };
        let at_end = |index: usize| -> Result<(), AssembleError> {
            if index == blocks.len() {
                Ok(())
            } else {
                Err(format!(
                    "a block must start at the end of the content ({}), not at {index}",
                    blocks.len()
                ))
            }
        };
        match event {
            StreamEvent::Start { .. } => Err("the stream already started".into()),
            StreamEvent::TextStart { content_index, .. }
            | StreamEvent::ThinkingStart { content_index, .. }
            | StreamEvent::ToolCallStart { content_index, .. } => at_end(*content_index),
            StreamEvent::TextDelta { content_index, .. }
            | StreamEvent::TextEnd { content_index, .. } => open(*content_index, "text"),
            StreamEvent::ThinkingDelta { content_index, .. }
            | StreamEvent::ThinkingEnd { content_index, .. } => open(*content_index, "thinking"),
            StreamEvent::ToolCallDelta { content_index, .. }
            | StreamEvent::ToolCallEnd { content_index, .. } => open(*content_index, "tool call"),
            StreamEvent::Patch(patch) => match patch {
                Patch::ToolCallId { content_index, .. }
                | Patch::ToolCallName { content_index, .. }
                | Patch::ThoughtSignature { content_index, .. } => {
                    let fits = match blocks.get(*content_index) {
                        Some(PartialBlock::ToolCall { .. }) => true,
                        Some(PartialBlock::Fixed(block)) => {
                            matches!(**block, ContentBlock::ToolCall(_))
                        }
                        _ => false,
                    };
                    if fits {
                        Ok(())
                    } else {
                        Err(not_open(*content_index, "tool call"))
                    }
                }
                Patch::ThinkingSignatureDelta { content_index, .. }
                | Patch::ThinkingSignature { content_index, .. } => {
                    open(*content_index, "thinking")
                }
                Patch::TextSignature { content_index, .. } => open(*content_index, "text"),
                _ => Ok(()),
            },
            StreamEvent::Done { .. } | StreamEvent::Error { .. } => Ok(()),
        }
    }

    /// Applies `event`; on error nothing has changed.
    pub fn apply(&mut self, event: StreamEvent) -> Result<Applied, AssembleError> {
        self.check(&event)?;
        let partial = match (&mut self.partial, event) {
            (_, StreamEvent::Done { message, .. }) => return Ok(Applied::Finished(message)),
            (_, StreamEvent::Error { error, .. }) => return Ok(Applied::Finished(error)),
            (Some(_), StreamEvent::Start { .. }) => return Err("the stream already started".into()),
            (slot @ None, StreamEvent::Start { mut partial }) => {
                // Pi 1.5's providers start every message as `pending`; the final message (the
                // decoder's own, on `done`/`error`) says why it ended.
                partial.stop_reason = StopReason::Pending;
                let started = partial.clone();
                *slot = Some(PartialMessage::from_message(partial));
                return Ok(Applied::Started(started));
            }
            (None, _) => return Ok(Applied::Silent),
            (Some(partial), event) => (partial, event),
        };
        let (partial, event) = partial;
        match event {
            StreamEvent::Patch(patch) => {
                apply_patch(partial, patch)?;
                Ok(Applied::Silent)
            }
            StreamEvent::TextStart {
                content_index,
                block,
            } => {
                open_block(partial, content_index, ContentBlock::Text(block))?;
                Ok(Applied::Update(AssistantMessageEvent::TextStart {
                    content_index,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ThinkingStart {
                content_index,
                block,
            } => {
                open_block(partial, content_index, ContentBlock::Thinking(block))?;
                Ok(Applied::Update(AssistantMessageEvent::ThinkingStart {
                    content_index,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ToolCallStart {
                content_index,
                block,
            } => {
                let (id, tool_name) = (block.id.clone(), block.name.clone());
                open_block(partial, content_index, ContentBlock::ToolCall(block))?;
                Ok(Applied::Update(AssistantMessageEvent::ToolCallStart {
                    content_index,
                    id,
                    tool_name,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::TextDelta {
                content_index,
                delta,
            } => {
                match block_mut(partial, content_index)? {
                    PartialBlock::Text { text, .. } => *text = text.append(&delta),
                    _ => return Err(not_open(content_index, "text")),
                }
                Ok(Applied::Update(AssistantMessageEvent::TextDelta {
                    content_index,
                    delta,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ThinkingDelta {
                content_index,
                delta,
            } => {
                match block_mut(partial, content_index)? {
                    PartialBlock::Thinking { thinking, .. } => *thinking = thinking.append(&delta),
                    _ => return Err(not_open(content_index, "thinking")),
                }
                Ok(Applied::Update(AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ToolCallDelta {
                content_index,
                delta,
            } => {
                match block_mut(partial, content_index)? {
                    PartialBlock::ToolCall { json, .. } => *json = json.append(&delta),
                    _ => return Err(not_open(content_index, "tool call")),
                }
                Ok(Applied::Update(AssistantMessageEvent::ToolCallDelta {
                    content_index,
                    delta,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::TextEnd {
                content_index,
                content,
            } => {
                let block = match block_mut(partial, content_index)? {
                    PartialBlock::Text {
                        text_signature,
                        extra,
                        ..
                    } => ContentBlock::Text(TextContent {
                        text: content.clone(),
                        text_signature: text_signature.clone(),
                        extra: extra.clone(),
                    }),
                    _ => return Err(not_open(content_index, "text")),
                };
                close_block(partial, content_index, block);
                Ok(Applied::Update(AssistantMessageEvent::TextEnd {
                    content_index,
                    content,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ThinkingEnd {
                content_index,
                content,
            } => {
                let block = match block_mut(partial, content_index)? {
                    PartialBlock::Thinking {
                        signature,
                        redacted,
                        extra,
                        ..
                    } => ContentBlock::Thinking(ThinkingContent {
                        thinking: content.clone(),
                        thinking_signature: signature.as_ref().map(TextChain::join),
                        redacted: *redacted,
                        extra: extra.clone(),
                    }),
                    _ => return Err(not_open(content_index, "thinking")),
                };
                close_block(partial, content_index, block);
                Ok(Applied::Update(AssistantMessageEvent::ThinkingEnd {
                    content_index,
                    content,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::ToolCallEnd {
                content_index,
                tool_call,
            } => {
                if !matches!(
                    block_mut(partial, content_index)?,
                    PartialBlock::ToolCall { .. }
                ) {
                    return Err(not_open(content_index, "tool call"));
                }
                close_block(
                    partial,
                    content_index,
                    ContentBlock::ToolCall(tool_call.clone()),
                );
                Ok(Applied::Update(AssistantMessageEvent::ToolCallEnd {
                    content_index,
                    tool_call,
                    partial: partial.clone(),
                }))
            }
            StreamEvent::Start { .. } | StreamEvent::Done { .. } | StreamEvent::Error { .. } => {
                Err("unreachable stream event".into())
            }
        }
    }
}

fn not_open(index: usize, kind: &str) -> AssembleError {
    format!("content block {index} is not an open {kind} block")
}

fn open_block(
    partial: &mut PartialMessage,
    index: usize,
    block: ContentBlock,
) -> Result<(), AssembleError> {
    let len = partial.blocks().len();
    if index != len {
        return Err(format!(
            "a block must start at the end of the content ({len}), not at {index}"
        ));
    }
    partial.blocks_mut().push(PartialBlock::open(block));
    Ok(())
}

fn close_block(partial: &mut PartialMessage, index: usize, block: ContentBlock) {
    if let Some(slot) = partial.blocks_mut().get_mut(index) {
        *slot = PartialBlock::Fixed(Arc::new(block));
    }
}

fn block_mut(
    partial: &mut PartialMessage,
    index: usize,
) -> Result<&mut PartialBlock, AssembleError> {
    let len = partial.blocks().len();
    partial
        .blocks_mut()
        .get_mut(index)
        .ok_or_else(|| format!("content block {index} does not exist ({len} blocks)"))
}

fn apply_patch(partial: &mut PartialMessage, patch: Patch) -> Result<(), AssembleError> {
    match patch {
        Patch::Usage(usage) => partial.head_mut().usage = usage,
        Patch::StopReason(reason) => partial.head_mut().stop_reason = reason,
        Patch::ErrorMessage(text) => partial.head_mut().error_message = Some(text),
        Patch::ResponseId(id) => partial.head_mut().response_id = Some(id),
        Patch::ResponseModel(model) => partial.head_mut().response_model = Some(model),
        // The session's, not the message's (the machine keeps it).
        Patch::Thread(_) => {}
        // The extensions' (the session tells them), not the message's.
        Patch::ProviderResponse { .. } | Patch::ProviderData(_) => {}
        Patch::ToolCallId { content_index, id } => {
            tool_call_field(partial, content_index, |call| *call.id = id)?
        }
        Patch::ToolCallName {
            content_index,
            name,
        } => tool_call_field(partial, content_index, |call| *call.name = name)?,
        Patch::ThoughtSignature {
            content_index,
            signature,
        } => tool_call_field(partial, content_index, |call| {
            *call.thought_signature = Some(signature)
        })?,
        Patch::ThinkingSignatureDelta {
            content_index,
            delta,
        } => match block_mut(partial, content_index)? {
            PartialBlock::Thinking { signature, .. } => {
                let so_far = signature.take().unwrap_or_default();
                *signature = Some(so_far.append(&delta));
            }
            _ => return Err(not_open(content_index, "thinking")),
        },
        Patch::ThinkingSignature {
            content_index,
            signature,
        } => match block_mut(partial, content_index)? {
            PartialBlock::Thinking {
                signature: slot, ..
            } => {
                *slot = Some(TextChain::default().append(&signature));
            }
            _ => return Err(not_open(content_index, "thinking")),
        },
        Patch::TextSignature {
            content_index,
            signature,
        } => match block_mut(partial, content_index)? {
            PartialBlock::Text { text_signature, .. } => *text_signature = Some(signature),
            _ => return Err(not_open(content_index, "text")),
        },
    }
    Ok(())
}

/// Edits an open tool call's id, name or signature (fixed tool calls are edited through a copy).
fn tool_call_field(
    partial: &mut PartialMessage,
    index: usize,
    edit: impl FnOnce(&mut ToolCallFields<'_>),
) -> Result<(), AssembleError> {
    match block_mut(partial, index)? {
        PartialBlock::ToolCall {
            id,
            name,
            thought_signature,
            ..
        } => {
            edit(&mut ToolCallFields {
                id,
                name,
                thought_signature,
            });
            Ok(())
        }
        PartialBlock::Fixed(block) => match Arc::make_mut(block) {
            ContentBlock::ToolCall(ToolCall {
                id,
                name,
                thought_signature,
                ..
            }) => {
                edit(&mut ToolCallFields {
                    id,
                    name,
                    thought_signature,
                });
                Ok(())
            }
            _ => Err(not_open(index, "tool call")),
        },
        _ => Err(not_open(index, "tool call")),
    }
}

/// The editable fields of a tool call, wherever it is stored.
struct ToolCallFields<'a> {
    id: &'a mut String,
    name: &'a mut String,
    thought_signature: &'a mut Option<String>,
}
