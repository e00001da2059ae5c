//! The coding agent's view of the transcript for the model (pi-coding-agent `convertToLlm`):
//! its own roles become user messages with Pi's wrapper texts.

use std::borrow::Borrow;

use crate::message::{
    AgentMessage, BashExecutionMessage, ContentBlock, Extra, Message, UserContent, UserMessage,
};

use super::config::AgentHooks;

/// Put before a compaction summary.
pub const COMPACTION_SUMMARY_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Put after a compaction summary.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Put before a branch summary.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Put after a branch summary (no newline before it, unlike the compaction suffix).
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// How a user's `!` command reads to the model.
pub fn bash_execution_to_text(message: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", message.command);
    if message.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", message.output));
    }
    if message.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = message.exit_code.value().filter(|c| **c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if let (true, Some(path)) = (message.truncated, &message.full_output_path) {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

fn user(content: Vec<ContentBlock>, timestamp: u64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Blocks(content),
        timestamp,
        extra: Extra::new(),
    })
}

/// The coding agent's converter: every message the model should see, in order.
pub fn convert_to_llm<M: Borrow<AgentMessage>>(messages: &[M]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|message| match message.borrow() {
            AgentMessage::BashExecution(m) if m.exclude_from_context == Some(true) => None,
            AgentMessage::BashExecution(m) => Some(user(
                vec![ContentBlock::text(bash_execution_to_text(m))],
                m.timestamp,
            )),
            AgentMessage::Custom(m) => {
                let content = match &m.content {
                    UserContent::Text(text) => vec![ContentBlock::text(text.clone())],
                    UserContent::Blocks(blocks) => blocks.clone(),
                };
                Some(user(content, m.timestamp))
            }
            AgentMessage::BranchSummary(m) => Some(user(
                vec![ContentBlock::text(format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    m.summary
                ))],
                m.timestamp,
            )),
            AgentMessage::CompactionSummary(m) => Some(user(
                vec![ContentBlock::text(format!(
                    "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                    m.summary
                ))],
                m.timestamp,
            )),
            other => other.as_llm(),
        })
        .collect()
}

/// What a blocked image becomes (the coding agent's setting `images.blockImages`).
pub const IMAGE_BLOCKED: &str = "Image reading is disabled.";

/// The coding agent's image blocking: in user messages and tool results that hold images, each
/// image becomes the text [`IMAGE_BLOCKED`], and that text is not repeated back to back.
pub fn block_images(messages: Vec<Message>) -> Vec<Message> {
    fn blocked(content: &[ContentBlock]) -> Option<Vec<ContentBlock>> {
        if !content.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
            return None;
        }
        let mapped: Vec<ContentBlock> = content
            .iter()
            .map(|block| match block {
                ContentBlock::Image(_) => ContentBlock::text(IMAGE_BLOCKED),
                other => other.clone(),
            })
            .collect();
        let is_notice =
            |b: &ContentBlock| matches!(b, ContentBlock::Text(t) if t.text == IMAGE_BLOCKED);
        Some(
            mapped
                .iter()
                .enumerate()
                .filter(|(i, block)| !(is_notice(block) && *i > 0 && is_notice(&mapped[i - 1])))
                .map(|(_, block)| block.clone())
                .collect(),
        )
    }
    messages
        .into_iter()
        .map(|message| match message {
            Message::User(mut m) => {
                if let UserContent::Blocks(blocks) = &m.content {
                    if let Some(content) = blocked(blocks) {
                        m.content = UserContent::Blocks(content);
                    }
                }
                Message::User(m)
            }
            Message::ToolResult(mut m) => {
                if let Some(content) = blocked(&m.content) {
                    m.content = content;
                }
                Message::ToolResult(m)
            }
            other => other,
        })
        .collect()
}

/// Hooks with the coding agent's converter and no tool hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodingAgentHooks {
    /// The setting `images.blockImages`: the model sees a notice instead of each image.
    pub block_images: bool,
}

impl AgentHooks for CodingAgentHooks {
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        let converted = convert_to_llm(messages);
        Ok(if self.block_images {
            block_images(converted)
        } else {
            converted
        })
    }

    fn converts_each_message_alone(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> Message {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn blocked_images_become_one_notice_per_run_and_other_messages_stay() {
        let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        let notice = json!({"type": "text", "text": IMAGE_BLOCKED});
        let messages = vec![
            message(
                json!({"role": "user", "content": [{"type": "text", "text": "a"}, image, image,
                {"type": "text", "text": IMAGE_BLOCKED}, {"type": "text", "text": "b"}, image], "timestamp": 1}),
            ),
            message(
                json!({"role": "toolResult", "toolCallId": "c", "toolName": "read",
                "content": [{"type": "text", "text": "Read image file"}, image], "isError": false, "timestamp": 2}),
            ),
            // Without images nothing changes, a repeated notice included.
            message(json!({"role": "user", "content": [notice, notice], "timestamp": 3})),
            message(json!({"role": "user", "content": "plain", "timestamp": 4})),
        ];
        let blocked = serde_json::to_value(block_images(messages)).unwrap_or_default();
        assert_eq!(
            blocked,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "a"}, notice,
                    {"type": "text", "text": "b"}, notice], "timestamp": 1},
                {"role": "toolResult", "toolCallId": "c", "toolName": "read",
                    "content": [{"type": "text", "text": "Read image file"}, notice], "isError": false, "timestamp": 2},
                {"role": "user", "content": [notice, notice], "timestamp": 3},
                {"role": "user", "content": "plain", "timestamp": 4}
            ])
        );
    }
}
