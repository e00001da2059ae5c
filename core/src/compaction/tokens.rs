//! Token estimates: characters / 4, counted as JavaScript counts them (UTF-16 code units).

use std::borrow::Borrow;

use crate::message::{AgentMessage, ContentBlock, Usage, UserContent};

use super::CompactionSettings;

/// `text.length` in JavaScript.
pub fn js_len(text: &str) -> u64 {
    text.chars().map(|c| c.len_utf16() as u64).sum()
}

fn blocks_len(blocks: &[ContentBlock], image_chars: u64) -> u64 {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => js_len(&t.text),
            ContentBlock::Image(_) => image_chars,
            _ => 0,
        })
        .sum()
}

fn content_len(content: &UserContent, image_chars: u64) -> u64 {
    match content {
        UserContent::Text(text) => js_len(text),
        UserContent::Blocks(blocks) => blocks_len(blocks, image_chars),
    }
}

/// Pi's `estimateTokens`: ceil(characters / 4); an image counts 4,800 characters (Pi 1.5.2
/// counts them in user messages too, where 0.73.1 counted nothing).
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        // Pi 1.5: the content, every section's text and the added declarations as JSON.
        AgentMessage::System(m) => {
            content_len(&m.content, 4800)
                + m.sections
                    .iter()
                    .flatten()
                    .filter_map(|(_, text)| text.as_str())
                    .map(js_len)
                    .sum::<u64>()
                + m.tools_added.as_ref().map_or(0, |tools| {
                    js_len(&crate::json::to_string(tools).unwrap_or_default())
                })
        }
        AgentMessage::User(m) => content_len(&m.content, 4800),
        AgentMessage::Assistant(m) => m
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => js_len(&t.text),
                ContentBlock::Thinking(t) => js_len(&t.thinking),
                ContentBlock::ToolCall(c) => {
                    js_len(&c.name)
                        + js_len(&crate::json::to_string(&c.arguments).unwrap_or_default())
                }
                ContentBlock::Image(_) => 0,
            })
            .sum(),
        AgentMessage::Custom(m) => content_len(&m.content, 4800),
        AgentMessage::ToolResult(m) => blocks_len(&m.content, 4800),
        AgentMessage::BashExecution(m) => js_len(&m.command) + js_len(&m.output),
        AgentMessage::BranchSummary(m) => js_len(&m.summary),
        AgentMessage::CompactionSummary(m) => js_len(&m.summary),
        AgentMessage::Other(_) => 0,
    };
    chars.div_ceil(4)
}

/// The context size a response reported: `totalTokens`, else the sum of its parts.
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens != 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

/// An estimate of a context's size (Pi's `estimateContextTokens`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextEstimate {
    pub tokens: u64,
    /// What the last usable response reported.
    pub usage_tokens: u64,
    /// Estimated size of the messages after that response.
    pub trailing_tokens: u64,
    /// Index of that response; `None` when no response reported usage.
    pub last_usage_index: Option<usize>,
}

/// The last assistant message that is not an error or abort carries real usage; everything after
/// it is estimated.
pub fn estimate_context_tokens<M: Borrow<AgentMessage>>(messages: &[M]) -> ContextEstimate {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| match m.borrow() {
            // Pi 1.5 also skips a response that reported no usage at all.
            AgentMessage::Assistant(a)
                if !a.stop_reason.ends_run() && calculate_context_tokens(&a.usage) > 0 =>
            {
                Some((i, &a.usage))
            }
            _ => None,
        });
    match last {
        None => {
            let estimated = messages.iter().map(|m| estimate_tokens(m.borrow())).sum();
            ContextEstimate {
                tokens: estimated,
                usage_tokens: 0,
                trailing_tokens: estimated,
                last_usage_index: None,
            }
        }
        Some((index, usage)) => {
            let usage_tokens = calculate_context_tokens(usage);
            let trailing: u64 = messages[index + 1..]
                .iter()
                .map(|m| estimate_tokens(m.borrow()))
                .sum();
            ContextEstimate {
                tokens: usage_tokens + trailing,
                usage_tokens,
                trailing_tokens: trailing,
                last_usage_index: Some(index),
            }
        }
    }
}

/// Whether a context of `context_tokens` must be compacted (strictly above the window minus the
/// reserve).
pub fn should_compact(
    context_tokens: u64,
    context_window: u64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled
        && i128::from(context_tokens)
            > i128::from(context_window) - i128::from(settings.reserve_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_strictly_above_window_minus_reserve() {
        let settings = CompactionSettings::default();
        assert!(!should_compact(183_616, 200_000, &settings));
        assert!(should_compact(183_617, 200_000, &settings));
        assert!(!should_compact(
            1_000_000,
            200_000,
            &CompactionSettings {
                enabled: false,
                ..settings
            }
        ));
        assert!(should_compact(
            1,
            100,
            &CompactionSettings {
                reserve_tokens: 200,
                ..settings
            }
        ));
    }

    #[test]
    fn lengths_are_utf16_code_units() {
        assert_eq!(js_len("abc"), 3);
        assert_eq!(js_len("日本"), 2);
        assert_eq!(js_len("😀"), 2);
    }
}
