//! Snapshots of an assistant message while it streams, cheap enough to take at every delta.
//!
//! Pi emits a `message_update` for every delta, each carrying the message as it is at that point.
//! Copying the whole message into every event would make a response of `n` deltas cost O(n²).
//! Here text grows as a persistent chain of pieces ([`TextChain`]): appending allocates one node
//! and a snapshot is a pointer, so taking one costs O(number of blocks), not O(length). The text
//! is only joined when a snapshot is serialized or turned into a plain [`AssistantMessage`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{AssistantMessage, ContentBlock, Extra, ThinkingContent, ToolCall};
use crate::partial_json::parse_streaming_json;

/// Append-only text shared between snapshots: each append adds one node pointing at the text so far.
#[derive(Clone, Debug, Default)]
pub struct TextChain(Option<Arc<Piece>>);

#[derive(Debug)]
struct Piece {
    prev: Option<Arc<Piece>>,
    text: Box<str>,
    len: usize,
}

impl Drop for Piece {
    // Unlink iteratively: a chain of a million deltas must not recurse a million frames deep.
    fn drop(&mut self) {
        let mut next = self.prev.take();
        while let Some(node) = next {
            match Arc::try_unwrap(node) {
                Ok(mut piece) => next = piece.prev.take(),
                Err(_) => break,
            }
        }
    }
}

impl TextChain {
    /// A chain holding `text` as its only piece.
    pub fn new(text: &str) -> Self {
        TextChain::default().append(text)
    }

    /// The chain with `text` appended; `self` (and every snapshot holding it) is unchanged.
    pub fn append(&self, text: &str) -> Self {
        if text.is_empty() {
            return self.clone();
        }
        let len = self.len() + text.len();
        TextChain(Some(Arc::new(Piece {
            prev: self.0.clone(),
            text: text.into(),
            len,
        })))
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.len)
    }

    /// True when no text has been appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole text.
    pub fn join(&self) -> String {
        let mut pieces = Vec::new();
        let mut cursor = self.0.as_deref();
        while let Some(piece) = cursor {
            pieces.push(&*piece.text);
            cursor = piece.prev.as_deref();
        }
        let mut out = String::with_capacity(self.len());
        for piece in pieces.iter().rev() {
            out.push_str(piece);
        }
        out
    }
}

/// One content block of a streaming message.
#[derive(Clone, Debug)]
pub enum PartialBlock {
    /// A block that no longer changes (ended, or read from JSON).
    Fixed(Arc<ContentBlock>),
    /// A text block still receiving deltas.
    Text {
        text: TextChain,
        text_signature: Option<String>,
        extra: Extra,
    },
    /// A thinking block still receiving deltas.
    Thinking {
        thinking: TextChain,
        signature: Option<TextChain>,
        redacted: Option<bool>,
        extra: Extra,
    },
    /// A tool call whose argument JSON is still arriving; `arguments` is parsed when needed.
    ToolCall {
        id: String,
        name: String,
        json: TextChain,
        thought_signature: Option<String>,
        extra: Extra,
    },
}

impl PartialBlock {
    /// The block as a plain content block (joins text, parses streaming arguments).
    pub fn to_block(&self) -> ContentBlock {
        match self {
            PartialBlock::Fixed(block) => (**block).clone(),
            PartialBlock::Text {
                text,
                text_signature,
                extra,
            } => ContentBlock::Text(crate::message::TextContent {
                text: text.join(),
                text_signature: text_signature.clone(),
                extra: extra.clone(),
            }),
            PartialBlock::Thinking {
                thinking,
                signature,
                redacted,
                extra,
            } => ContentBlock::Thinking(ThinkingContent {
                thinking: thinking.join(),
                thinking_signature: signature.as_ref().map(TextChain::join),
                redacted: *redacted,
                extra: extra.clone(),
            }),
            PartialBlock::ToolCall {
                id,
                name,
                json,
                thought_signature,
                extra,
            } => ContentBlock::ToolCall(ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: parse_streaming_json(&json.join()),
                thought_signature: thought_signature.clone(),
                extra: extra.clone(),
            }),
        }
    }

    /// Starts streaming `block`: text and thinking keep growing, a tool call collects its JSON.
    pub fn open(block: ContentBlock) -> Self {
        match block {
            ContentBlock::Text(t) => PartialBlock::Text {
                text: TextChain::new(&t.text),
                text_signature: t.text_signature,
                extra: t.extra,
            },
            ContentBlock::Thinking(t) => PartialBlock::Thinking {
                thinking: TextChain::new(&t.thinking),
                signature: t.thinking_signature.as_deref().map(TextChain::new),
                redacted: t.redacted,
                extra: t.extra,
            },
            ContentBlock::ToolCall(call) => PartialBlock::ToolCall {
                id: call.id,
                name: call.name,
                json: TextChain::default(),
                thought_signature: call.thought_signature,
                extra: call.extra,
            },
            other => PartialBlock::Fixed(Arc::new(other)),
        }
    }
}

/// An assistant message at one instant of its stream. Cloning is O(number of blocks). The
/// default (an empty message) stands in for a snapshot an event read from JSON did not carry.
#[derive(Clone, Debug, Default)]
pub struct PartialMessage {
    /// Everything but `content` (content is always empty here).
    head: Arc<AssistantMessage>,
    blocks: Arc<Vec<PartialBlock>>,
}

impl PartialMessage {
    /// A snapshot of `message`, every block fixed.
    pub fn from_message(mut message: AssistantMessage) -> Self {
        let blocks = std::mem::take(&mut message.content)
            .into_iter()
            .map(|b| PartialBlock::Fixed(Arc::new(b)))
            .collect();
        PartialMessage {
            head: Arc::new(message),
            blocks: Arc::new(blocks),
        }
    }

    /// The message without its content.
    pub fn head(&self) -> &AssistantMessage {
        &self.head
    }

    /// Changes the head (usage, stop reason, ...); copies it only if a snapshot still shares it.
    pub fn head_mut(&mut self) -> &mut AssistantMessage {
        Arc::make_mut(&mut self.head)
    }

    /// The blocks so far.
    pub fn blocks(&self) -> &[PartialBlock] {
        &self.blocks
    }

    /// Changes the block list; copies the (short) list of block handles if it is shared.
    pub fn blocks_mut(&mut self) -> &mut Vec<PartialBlock> {
        Arc::make_mut(&mut self.blocks)
    }

    /// The plain message this snapshot stands for.
    pub fn to_message(&self) -> AssistantMessage {
        let mut message = (*self.head).clone();
        message.content = self.blocks.iter().map(PartialBlock::to_block).collect();
        message
    }
}

impl PartialEq for PartialMessage {
    fn eq(&self, other: &Self) -> bool {
        self.to_message() == other.to_message()
    }
}

impl Serialize for PartialMessage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            role: &'static str,
            #[serde(flatten)]
            message: &'a AssistantMessage,
        }
        Tagged {
            role: "assistant",
            message: &self.to_message(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PartialMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match crate::message::Message::deserialize(deserializer)? {
            crate::message::Message::Assistant(message) => {
                Ok(PartialMessage::from_message(message))
            }
            _ => Err(D::Error::custom("expected an assistant message")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_do_not_see_later_appends() {
        let a = TextChain::new("Hello");
        let b = a.append(" world");
        assert_eq!(a.join(), "Hello");
        assert_eq!(b.join(), "Hello world");
        assert_eq!(b.len(), 11);
    }

    #[test]
    fn a_long_chain_drops_without_recursion() {
        let mut chain = TextChain::default();
        for _ in 0..1_000_000 {
            chain = chain.append("x");
        }
        assert_eq!(chain.len(), 1_000_000);
        drop(chain);
    }
}
