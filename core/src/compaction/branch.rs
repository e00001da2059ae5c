//! Summaries of abandoned branches (Pi's `branch-summarization`).

use crate::agent::convert::convert_to_llm;
use crate::agent::ModelRequest;
use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::model::{Model, ThinkingLevel};
use crate::session::entry::SessionEntry;
use crate::session::tree::SessionTree;

use super::files::{format_file_operations, FileOps};
use super::prepare::summary_message;
use super::summary::{
    request, serialize_conversation, summary_reasoning, usage_value, SUMMARY_CALLED_TOOL,
    SUMMARY_CUT,
};
use super::tokens::estimate_tokens;

/// Put before every branch summary.
pub const BRANCH_SUMMARY_PREAMBLE: &str = include_str!("prompts/branch_summary_preamble.txt");
/// Instructions for a branch summary.
pub const BRANCH_SUMMARY_PROMPT: &str = include_str!("prompts/branch_summary_prompt.txt");

/// The entries of the branch being left: from the old leaf back to (not including) the deepest
/// entry it shares with the target's path, oldest first; and that common ancestor.
pub fn collect_entries_for_branch_summary<'a>(
    tree: &'a SessionTree,
    old_leaf: Option<&str>,
    target: &str,
) -> (Vec<&'a SessionEntry>, Option<String>) {
    let Some(old_leaf) = old_leaf else {
        return (Vec::new(), None);
    };
    let old_path: std::collections::BTreeSet<&str> = tree
        .branch_path(Some(old_leaf))
        .iter()
        .map(|e| e.id())
        .collect();
    let common = tree
        .branch_path(Some(target))
        .iter()
        .rev()
        .find(|e| old_path.contains(e.id()))
        .map(|e| e.id().to_owned());
    let mut entries = Vec::new();
    let mut current = Some(old_leaf.to_owned());
    while let Some(id) = current.filter(|id| Some(id) != common.as_ref()) {
        let Some(entry) = tree.entry(&id) else { break };
        if entries.len() > tree.entries().len() {
            break;
        }
        entries.push(entry);
        current = entry.parent_id().map(str::to_owned);
    }
    entries.reverse();
    (entries, common)
}

/// The messages a branch summary covers (newest first until the token budget is spent; tool
/// results left out) and the files they touched.
pub fn prepare_branch_entries(
    entries: &[&SessionEntry],
    token_budget: u64,
) -> (Vec<AgentMessage>, FileOps, u64) {
    let mut file_ops = FileOps::default();
    for entry in entries {
        if let SessionEntry::BranchSummary(b) = entry {
            if b.from_hook != Some(true) {
                if let Some(details) = &b.details {
                    file_ops.add_details(details);
                }
            }
        }
    }
    let mut messages = Vec::new();
    let mut total = 0;
    for entry in entries.iter().rev() {
        let Some(message) = summary_message(entry) else {
            continue;
        };
        file_ops.add_message(&message);
        let tokens = estimate_tokens(&message);
        if token_budget > 0 && total + tokens > token_budget {
            let is_summary = matches!(
                entry,
                SessionEntry::Compaction(_) | SessionEntry::BranchSummary(_)
            );
            if is_summary && (total as f64) < token_budget as f64 * 0.9 {
                messages.push(message);
                total += tokens;
            }
            break;
        }
        messages.push(message);
        total += tokens;
    }
    messages.reverse();
    (messages, file_ops, total)
}

/// The branch-summary request, or `None` when there is nothing to summarise (Pi then records
/// `No content to summarize` without calling the model).
pub fn branch_summary_request(
    messages: &[AgentMessage],
    model: &Model,
    custom_instructions: Option<&str>,
    replace_instructions: bool,
    thinking_level: ThinkingLevel,
    now: u64,
) -> Option<ModelRequest> {
    if messages.is_empty() {
        return None;
    }
    let instructions = match custom_instructions.filter(|c| !c.is_empty()) {
        Some(custom) if replace_instructions => custom.to_owned(),
        Some(custom) => format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom}"),
        None => BRANCH_SUMMARY_PROMPT.to_owned(),
    };
    let conversation = serialize_conversation(&convert_to_llm(messages));
    let prompt = format!("<conversation>\n{conversation}\n</conversation>\n\n{instructions}");
    Some(request(
        model,
        prompt,
        summary_reasoning(model, thinking_level),
        now,
    ))
}

/// How a branch summary ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BranchSummaryOutcome {
    Summary {
        summary: String,
        read_files: Vec<String>,
        modified_files: Vec<String>,
        /// What the summary call cost (Pi 1.5 stores it in the entry).
        usage: Option<serde_json::Value>,
    },
    Aborted,
    Error(String),
}

/// The branch summary made of the model's answer: the preamble, the text, the file lists.
pub fn finish_branch_summary(
    answer: &AssistantMessage,
    file_ops: &FileOps,
) -> BranchSummaryOutcome {
    // Pi 1.5's `getSummarizationFailure` and tool-call check, named for a branch summary.
    const WHAT: &str = "Branch summarization";
    match answer.stop_reason {
        StopReason::Aborted => return BranchSummaryOutcome::Aborted,
        StopReason::Error => {
            return BranchSummaryOutcome::Error(format!(
                "{WHAT} failed: {}",
                answer
                    .error_message
                    .as_deref()
                    .filter(|m| !m.is_empty())
                    .unwrap_or("Unknown error")
            ))
        }
        StopReason::Length => {
            return BranchSummaryOutcome::Error(format!("{WHAT} failed: {SUMMARY_CUT}"))
        }
        _ => {}
    }
    if answer
        .content
        .iter()
        .any(|b| matches!(b, crate::message::ContentBlock::ToolCall(_)))
    {
        return BranchSummaryOutcome::Error(format!("{WHAT} {SUMMARY_CALLED_TOOL}"));
    }
    let text: Vec<&str> = answer
        .content
        .iter()
        .filter_map(|b| match b {
            crate::message::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let (read_files, modified_files) = file_ops.lists();
    let summary = format!(
        "{BRANCH_SUMMARY_PREAMBLE}{}{}",
        text.join("\n"),
        format_file_operations(&read_files, &modified_files)
    );
    BranchSummaryOutcome::Summary {
        summary,
        read_files,
        modified_files,
        usage: usage_value(&answer.usage),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentBlock, Usage};

    #[test]
    fn a_branch_summary_keeps_its_usage_and_fails_as_pi_1_5_names_it() {
        let answer = AssistantMessage {
            content: vec![ContentBlock::text("Explored X.")],
            usage: Usage {
                input: 7,
                output: 3,
                total_tokens: 10,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        let BranchSummaryOutcome::Summary { summary, usage, .. } =
            finish_branch_summary(&answer, &FileOps::default())
        else {
            panic!("a summary");
        };
        assert!(summary.starts_with(BRANCH_SUMMARY_PREAMBLE) && summary.ends_with("Explored X."));
        let usage = usage.unwrap_or_default();
        assert_eq!(
            (usage["input"].clone(), usage["totalTokens"].clone()),
            (7.into(), 10.into())
        );

        let failed = AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("500 down".into()),
            ..AssistantMessage::default()
        };
        assert_eq!(
            finish_branch_summary(&failed, &FileOps::default()),
            BranchSummaryOutcome::Error("Branch summarization failed: 500 down".into())
        );
        let cut = AssistantMessage {
            stop_reason: StopReason::Length,
            ..AssistantMessage::default()
        };
        assert_eq!(
            finish_branch_summary(&cut, &FileOps::default()),
            BranchSummaryOutcome::Error(
                "Branch summarization failed: generation hit the token cap and the summary is incomplete".into()
            )
        );
    }
}
