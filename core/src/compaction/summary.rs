//! The summary requests, byte for byte as Pi sends them, and the summaries made of the answers.

use crate::agent::convert::convert_to_llm;
use crate::agent::ModelRequest;
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, UserMessage,
};
use crate::model::{Model, ThinkingLevel};

use super::files::{format_file_operations, FileOps};

/// The system prompt of every summary request.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str =
    include_str!("prompts/summarization_system_prompt.txt");
/// Instructions for a first summary.
pub const SUMMARIZATION_PROMPT: &str = include_str!("prompts/summarization_prompt.txt");
/// Instructions for updating an earlier summary.
pub const UPDATE_SUMMARIZATION_PROMPT: &str =
    include_str!("prompts/update_summarization_prompt.txt");
/// Instructions for summarising the beginning of a turn that is cut.
pub const TURN_PREFIX_SUMMARIZATION_PROMPT: &str =
    include_str!("prompts/turn_prefix_summarization_prompt.txt");

const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// JavaScript's `text.slice(0, n)` (UTF-16 code units; a split surrogate pair is dropped, as the
/// request's sanitising would drop it).
fn js_prefix(text: &str, units: usize) -> &str {
    let mut count = 0;
    for (i, c) in text.char_indices() {
        if count + c.len_utf16() > units {
            return &text[..i];
        }
        count += c.len_utf16();
    }
    text
}

fn truncate_for_summary(text: &str) -> String {
    let len = super::tokens::js_len(text) as usize;
    if len <= TOOL_RESULT_MAX_CHARS {
        return text.to_owned();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        js_prefix(text, TOOL_RESULT_MAX_CHARS),
        len - TOOL_RESULT_MAX_CHARS
    )
}

fn texts<'a>(blocks: impl IntoIterator<Item = &'a ContentBlock>) -> Vec<&'a str> {
    blocks
        .into_iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

/// The conversation as the summariser reads it: `[User]: …`, `[Assistant thinking]: …`,
/// `[Assistant]: …`, `[Assistant tool calls]: name(k=v, …)`, `[Tool result]: …` (cut at 2,000
/// characters), separated by blank lines.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts = Vec::new();
    for message in messages {
        match message {
            Message::User(m) => {
                let text = match &m.content {
                    crate::message::UserContent::Text(t) => t.clone(),
                    crate::message::UserContent::Blocks(b) => texts(b).concat(),
                };
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            Message::Assistant(m) => {
                let mut text = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for block in &m.content {
                    match block {
                        ContentBlock::Text(t) => text.push(t.text.as_str()),
                        ContentBlock::Thinking(t) => thinking.push(t.thinking.as_str()),
                        ContentBlock::ToolCall(c) => {
                            calls.push(format!("{}({})", c.name, call_arguments(&c.arguments)))
                        }
                        ContentBlock::Image(_) => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !text.is_empty() {
                    parts.push(format!("[Assistant]: {}", text.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Message::ToolResult(m) => {
                let text = texts(&m.content).concat();
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
                }
            }
        }
    }
    parts.join("\n\n")
}

/// `k=<JSON of v>` for each argument, in JavaScript's key order, joined by `, `.
fn call_arguments(arguments: &serde_json::Value) -> String {
    let ordered = crate::validate::js_key_order(arguments);
    let Some(map) = ordered.as_object() else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| format!("{k}={}", crate::json::to_string(v).unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A summarisation call: Pi's summariser system prompt and one user message.
pub(super) fn request(
    model: &Model,
    prompt: String,
    max_tokens: u64,
    reasoning: Option<ThinkingLevel>,
    now: u64,
) -> ModelRequest {
    ModelRequest {
        model: model.clone(),
        system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::User(UserMessage::from_text(
            prompt,
            Vec::new(),
            now,
        ))]
        .into(),
        tools: Vec::new(),
        reasoning,
        session_id: None,
        max_tokens: Some(max_tokens),
    }
}

/// Reasoning for a summary: the session's level, for reasoning models only.
fn summary_reasoning(model: &Model, level: ThinkingLevel) -> Option<ThinkingLevel> {
    (model.reasoning && level != ThinkingLevel::Off).then_some(level)
}

/// The request that summarises compacted history (Pi's `generateSummary`).
pub fn history_summary_request(
    messages: &[AgentMessage],
    model: &Model,
    reserve_tokens: u64,
    custom_instructions: Option<&str>,
    previous_summary: Option<&str>,
    thinking_level: ThinkingLevel,
    now: u64,
) -> ModelRequest {
    let mut instructions = if previous_summary.is_some() {
        UPDATE_SUMMARIZATION_PROMPT.to_owned()
    } else {
        SUMMARIZATION_PROMPT.to_owned()
    };
    if let Some(custom) = custom_instructions.filter(|c| !c.is_empty()) {
        instructions = format!("{instructions}\n\nAdditional focus: {custom}");
    }
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let mut prompt = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    if let Some(previous) = previous_summary {
        prompt.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        ));
    }
    prompt.push_str(&instructions);
    let max_tokens = (0.8 * reserve_tokens as f64).floor() as u64;
    request(
        model,
        prompt,
        max_tokens,
        summary_reasoning(model, thinking_level),
        now,
    )
}

/// The request that summarises the first part of a turn that the cut splits.
pub fn turn_prefix_summary_request(
    messages: &[AgentMessage],
    model: &Model,
    reserve_tokens: u64,
    thinking_level: ThinkingLevel,
    now: u64,
) -> ModelRequest {
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let prompt = format!(
        "<conversation>\n{conversation}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"
    );
    let max_tokens = (0.5 * reserve_tokens as f64).floor() as u64;
    request(
        model,
        prompt,
        max_tokens,
        summary_reasoning(model, thinking_level),
        now,
    )
}

/// The text of a summary answer (text blocks joined by newlines), or the error Pi raises:
/// `<what> failed: <errorMessage or "Unknown error">`.
pub fn summary_text(answer: &AssistantMessage, what: &str) -> Result<String, String> {
    if answer.stop_reason == StopReason::Error {
        return Err(format!(
            "{what} failed: {}",
            answer.error_message.as_deref().unwrap_or("Unknown error")
        ));
    }
    Ok(texts(&answer.content).join("\n"))
}

/// The compaction summary: the history summary, the turn-prefix summary when the cut split a
/// turn, then the file lists.
pub fn compaction_summary(history: &str, turn_prefix: Option<&str>, files: &FileOps) -> String {
    let mut summary = match turn_prefix {
        Some(prefix) => format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}"),
        None => history.to_owned(),
    };
    let (read, modified) = files.lists();
    summary.push_str(&format_file_operations(&read, &modified));
    summary
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::UserContent;

    fn model(reasoning: bool) -> Model {
        Model {
            id: "m".into(),
            reasoning,
            ..Model::default()
        }
    }

    fn prompt(request: &ModelRequest) -> String {
        match &request.messages[..] {
            [Message::User(UserMessage {
                content: UserContent::Blocks(blocks),
                ..
            })] => texts(blocks).concat(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn history_requests_are_framed_as_pi_frames_them() {
        let messages = vec![AgentMessage::User(UserMessage::from_text(
            "fix it",
            Vec::new(),
            1,
        ))];
        let first = history_summary_request(
            &messages,
            &model(true),
            16_384,
            None,
            None,
            ThinkingLevel::High,
            9,
        );
        assert_eq!(
            prompt(&first),
            format!("<conversation>\n[User]: fix it\n</conversation>\n\n{SUMMARIZATION_PROMPT}")
        );
        assert_eq!(first.system_prompt, SUMMARIZATION_SYSTEM_PROMPT);
        assert_eq!(first.max_tokens, Some(13_107));
        assert_eq!(first.reasoning, Some(ThinkingLevel::High));
        assert!(first.tools.is_empty());

        let update = history_summary_request(
            &messages,
            &model(false),
            16_384,
            Some("focus on tests"),
            Some("old"),
            ThinkingLevel::High,
            9,
        );
        assert_eq!(
            prompt(&update),
            format!(
                "<conversation>\n[User]: fix it\n</conversation>\n\n<previous-summary>\nold\n</previous-summary>\n\n{UPDATE_SUMMARIZATION_PROMPT}\n\nAdditional focus: focus on tests"
            )
        );
        assert_eq!(
            update.reasoning, None,
            "no reasoning for a non-reasoning model"
        );

        let prefix =
            turn_prefix_summary_request(&messages, &model(true), 16_384, ThinkingLevel::Off, 9);
        assert!(prompt(&prefix).ends_with(TURN_PREFIX_SUMMARIZATION_PROMPT));
        assert_eq!(prefix.max_tokens, Some(8_192));
        assert_eq!(prefix.reasoning, None);
    }

    #[test]
    fn answers_become_summaries_or_pi_errors() {
        let answer = AssistantMessage {
            content: vec![ContentBlock::text("## Goal"), ContentBlock::text("x")],
            ..AssistantMessage::default()
        };
        assert_eq!(
            summary_text(&answer, "Summarization").unwrap(),
            "## Goal\nx"
        );
        let failed = AssistantMessage {
            stop_reason: StopReason::Error,
            ..AssistantMessage::default()
        };
        assert_eq!(
            summary_text(&failed, "Summarization").unwrap_err(),
            "Summarization failed: Unknown error"
        );
        let mut files = FileOps::default();
        files.read.insert("b".into());
        files.edited.insert("a".into());
        assert_eq!(
            compaction_summary("H", Some("P"), &files),
            "H\n\n---\n\n**Turn Context (split turn):**\n\nP\n\n<read-files>\nb\n</read-files>\n\n<modified-files>\na\n</modified-files>"
        );
    }
}
