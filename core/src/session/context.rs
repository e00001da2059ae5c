//! What the model sees of a session: the messages on the path from the root to a leaf, with the
//! latest compaction standing in for what it summarised, and each message as the latest
//! `context_edit` of it among those entries leaves it (Pi's `buildSessionProjection`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{BuildHasherDefault, DefaultHasher};

use indexmap::IndexMap;

use serde::Serialize;

use super::entry::{
    BranchSummaryEntry, CompactionEntry, ContextEditEntry, CustomMessageEntry, SessionEntry,
};
use super::time::ms_from_iso;
use crate::message::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, Extra,
};

/// Entry id -> position in the entries. Hashed, so that following a 20,000-entry path costs
/// 20,000 hash look-ups rather than as many walks down a tree of string comparisons; the hasher is
/// fixed (no random seed) and iteration keeps insertion order, so nothing depends on chance.
pub type EntryIndex = IndexMap<String, usize, BuildHasherDefault<DefaultHasher>>;

/// The model a session was last using, as its entries record it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// The context of a session at a leaf. Messages of `message` entries are borrowed from the
/// session (building the context copies nothing); summaries and custom messages are made.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionContext<'a> {
    pub messages: Vec<Cow<'a, AgentMessage>>,
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

impl SessionContext<'_> {
    /// The messages, owned.
    pub fn into_messages(self) -> Vec<AgentMessage> {
        self.messages.into_iter().map(Cow::into_owned).collect()
    }

    fn empty() -> Self {
        SessionContext {
            messages: Vec::new(),
            thinking_level: "off".into(),
            model: None,
        }
    }
}

/// Which leaf to build the context at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf<'a> {
    /// Before the first entry: an empty context.
    BeforeFirst,
    /// This entry; an unknown id falls back to the last entry, as in Pi.
    At(&'a str),
    /// The last entry of the file.
    Last,
}

fn millis(iso: &str) -> u64 {
    ms_from_iso(iso).map_or(0, |ms| ms.max(0) as u64)
}

/// The `compactionSummary` message a compaction entry stands for.
pub fn compaction_summary(entry: &CompactionEntry) -> AgentMessage {
    AgentMessage::CompactionSummary(CompactionSummaryMessage {
        summary: entry.summary.clone(),
        tokens_before: entry.tokens_before,
        timestamp: millis(&entry.timestamp),
        extra: Extra::new(),
    })
}

/// The system message a compaction entry's `systemMessage` checkpoint stands for (Pi 1.5);
/// `None` for older entries, and for a checkpoint that is not a system message.
pub fn compaction_checkpoint(entry: &CompactionEntry) -> Option<AgentMessage> {
    let value = entry.system_message.as_ref()?;
    match serde_json::from_value::<AgentMessage>(value.clone()) {
        Ok(message @ AgentMessage::System(_)) => Some(message),
        _ => None,
    }
}

/// The `branchSummary` message a branch-summary entry stands for.
pub fn branch_summary(entry: &BranchSummaryEntry) -> AgentMessage {
    AgentMessage::BranchSummary(BranchSummaryMessage {
        summary: entry.summary.clone(),
        from_id: entry.from_id.clone(),
        timestamp: millis(&entry.timestamp),
        extra: Extra::new(),
    })
}

/// The `custom` message a custom-message entry stands for.
pub fn custom_message(entry: &CustomMessageEntry) -> AgentMessage {
    AgentMessage::Custom(CustomMessage {
        custom_type: entry.custom_type.clone(),
        content: entry.content.clone(),
        display: entry.display,
        details: entry.details.clone(),
        timestamp: millis(&entry.timestamp),
        extra: Extra::new(),
    })
}

/// The message an entry contributes to the context, if any.
fn context_message(entry: &SessionEntry) -> Option<Cow<'_, AgentMessage>> {
    match entry {
        SessionEntry::Message(e) => Some(Cow::Borrowed(&e.message)),
        SessionEntry::CustomMessage(e) => Some(Cow::Owned(custom_message(e))),
        SessionEntry::BranchSummary(e) if !e.summary.is_empty() => {
            Some(Cow::Owned(branch_summary(e)))
        }
        _ => None,
    }
}

/// The message an entry contributes once `edit` (the latest edit of it) is applied: none when
/// the edit omits it, else the message with the replacement's content (Pi's
/// `projectContextEntry`). A replacement this build cannot read leaves the message as it was.
pub(crate) fn edited_message<'a>(
    entry: &'a SessionEntry,
    edit: Option<&ContextEditEntry>,
) -> Option<Cow<'a, AgentMessage>> {
    let message = context_message(entry)?;
    let Some(edit) = edit else {
        return Some(message);
    };
    let Some(content) = edit.replacement.as_ref()?.get("content") else {
        return Some(message);
    };
    let role = message.role();
    if !matches!(role, "user" | "assistant" | "toolResult" | "custom") {
        return Some(message);
    }
    let content = match content {
        serde_json::Value::String(text) if matches!(role, "assistant" | "toolResult") => {
            serde_json::json!([{"type": "text", "text": text}])
        }
        other => other.clone(),
    };
    let replaced = serde_json::to_value(message.as_ref())
        .ok()
        .and_then(|mut value| {
            value.as_object_mut()?.insert("content".into(), content);
            serde_json::from_value::<AgentMessage>(value).ok()
        });
    Some(replaced.map_or(message, Cow::Owned))
}

/// The latest `context_edit` among `entries` of each entry it targets, by the target's id.
pub(crate) fn latest_edits<'a>(
    entries: &[&'a SessionEntry],
) -> BTreeMap<&'a str, &'a ContextEditEntry> {
    let mut edits = BTreeMap::new();
    for entry in entries {
        if let SessionEntry::ContextEdit(edit) = entry {
            edits.insert(edit.target_id.as_str(), edit);
        }
    }
    edits
}

/// The messages of `entries` (the entries of a context, in order), each as the latest
/// `context_edit` among them leaves it.
fn project<'a>(entries: &[&'a SessionEntry]) -> Vec<Cow<'a, AgentMessage>> {
    let edits = latest_edits(entries);
    entries
        .iter()
        .filter_map(|e| edited_message(e, edits.get(e.id()).copied()))
        .collect()
}

/// The path from the root to `leaf`, root first, following `parentId` through `index`
/// (entry id -> position in `entries`). Stops at an unknown parent or a cycle.
pub fn path_to<'a>(
    entries: &'a [SessionEntry],
    index: &EntryIndex,
    leaf: usize,
) -> Vec<&'a SessionEntry> {
    let mut path = Vec::new();
    let mut current = entries.get(leaf);
    while let Some(entry) = current {
        if path.len() > entries.len() {
            break;
        }
        path.push(entry);
        current = entry
            .parent_id()
            .and_then(|p| index.get(p))
            .and_then(|&i| entries.get(i));
    }
    path.reverse();
    path
}

/// Pi's `buildSessionContext`.
pub fn build_session_context<'a>(
    entries: &'a [SessionEntry],
    index: &EntryIndex,
    leaf: Leaf<'_>,
) -> SessionContext<'a> {
    let leaf = match leaf {
        Leaf::BeforeFirst => return SessionContext::empty(),
        Leaf::At(id) => index.get(id).copied(),
        Leaf::Last => None,
    };
    let Some(leaf) = leaf.or_else(|| entries.len().checked_sub(1)) else {
        return SessionContext::empty();
    };
    let path = path_to(entries, index, leaf);
    let mut context = SessionContext::empty();
    let mut thinking = None;
    let mut model = None;
    for entry in &path {
        match entry {
            SessionEntry::ThinkingLevelChange(e) => thinking = Some(&e.thinking_level),
            SessionEntry::ModelChange(e) => model = Some((&e.provider, &e.model_id)),
            SessionEntry::Message(e) => {
                if let AgentMessage::Assistant(m) = &e.message {
                    model = Some((&m.provider, &m.model));
                }
            }
            _ => {}
        }
    }
    if let Some(level) = thinking {
        context.thinking_level = level.clone();
    }
    context.model = model.map(|(provider, model_id)| ModelRef {
        provider: provider.clone(),
        model_id: model_id.clone(),
    });
    let (compaction, rest) = after_compaction(&path);
    if let Some(SessionEntry::Compaction(c)) = compaction {
        // Pi 1.5: the prompt's checkpoint first; the system messages among the kept entries
        // are dropped in its favour.
        if let Some(checkpoint) = compaction_checkpoint(c) {
            context.messages.push(Cow::Owned(checkpoint));
        }
        context.messages.push(Cow::Owned(compaction_summary(c)));
    }
    context.messages.extend(project(&rest));
    context
}

/// Pi 1.5's projection of a path (root first): the latest compaction entry, if any, and the
/// entries whose messages follow its summary, namely those it kept (their system messages
/// dropped: its checkpoint stands for them) and the later ones; without a compaction, the
/// whole path. Both the context and a new compaction's plan read the path this way.
pub(crate) fn after_compaction<'a>(
    path: &[&'a SessionEntry],
) -> (Option<&'a SessionEntry>, Vec<&'a SessionEntry>) {
    let Some((at, SessionEntry::Compaction(c))) = path
        .iter()
        .enumerate()
        .rfind(|(_, e)| matches!(e, SessionEntry::Compaction(_)))
        .map(|(at, e)| (at, *e))
    else {
        return (None, path.to_vec());
    };
    let kept = path[..at]
        .iter()
        .position(|e| e.id() == c.first_kept_entry_id)
        .map_or(&[][..], |first| &path[first..at]);
    let rest = kept
        .iter()
        .filter(|e| !matches!(e.message(), Some(AgentMessage::System(_))))
        .chain(&path[at + 1..])
        .copied()
        .collect();
    (Some(path[at]), rest)
}
