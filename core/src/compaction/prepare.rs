//! What a compaction will summarise and keep (Pi's `prepareCompaction`).

use crate::message::AgentMessage;
use crate::session::context::{
    branch_summary, build_session_context, compaction_summary, custom_message, EntryIndex, Leaf,
};
use crate::session::entry::SessionEntry;

use super::cut::find_cut_point;
use super::files::FileOps;
use super::tokens::estimate_context_tokens;
use super::CompactionSettings;

/// Everything needed to run a compaction.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionPreparation {
    pub first_kept_entry_id: String,
    /// History to summarise (before the cut, or before the split turn).
    pub messages_to_summarize: Vec<AgentMessage>,
    /// The beginning of a split turn, summarised separately.
    pub turn_prefix_messages: Vec<AgentMessage>,
    pub is_split_turn: bool,
    /// The context's size before compacting.
    pub tokens_before: u64,
    /// The summary of the previous compaction, to be updated.
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
    pub settings: CompactionSettings,
}

/// The message an entry stands for in a compaction (compaction entries themselves excluded).
fn entry_message(entry: &SessionEntry) -> Option<AgentMessage> {
    match entry {
        SessionEntry::Message(e) => Some(e.message.clone()),
        SessionEntry::CustomMessage(e) => Some(custom_message(e)),
        SessionEntry::BranchSummary(e) => Some(branch_summary(e)),
        _ => None,
    }
}

/// Plans a compaction of `path` (root first); `None` when the path already ends in a compaction
/// or the first kept entry has no id.
pub fn prepare_compaction(
    path: &[&SessionEntry],
    settings: CompactionSettings,
) -> Option<CompactionPreparation> {
    if matches!(path.last(), Some(SessionEntry::Compaction(_))) {
        return None;
    }
    let previous = path
        .iter()
        .rposition(|e| matches!(e, SessionEntry::Compaction(_)));
    let mut previous_summary = None;
    let mut boundary_start = 0;
    if let Some(index) = previous {
        if let SessionEntry::Compaction(c) = path[index] {
            previous_summary = Some(c.summary.clone());
            boundary_start = path
                .iter()
                .position(|e| e.id() == c.first_kept_entry_id)
                .unwrap_or(index + 1);
        }
    }
    let entries: Vec<SessionEntry> = path.iter().map(|e| (*e).clone()).collect();
    let index: EntryIndex = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id().to_owned(), i))
        .collect();
    let tokens_before =
        estimate_context_tokens(&build_session_context(&entries, &index, Leaf::Last).messages)
            .tokens;

    let cut = find_cut_point(
        path,
        boundary_start,
        path.len(),
        settings.keep_recent_tokens,
    );
    let first_kept = path.get(cut.first_kept_entry_index)?;
    if first_kept.id().is_empty() {
        return None;
    }
    let history_end = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(start)) => start,
        _ => cut.first_kept_entry_index,
    };
    let messages_to_summarize: Vec<AgentMessage> = path[boundary_start..history_end]
        .iter()
        .filter_map(|e| entry_message(e))
        .collect();
    let turn_prefix_messages: Vec<AgentMessage> = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(start)) => path[start..cut.first_kept_entry_index]
            .iter()
            .filter_map(|e| entry_message(e))
            .collect(),
        _ => Vec::new(),
    };
    let mut file_ops = FileOps::default();
    if let Some(SessionEntry::Compaction(c)) = previous.map(|i| path[i]) {
        if c.from_hook != Some(true) {
            if let Some(details) = &c.details {
                file_ops.add_details(details);
            }
        }
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(message);
    }
    Some(CompactionPreparation {
        first_kept_entry_id: first_kept.id().to_owned(),
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
        settings,
    })
}

/// A summary that stands for `entry` (used by branch summaries, which include compactions).
pub(crate) fn summary_message(entry: &SessionEntry) -> Option<AgentMessage> {
    match entry {
        SessionEntry::Compaction(c) => Some(compaction_summary(c)),
        SessionEntry::Message(e) if matches!(e.message, AgentMessage::ToolResult(_)) => None,
        other => entry_message(other),
    }
}
