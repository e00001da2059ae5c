//! Where a compaction cuts: the first entry kept, and whether that splits a turn.

use crate::message::AgentMessage;
use crate::session::context::{
    branch_summary, compaction_checkpoint, compaction_summary, custom_message,
};
use crate::session::entry::SessionEntry;

use super::tokens::estimate_tokens;

/// The result of [`find_cut_point`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutPoint {
    /// Index (in the path) of the first entry kept.
    pub first_kept_entry_index: usize,
    /// When the cut falls inside a turn: the index of the message that started it.
    pub turn_start_index: Option<usize>,
    pub is_split_turn: bool,
}

/// The messages an entry adds to a context (Pi's `sessionEntryToContextMessages`): a message, a
/// custom message, a branch summary with text, a compaction's checkpoint and summary.
fn context_messages(entry: &SessionEntry) -> Vec<AgentMessage> {
    match entry {
        SessionEntry::Message(e) => vec![e.message.clone()],
        SessionEntry::CustomMessage(e) => vec![custom_message(e)],
        SessionEntry::BranchSummary(e) if !e.summary.is_empty() => vec![branch_summary(e)],
        SessionEntry::Compaction(c) => compaction_checkpoint(c)
            .into_iter()
            .chain([compaction_summary(c)])
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether an entry (never a compaction) adds a message of one of `roles` to the context.
fn adds_role(entry: &SessionEntry, roles: &[&str]) -> bool {
    !matches!(entry, SessionEntry::Compaction(_))
        && context_messages(entry)
            .iter()
            .any(|m| roles.contains(&m.role()))
}

/// Roles a context may start at (never a tool result: it must follow its call).
const CUT_POINT_ROLES: &[&str] = &[
    "user",
    "assistant",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];
/// Roles that start a turn.
const TURN_START_ROLES: &[&str] = &[
    "user",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];

/// Entries a context may start at: those adding a user, assistant, bash, custom or summary
/// message (Pi's `findValidCutPoints`).
pub fn valid_cut_points(path: &[&SessionEntry], start: usize, end: usize) -> Vec<usize> {
    (start..end)
        .filter(|&i| adds_role(path[i], CUT_POINT_ROLES))
        .collect()
}

/// The entry that started the turn holding `index`: scanning back to `start` for one adding a
/// user, bash, custom or summary message.
pub fn find_turn_start_index(path: &[&SessionEntry], index: usize, start: usize) -> Option<usize> {
    (start..=index)
        .rev()
        .find(|&i| adds_role(path[i], TURN_START_ROLES))
}

/// Pi 1.5.2's `findCutPoint`: walking back from the newest entry (those adding nothing skipped)
/// until `keep_recent_tokens` are reached, cut at the closest valid point at or after that
/// entry, else at the last one; keep the entries adding nothing just before the cut; report a
/// split turn.
pub fn find_cut_point(
    path: &[&SessionEntry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let cut_points = valid_cut_points(path, start, end);
    let (Some(&first), Some(&last)) = (cut_points.first(), cut_points.last()) else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    for i in (start..end).rev() {
        let tokens: u64 = context_messages(path[i]).iter().map(estimate_tokens).sum();
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            cut = cut_points.iter().copied().find(|&c| c >= i).unwrap_or(last);
            break;
        }
    }
    while cut > start {
        let previous = path[cut - 1];
        if matches!(previous, SessionEntry::Compaction(_)) || !context_messages(previous).is_empty()
        {
            break;
        }
        cut -= 1;
    }
    let starts_turn = adds_role(path[cut], TURN_START_ROLES);
    let turn_start_index = if starts_turn {
        None
    } else {
        find_turn_start_index(path, cut, start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !starts_turn && turn_start_index.is_some(),
    }
}
