//! The summary requests, byte for byte as Pi sends them, and the summaries made of the answers.

use crate::agent::convert::convert_to_llm;
use crate::agent::ModelRequest;
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, UserMessage,
};
use crate::model::{Model, ThinkingLevel};
use serde_json::Value;

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

/// The conversation as the summariser reads it: `[User]: …`, `[Assistant]: …`,
/// `[Assistant tool calls]: name(k=v, …)`, `[Tool result]: …` (cut at 2,000 characters),
/// separated by blank lines. Pi 1.5.2 leaves thinking out (0.73.1 wrote `[Assistant thinking]`):
/// replayed thinking is often not what the model saw, and can make the request larger than the
/// context it summarises.
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
                let mut calls = Vec::new();
                for block in &m.content {
                    match block {
                        ContentBlock::Text(t) => text.push(t.text.as_str()),
                        ContentBlock::ToolCall(c) => {
                            calls.push(format!("{}({})", c.name, call_arguments(&c.arguments)))
                        }
                        ContentBlock::Thinking(_) | ContentBlock::Image(_) => {}
                    }
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

/// A summarisation call: Pi's summariser system prompt and one user message. Pi 1.5.2 sets no
/// `maxTokens` for it, so the request carries the model's own output limit, as the agent's do.
pub(super) fn request(
    model: &Model,
    prompt: String,
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
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    }
}

/// Reasoning for a summary: the session's level, for reasoning models only.
pub(super) fn summary_reasoning(model: &Model, level: ThinkingLevel) -> Option<ThinkingLevel> {
    (model.reasoning && level != ThinkingLevel::Off).then_some(level)
}

/// The request that summarises compacted history (Pi's `generateSummary`).
pub fn history_summary_request(
    messages: &[AgentMessage],
    model: &Model,
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
    request(model, prompt, summary_reasoning(model, thinking_level), now)
}

/// The request that summarises the first part of a turn that the cut splits (Pi 1.5.2's
/// `generateTurnPrefixSummary`: Markdown headings around the conversation, and the compaction's
/// custom instructions as an additional focus).
pub fn turn_prefix_summary_request(
    messages: &[AgentMessage],
    model: &Model,
    custom_instructions: Option<&str>,
    thinking_level: ThinkingLevel,
    now: u64,
) -> ModelRequest {
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let mut prompt = format!(
        "# Conversation\n{conversation}\n\n# Instructions\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"
    );
    if let Some(custom) = custom_instructions.filter(|c| !c.is_empty()) {
        prompt = format!("{prompt}\n\nAdditional focus: {custom}");
    }
    request(model, prompt, summary_reasoning(model, thinking_level), now)
}

/// The text of a summary answer (text blocks joined by newlines), or the error Pi raises
/// (`getSummarizationFailure`, then the tool-call check): `<what> failed: <errorMessage or
/// "Unknown error">`, a cut answer's [`SUMMARY_CUT`], or [`SUMMARY_CALLED_TOOL`].
pub fn summary_text(answer: &AssistantMessage, what: &str) -> Result<String, String> {
    match answer.stop_reason {
        StopReason::Error => {
            return Err(format!(
                "{what} failed: {}",
                answer
                    .error_message
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .unwrap_or("Unknown error")
            ))
        }
        StopReason::Length => return Err(format!("{what} failed: {SUMMARY_CUT}")),
        _ => {}
    }
    if answer
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)))
    {
        return Err(format!("{what} {SUMMARY_CALLED_TOOL}"));
    }
    Ok(texts(&answer.content).join("\n"))
}

/// Why a summary cut at the output limit is not kept (a partial checkpoint would be saved).
pub const SUMMARY_CUT: &str = "generation hit the token cap and the summary is incomplete";
/// Why a summary answer that calls a tool is refused.
pub const SUMMARY_CALLED_TOOL: &str = "attempted to call a tool";

/// A summary's usage as a session entry holds it: written as Pi writes JSON and read back, so
/// that a float that prints as an integer (a cost of `0`) is the number a reader of the file
/// gets, and the entry in memory equals the entry loaded from the file.
pub fn usage_value(usage: &impl serde::Serialize) -> Option<Value> {
    let text = crate::json::to_string(usage).ok()?;
    serde_json::from_str(&text).ok()
}

pub use crate::cost::combine_usage;

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
        let first =
            history_summary_request(&messages, &model(true), None, None, ThinkingLevel::High, 9);
        assert_eq!(
            prompt(&first),
            format!("<conversation>\n[User]: fix it\n</conversation>\n\n{SUMMARIZATION_PROMPT}")
        );
        assert_eq!(first.system_prompt, SUMMARIZATION_SYSTEM_PROMPT);
        assert_eq!(first.max_tokens, None, "the model's own output limit");
        assert_eq!(first.reasoning, Some(ThinkingLevel::High));
        assert!(first.tools.is_empty());

        let update = history_summary_request(
            &messages,
            &model(false),
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

        let prefix = turn_prefix_summary_request(
            &messages,
            &model(true),
            Some("keep paths"),
            ThinkingLevel::Off,
            9,
        );
        assert_eq!(
            prompt(&prefix),
            format!("# Conversation\n[User]: fix it\n\n# Instructions\n{TURN_PREFIX_SUMMARIZATION_PROMPT}\n\nAdditional focus: keep paths")
        );
        assert_eq!(prefix.max_tokens, None);
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
        let cut = AssistantMessage {
            stop_reason: StopReason::Length,
            content: vec![ContentBlock::text("## Go")],
            ..AssistantMessage::default()
        };
        assert_eq!(
            summary_text(&cut, "Turn prefix summarization").unwrap_err(),
            "Turn prefix summarization failed: generation hit the token cap and the summary is incomplete"
        );
        let mut files = FileOps::default();
        files.read.insert("b".into());
        files.edited.insert("a".into());
        let usage = serde_json::json!({"input": 10, "output": 5, "reasoning": 1, "totalTokens": 15,
            "cost": {"input": 0.1, "total": 0.2, "totalFromProvider": true}});
        let other = serde_json::json!({"input": 10, "output": 5, "totalTokens": 15,
            "cost": {"input": 0.2, "total": 0.4, "totalFromProvider": false}});
        assert_eq!(
            crate::json::to_string(&combine_usage(&usage, &other)).unwrap(),
            r#"{"input":20,"output":10,"reasoning":1,"totalTokens":30,"cost":{"input":0.30000000000000004,"total":0.6000000000000001,"totalFromProvider":false}}"#
        );
        assert_eq!(
            compaction_summary("H", Some("P"), &files),
            "H\n\n---\n\n**Turn Context (split turn):**\n\nP\n\n<read-files>\nb\n</read-files>\n\n<modified-files>\na\n</modified-files>"
        );
    }
}
