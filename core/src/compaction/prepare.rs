//! What a compaction will summarise and keep (Pi's `prepareCompaction`).

use crate::message::AgentMessage;
use crate::session::context::{
    after_compaction, branch_summary, build_session_context, compaction_summary, custom_message,
    EntryIndex, Leaf,
};
use crate::session::entry::SessionEntry;

use super::cut::{find_cut_point, projected_messages};
use super::files::FileOps;
use super::tokens::{estimate_context_tokens, estimate_tokens};
use super::CompactionSettings;
use crate::agent::system::SystemState;

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

/// The path as Pi 1.5's projection orders it: after a compaction, that compaction first, then
/// the entries that follow its summary ([`after_compaction`]). Returns the entries and the
/// index of the first one a new compaction may summarise.
fn projected<'a>(path: &[&'a SessionEntry]) -> (Vec<&'a SessionEntry>, usize) {
    match after_compaction(path) {
        (None, entries) => (entries, 0),
        (Some(compaction), rest) => {
            let mut entries = vec![compaction];
            entries.extend(rest);
            (entries, 1)
        }
    }
}

/// Whether the context of `path` (root first) holds a `context_edit` entry: after a compaction,
/// among the entries it kept and the later ones. Pi 1.5's threshold check then estimates the
/// context with [`projected_tokens`] instead of trusting the answer's usage.
pub fn context_has_edits(path: &[&SessionEntry]) -> bool {
    projected(path)
        .0
        .iter()
        .any(|e| matches!(e, SessionEntry::ContextEdit(_)))
}

/// Pi 1.5's `estimateProjectedContextTokens`: the last response's usage and estimates of what
/// followed it, when that response came after the latest compaction or context edit; else an
/// estimate of everything, counting the prompt in force once.
pub fn projected_tokens(path: &[&SessionEntry], context: &[AgentMessage]) -> u64 {
    let estimate = estimate_context_tokens(context);
    if let Some(AgentMessage::Assistant(usage_source)) =
        estimate.last_usage_index.and_then(|i| context.get(i))
    {
        let source = path.iter().rposition(|e| match e.message() {
            Some(AgentMessage::Assistant(a)) => a == usage_source,
            _ => false,
        });
        let invalidated = path
            .iter()
            .rposition(|e| matches!(e.kind(), "compaction" | "context_edit"));
        if source.is_some_and(|s| invalidated.is_none_or(|i| s > i)) {
            return estimate.tokens;
        }
    }
    let prompt = SystemState::of(context)
        .checkpoint(0)
        .and_then(|v| serde_json::from_value::<AgentMessage>(v).ok())
        .map_or(0, |m| estimate_tokens(&m));
    prompt
        + context
            .iter()
            .filter(|m| !matches!(m, AgentMessage::System(_)))
            .map(estimate_tokens)
            .sum::<u64>()
}

/// Plans a compaction of `path` (root first); `None` when the path already ends in a compaction,
/// the first kept entry has no id, or nothing lies before the cut (Pi 1.5 refuses a manual
/// compaction then, and an automatic one does not start).
pub fn prepare_compaction(
    path: &[&SessionEntry],
    settings: CompactionSettings,
) -> Option<CompactionPreparation> {
    if matches!(path.last(), Some(SessionEntry::Compaction(_))) {
        return None;
    }
    let previous_summary = path.iter().rev().find_map(|e| match e {
        SessionEntry::Compaction(c) => Some(c.summary.clone()),
        _ => None,
    });
    let raw = path;
    let (projected, boundary_start) = projected(path);
    let path = projected.as_slice();
    let entries: Vec<SessionEntry> = raw.iter().map(|e| (*e).clone()).collect();
    let index: EntryIndex = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id().to_owned(), i))
        .collect();
    let context = build_session_context(&entries, &index, Leaf::Last).into_messages();
    let tokens_before = projected_tokens(raw, &context);

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
    let projected_messages = projected_messages(path);
    let summarized = |range: std::ops::Range<usize>| -> Vec<AgentMessage> {
        range
            .filter(|&i| !matches!(path[i], SessionEntry::Compaction(_)))
            .flat_map(|i| projected_messages[i].iter())
            .filter(|m| !matches!(m, AgentMessage::System(_)))
            .cloned()
            .collect()
    };
    let messages_to_summarize = summarized(boundary_start..history_end);
    let turn_prefix_messages = match (cut.is_split_turn, cut.turn_start_index) {
        (true, Some(start)) => summarized(start..cut.first_kept_entry_index),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let mut file_ops = FileOps::default();
    if let Some(SessionEntry::Compaction(c)) = path.first().filter(|_| boundary_start > 0) {
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
