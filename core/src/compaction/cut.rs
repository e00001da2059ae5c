//! Where a compaction cuts: the first entry kept, and whether that splits a turn.

use crate::message::AgentMessage;
use std::collections::BTreeSet;

use crate::session::context::{
    branch_summary, compaction_checkpoint, compaction_summary, custom_message, edited_message,
    latest_edits,
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

/// The messages each entry of `path` adds to the context once the latest `context_edit` of it
/// on the path is applied (Pi 1.5's `buildSessionProjection`): an omitted entry adds none, a
/// compaction its checkpoint and summary whatever edits say.
pub fn projected_messages(path: &[&SessionEntry]) -> Vec<Vec<AgentMessage>> {
    let edits = latest_edits(path);
    path.iter()
        .map(|entry| match edits.get(entry.id()) {
            Some(edit) if !matches!(entry, SessionEntry::Compaction(_)) => {
                edited_message(entry, Some(edit))
                    .map(|m| vec![m.into_owned()])
                    .unwrap_or_default()
            }
            _ => context_messages(entry),
        })
        .collect()
}

/// Whether an entry (never a compaction) adds, as projected, a message of one of `roles`.
fn adds_role(entry: &SessionEntry, messages: &[AgentMessage], roles: &[&str]) -> bool {
    !matches!(entry, SessionEntry::Compaction(_))
        && messages.iter().any(|m| roles.contains(&m.role()))
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

/// Entries a context may start at: those adding, as projected, a user, assistant, bash, custom
/// or summary message (Pi's `findValidCutPoints`).
fn valid_cut_points(
    path: &[&SessionEntry],
    messages: &[Vec<AgentMessage>],
    start: usize,
    end: usize,
) -> Vec<usize> {
    (start..end)
        .filter(|&i| adds_role(path[i], &messages[i], CUT_POINT_ROLES))
        .collect()
}

/// The entry that started the turn holding `index`: scanning back to `start` for one adding a
/// user, bash, custom or summary message.
fn find_turn_start_index(
    path: &[&SessionEntry],
    messages: &[Vec<AgentMessage>],
    index: usize,
    start: usize,
) -> Option<usize> {
    (start..=index)
        .rev()
        .find(|&i| adds_role(path[i], &messages[i], TURN_START_ROLES))
}

/// Whether the entries after the cut are only a failed attempt and the edits omitting it (Pi
/// 1.5's recovery-omission suffix): such a suffix says nothing the model saw, so the cut moves
/// past the entry before it.
fn is_recovery_omission_suffix(suffix: &[&SessionEntry], messages: &[Vec<AgentMessage>]) -> bool {
    let visible = |e: &SessionEntry| {
        !matches!(e, SessionEntry::ContextEdit(_)) && !context_messages(e).is_empty()
    };
    let omitted = |i: usize| visible(suffix[i]) && messages[i].is_empty();
    let omitted_ids: BTreeSet<&str> = (0..suffix.len())
        .filter(|&i| omitted(i))
        .map(|i| suffix[i].id())
        .collect();
    let external_replacement = suffix.iter().any(|e| match e {
        SessionEntry::ContextEdit(edit) => {
            edit.replacement.is_some() && !omitted_ids.contains(edit.target_id.as_str())
        }
        _ => false,
    });
    let omitted_answer = (0..suffix.len()).any(|i| {
        matches!(suffix[i], SessionEntry::Message(m) if m.message.role() == "assistant")
            && omitted(i)
    });
    !external_replacement
        && omitted_answer
        && (0..suffix.len()).all(|i| {
            !matches!(suffix[i], SessionEntry::Compaction(_)) && (!visible(suffix[i]) || omitted(i))
        })
}

/// Pi 1.5.2's `findProjectedCutPoint`: walking back from the newest entry (those adding nothing
/// skipped) until `keep_recent_tokens` are reached, cut at the closest valid point at or after
/// that entry, else at the last one; past a suffix that is only an omitted recovery attempt;
/// keep the entries adding nothing just before the cut; report a split turn. Entries count as
/// the `context_edit` entries on the path leave them.
pub fn find_cut_point(
    path: &[&SessionEntry],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let messages = projected_messages(path);
    let cut_points = valid_cut_points(path, &messages, start, end);
    let (Some(&first), Some(&last)) = (cut_points.first(), cut_points.last()) else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    let mut exceeded = false;
    for i in (start..end).rev() {
        let tokens: u64 = messages[i].iter().map(estimate_tokens).sum();
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            exceeded = true;
            cut = cut_points.iter().copied().find(|&c| c >= i).unwrap_or(last);
            break;
        }
    }
    if exceeded && is_recovery_omission_suffix(&path[cut + 1..end], &messages[cut + 1..end]) {
        cut += 1;
    }
    while cut > start {
        let previous = path[cut - 1];
        if matches!(previous, SessionEntry::Compaction(_)) || !messages[cut - 1].is_empty() {
            break;
        }
        cut -= 1;
    }
    let starts_turn = cut < end && adds_role(path[cut], &messages[cut], TURN_START_ROLES);
    let turn_start_index = if starts_turn {
        None
    } else {
        find_turn_start_index(path, &messages, cut.min(end.saturating_sub(1)), start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !starts_turn && turn_start_index.is_some(),
    }
}
