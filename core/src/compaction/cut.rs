//! Where a compaction cuts: the first entry kept, and whether that splits a turn.

use crate::message::AgentMessage;
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

fn role(entry: &SessionEntry) -> Option<&str> {
    entry.message().map(AgentMessage::role)
}

/// Entries a context may start at: messages of every role but `toolResult` (a result must follow
/// its call), branch summaries and custom messages.
pub fn valid_cut_points(path: &[&SessionEntry], start: usize, end: usize) -> Vec<usize> {
    (start..end)
        .filter(|&i| match path[i] {
            SessionEntry::Message(_) => matches!(
                role(path[i]),
                Some(
                    "bashExecution"
                        | "custom"
                        | "branchSummary"
                        | "compactionSummary"
                        | "user"
                        | "assistant"
                )
            ),
            SessionEntry::BranchSummary(_) | SessionEntry::CustomMessage(_) => true,
            _ => false,
        })
        .collect()
}

/// The message that started the turn holding `index`: scanning back to `start` for a user or
/// bash message, a branch summary or a custom message.
pub fn find_turn_start_index(path: &[&SessionEntry], index: usize, start: usize) -> Option<usize> {
    (start..=index).rev().find(|&i| match path[i] {
        SessionEntry::BranchSummary(_) | SessionEntry::CustomMessage(_) => true,
        SessionEntry::Message(_) => matches!(role(path[i]), Some("user" | "bashExecution")),
        _ => false,
    })
}

/// Pi's `findCutPoint`: walking back from the newest message until `keep_recent_tokens` are
/// reached, cut at the closest valid point at or after that message; keep settings and other
/// non-message entries just before the cut; report a split turn.
pub fn find_cut_point(
    path: &[&SessionEntry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let cut_points = valid_cut_points(path, start, end);
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    for i in (start..end).rev() {
        let Some(message) = path[i].message() else {
            continue;
        };
        accumulated += estimate_tokens(message);
        if accumulated >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    while cut > start {
        match path[cut - 1] {
            SessionEntry::Compaction(_) | SessionEntry::Message(_) => break,
            _ => cut -= 1,
        }
    }
    let is_user = role(path[cut]) == Some("user") && matches!(path[cut], SessionEntry::Message(_));
    let turn_start_index = if is_user {
        None
    } else {
        find_turn_start_index(path, cut, start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !is_user && turn_start_index.is_some(),
    }
}
