//! A session as an append-only tree of entries with a movable leaf (the pure part of Pi's
//! `SessionManager`). Appends take the time and the id generator as arguments; what must be
//! written to disk is returned as a [`Persist`] decision for the store to carry out.

use serde_json::Value;

use super::context::{build_session_context, path_to, EntryIndex, Leaf, SessionContext};
use super::entry::{
    BranchSummaryEntry, CompactionEntry, ContextEditEntry, CustomEntry, CustomMessageEntry,
    HeaderType, LabelEntry, MessageEntry, ModelChangeEntry, SessionEntry, SessionHeader,
    SessionInfoEntry, ThinkingLevelChangeEntry, UsageEntry, CURRENT_SESSION_VERSION,
};
use super::ids::IdGenerator;
use super::time::ms_from_iso;
use crate::agent::system::SystemState;
use crate::message::{AgentMessage, Extra, Usage, UserContent};

/// An operation on the tree that Pi refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("Entry {0} not found")]
    EntryNotFound(String),
}

/// What the file needs after an append (Pi's lazy-flush rule): nothing before the first
/// assistant message, then the whole session once, then each new entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Persist {
    Nothing,
    /// Write the header and every entry.
    All,
    /// Append the entry just added.
    Last,
}

/// A label and when it was set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub label: String,
    pub timestamp: String,
}

/// Labels by target, in the order JavaScript's `Map` keeps them: an update stays in place, a
/// label set again after being cleared moves to the end.
#[derive(Clone, Debug, Default)]
struct Labels(Vec<(String, Label)>);

impl Labels {
    fn set(&mut self, target: &str, label: Label) {
        match self.0.iter_mut().find(|(t, _)| t == target) {
            Some(slot) => slot.1 = label,
            None => self.0.push((target.to_owned(), label)),
        }
    }

    fn clear(&mut self, target: &str) {
        self.0.retain(|(t, _)| t != target);
    }

    fn get(&self, target: &str) -> Option<&Label> {
        self.0.iter().find(|(t, _)| t == target).map(|(_, l)| l)
    }
}

/// One node of [`SessionTree::tree`]: an entry, its label, and its children (indices into
/// [`Tree::nodes`]), oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeNode {
    pub entry: usize,
    pub children: Vec<usize>,
    pub label: Option<Label>,
}

/// The whole tree, flat so that a 100,000-entry chain needs no recursion to build, walk or drop.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Tree {
    /// One node per entry, in file order (`nodes[i].entry == i`).
    pub nodes: Vec<TreeNode>,
    /// Entries without a (known) parent, in file order.
    pub roots: Vec<usize>,
}

/// What a `usage` entry records (Pi 1.5's `appendUsage` arguments).
#[derive(Clone, Debug)]
pub struct UsageRecord<'a> {
    /// Why the request was made (`cache_warm`).
    pub kind: &'a str,
    pub provider: &'a str,
    pub model: &'a str,
    pub usage: Usage,
    /// Pi's remark on it (`extension override`).
    pub note: Option<&'a str>,
}

/// A session in memory.
#[derive(Clone, Debug)]
pub struct SessionTree {
    header: SessionHeader,
    entries: Vec<SessionEntry>,
    index: EntryIndex,
    labels: Labels,
    leaf: Option<usize>,
    has_conversation: bool,
    flushed: bool,
}

impl SessionTree {
    /// A new, empty session (Pi's `newSession`).
    pub fn new(cwd: &str, now: u64, ids: &mut IdGenerator, parent_session: Option<String>) -> Self {
        let stamp = ids.session_stamp(now);
        let header = SessionHeader {
            kind: HeaderType::Session,
            version: Some(CURRENT_SESSION_VERSION),
            id: stamp.id,
            timestamp: stamp.timestamp,
            cwd: cwd.to_owned(),
            parent_session,
            extra: Extra::new(),
        };
        SessionTree::from_entries(header, Vec::new(), false)
    }

    /// Gives a new session the id its creator chose (Pi 1.5's `SessionManager.create(…, {id})`).
    pub fn set_session_id(&mut self, id: &str) {
        self.header.id = id.to_owned();
    }

    /// A session read from a file: the leaf is the last entry, labels are replayed in order.
    /// `flushed` says whether the file already holds these entries.
    pub fn from_entries(header: SessionHeader, entries: Vec<SessionEntry>, flushed: bool) -> Self {
        let mut tree = SessionTree {
            header,
            entries,
            index: EntryIndex::default(),
            labels: Labels::default(),
            leaf: None,
            has_conversation: false,
            flushed,
        };
        for position in 0..tree.entries.len() {
            tree.index_entry(position);
        }
        tree
    }

    fn push(&mut self, entry: SessionEntry) {
        self.entries.push(entry);
        self.index_entry(self.entries.len() - 1);
    }

    /// Indexes the entry at `position` and makes it the leaf.
    fn index_entry(&mut self, position: usize) {
        let entry = &self.entries[position];
        self.index.insert(entry.id().to_owned(), position);
        self.leaf = Some(position);
        match entry {
            SessionEntry::Label(label) => match label.label.as_deref().filter(|l| !l.is_empty()) {
                Some(text) => self.labels.set(
                    &label.target_id,
                    Label {
                        label: text.to_owned(),
                        timestamp: label.timestamp.clone(),
                    },
                ),
                None => self.labels.clear(&label.target_id),
            },
            SessionEntry::Message(m)
                if matches!(
                    m.message,
                    AgentMessage::User(_) | AgentMessage::Assistant(_)
                ) =>
            {
                self.has_conversation = true;
            }
            _ => {}
        }
    }

    /// Adds `entry` as the new leaf and says what the file needs.
    fn append(&mut self, entry: SessionEntry) -> Persist {
        self.push(entry);
        if !self.has_conversation {
            self.flushed = false;
            return Persist::Nothing;
        }
        if self.flushed {
            Persist::Last
        } else {
            self.flushed = true;
            Persist::All
        }
    }

    /// Marks the file as holding everything (after the store wrote it whole).
    pub fn mark_flushed(&mut self) {
        self.flushed = true;
    }

    /// The header line.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Every entry in file order.
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    /// Whether a user or assistant message exists (Pi 1.5's `_hasConversation`; before that,
    /// nothing is written to disk).
    pub fn has_conversation(&self) -> bool {
        self.has_conversation
    }

    /// The current leaf's id; `None` before the first entry (or after `reset_leaf`).
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|i| self.entries[i].id())
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.index.get(id).map(|&i| &self.entries[i])
    }

    /// The entries whose parent is `parent_id` (`None`: the roots), in file order.
    pub fn children(&self, parent_id: Option<&str>) -> Vec<&SessionEntry> {
        let mut found: Vec<usize> = self
            .index
            .values()
            .copied()
            .filter(|&i| self.entries[i].parent_id() == parent_id)
            .collect();
        found.sort_unstable();
        found.into_iter().map(|i| &self.entries[i]).collect()
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&Label> {
        self.labels.get(id)
    }

    /// The path from the root to `from` (default: the leaf), root first; empty for an unknown id.
    pub fn branch_path(&self, from: Option<&str>) -> Vec<&SessionEntry> {
        let start = match from {
            Some(id) => self.index.get(id).copied(),
            None => self.leaf,
        };
        start.map_or_else(Vec::new, |i| path_to(&self.entries, &self.index, i))
    }

    /// The context at the current leaf.
    pub fn context(&self) -> SessionContext<'_> {
        let leaf = match self.leaf_id() {
            Some(id) => Leaf::At(id),
            None => Leaf::BeforeFirst,
        };
        build_session_context(&self.entries, &self.index, leaf)
    }

    /// The session's name: the latest `session_info` entry's, trimmed; an empty one clears it.
    pub fn name(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| match e {
                SessionEntry::SessionInfo(info) => {
                    Some(info.name.as_deref().map(str::trim).unwrap_or("").to_owned())
                }
                _ => None,
            })
            .filter(|n| !n.is_empty())
    }

    /// The whole tree with labels; children ordered by timestamp, oldest first.
    pub fn tree(&self) -> Tree {
        let mut tree = Tree {
            nodes: (0..self.entries.len())
                .map(|i| TreeNode {
                    entry: i,
                    children: Vec::new(),
                    label: self.labels.get(self.entries[i].id()).cloned(),
                })
                .collect(),
            roots: Vec::new(),
        };
        for (i, entry) in self.entries.iter().enumerate() {
            let parent = entry
                .parent_id()
                .filter(|p| *p != entry.id())
                .and_then(|p| self.index.get(p));
            match parent {
                Some(&p) => tree.nodes[p].children.push(i),
                None => tree.roots.push(i),
            }
        }
        let times: Vec<i64> = self
            .entries
            .iter()
            .map(|e| ms_from_iso(e.timestamp()).unwrap_or(i64::MIN))
            .collect();
        for node in &mut tree.nodes {
            node.children.sort_by_key(|&c| times[c]);
        }
        tree
    }

    fn base(&self, now: u64, ids: &mut IdGenerator) -> (String, Option<String>, String) {
        let (id, parent_id, timestamp, _) = self.stamped(now, ids);
        (id, parent_id, timestamp)
    }

    /// [`Self::base`] and the recorded time of a tool result, when the stamp has one.
    fn stamped(
        &self,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Option<String>, String, Option<u64>) {
        let stamp = ids.entry_stamp(now, |id| self.index.contains_key(id));
        let parent_id = self.leaf_id().map(str::to_owned);
        (stamp.id, parent_id, stamp.timestamp, stamp.result_time)
    }

    /// Appends a message; returns the new entry's id and what to persist.
    pub fn append_message(
        &mut self,
        message: AgentMessage,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp, result_time) = self.stamped(now, ids);
        let mut message = message;
        match (&mut message, result_time) {
            (AgentMessage::ToolResult(result), Some(t)) => result.timestamp = t,
            (AgentMessage::System(system), Some(t)) => system.timestamp = t,
            _ => {}
        }
        let entry = SessionEntry::Message(MessageEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            message,
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Records a thinking-level change.
    pub fn append_thinking_level_change(
        &mut self,
        level: &str,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::ThinkingLevelChange(ThinkingLevelChangeEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            thinking_level: level.to_owned(),
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Records a model change.
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::ModelChange(ModelChangeEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            provider: provider.to_owned(),
            model_id: model_id.to_owned(),
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Records a compaction: context before `first_kept_entry_id` (the compaction itself when
    /// `None`) is replaced by `summary`.
    #[allow(clippy::too_many_arguments)]
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: Option<&str>,
        tokens_before: u64,
        details: Option<Value>,
        usage: Option<Value>,
        from_hook: Option<bool>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        // Pi 1.5's `appendCompaction`: the prompt in force, stamped with the compaction's time.
        let state = SystemState::of(self.context().messages.iter().map(|m| m.as_ref()));
        let (id, parent_id, timestamp) = self.base(now, ids);
        let stamp = ms_from_iso(&timestamp).map_or(now, |ms| ms.max(0) as u64);
        let system_message = state.checkpoint(stamp);
        let entry = SessionEntry::Compaction(CompactionEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            summary: summary.to_owned(),
            // Pi's `appendCompaction` keeps from the compaction itself when no entry is named.
            first_kept_entry_id: first_kept_entry_id.unwrap_or(id.as_str()).to_owned(),
            tokens_before,
            details,
            usage,
            from_hook,
            system_message,
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Stores extension state (never sent to the model).
    pub fn append_custom_entry(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::Custom(CustomEntry {
            custom_type: custom_type.to_owned(),
            data,
            id: id.clone(),
            parent_id,
            timestamp,
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Sets the session's display name as Pi's `appendSessionInfo` cleans it: each run of line
    /// breaks one space, then trimmed.
    pub fn append_session_info(
        &mut self,
        name: &str,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::SessionInfo(SessionInfoEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            name: Some(one_line(name).trim().to_owned()),
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Appends an extension message that the model sees as a user message.
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: &str,
        content: UserContent,
        display: bool,
        details: Option<Value>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::CustomMessage(CustomMessageEntry {
            custom_type: custom_type.to_owned(),
            content,
            display,
            details,
            id: id.clone(),
            parent_id,
            timestamp,
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Records an edit of what the model sees of `target_id` from here on (Pi 1.5's
    /// `appendContextEdit`); `None` omits it. The target must be on the current branch.
    pub fn append_context_edit(
        &mut self,
        target_id: &str,
        replacement: Option<Value>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> Result<(String, Persist), SessionError> {
        if !self.branch_path(None).iter().any(|e| e.id() == target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_owned()));
        }
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::ContextEdit(ContextEditEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            target_id: target_id.to_owned(),
            replacement,
            extra: Extra::new(),
        });
        Ok((id, self.append(entry)))
    }

    /// Records what a request outside the conversation used (Pi 1.5's `appendUsage`, written by
    /// cache warming); never part of the context.
    pub fn append_usage(
        &mut self,
        record: UsageRecord<'_>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> (String, Persist) {
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::Usage(UsageEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            kind: record.kind.to_owned(),
            provider: record.provider.to_owned(),
            model: record.model.to_owned(),
            usage: record.usage,
            note: record.note.map(str::to_owned),
            extra: Extra::new(),
        });
        (id, self.append(entry))
    }

    /// Sets (or with `None`/empty, clears) the label of `target_id`.
    pub fn append_label_change(
        &mut self,
        target_id: &str,
        label: Option<&str>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> Result<(String, Persist), SessionError> {
        if !self.index.contains_key(target_id) {
            return Err(SessionError::EntryNotFound(target_id.to_owned()));
        }
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::Label(LabelEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            target_id: target_id.to_owned(),
            label: label.map(str::to_owned),
            extra: Extra::new(),
        });
        Ok((id, self.append(entry)))
    }

    /// Moves the leaf to `id`: the next append becomes its child.
    pub fn branch(&mut self, id: &str) -> Result<(), SessionError> {
        let position = self
            .index
            .get(id)
            .copied()
            .ok_or_else(|| SessionError::EntryNotFound(id.to_owned()))?;
        self.leaf = Some(position);
        Ok(())
    }

    /// Moves the leaf before the first entry: the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Moves the leaf to `from` (or before the first entry) and attaches a branch summary there;
    /// its `fromId` is the leaf left behind (`root` when there was none), as Pi's
    /// `branchWithSummary` writes it.
    #[allow(clippy::too_many_arguments)]
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        usage: Option<Value>,
        from_hook: Option<bool>,
        now: u64,
        ids: &mut IdGenerator,
    ) -> Result<(String, Persist), SessionError> {
        let left = self.leaf_id().unwrap_or("root").to_owned();
        match from {
            Some(id) => self.branch(id)?,
            None => self.reset_leaf(),
        }
        let (id, parent_id, timestamp) = self.base(now, ids);
        let entry = SessionEntry::BranchSummary(BranchSummaryEntry {
            id: id.clone(),
            parent_id,
            timestamp,
            from_id: left,
            summary: summary.to_owned(),
            details,
            usage,
            from_hook,
            extra: Extra::new(),
        });
        Ok((id, self.append(entry)))
    }

    /// A new session holding the path to `leaf_id` (labels re-created after it for the entries
    /// on the path), as Pi's `createBranchedSession`. The new session is flushed only if the path
    /// has an assistant message (the store then writes it whole).
    pub fn branched(
        &self,
        leaf_id: &str,
        now: u64,
        ids: &mut IdGenerator,
        parent_session: Option<String>,
    ) -> Result<SessionTree, SessionError> {
        let path = self.branch_path(Some(leaf_id));
        if path.is_empty() {
            return Err(SessionError::EntryNotFound(leaf_id.to_owned()));
        }
        let kept: Vec<SessionEntry> = path
            .into_iter()
            .filter(|e| !matches!(e, SessionEntry::Label(_)))
            .cloned()
            .collect();
        let mut taken: std::collections::BTreeSet<String> =
            kept.iter().map(|e| e.id().to_owned()).collect();
        let mut parent = kept.last().map(|e| e.id().to_owned());
        let mut labels = Vec::new();
        for (target, label) in &self.labels.0 {
            if !taken.contains(target) {
                continue;
            }
            let id = ids.entry_id(|id| taken.contains(id));
            taken.insert(id.clone());
            labels.push(SessionEntry::Label(LabelEntry {
                id: id.clone(),
                parent_id: parent.replace(id),
                timestamp: label.timestamp.clone(),
                target_id: target.clone(),
                label: Some(label.label.clone()),
                extra: Extra::new(),
            }));
        }
        let mut tree = SessionTree::new(&self.header.cwd, now, ids, parent_session);
        for entry in kept.into_iter().chain(labels) {
            tree.push(entry);
        }
        tree.flushed = tree.has_conversation;
        Ok(tree)
    }
}

/// `text` with each run of `\r` and `\n` replaced by one space (Pi's `/[\r\n]+/g`).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.chars() {
        let is_break = c == '\r' || c == '\n';
        if is_break && !in_break {
            out.push(' ');
        } else if !is_break {
            out.push(c);
        }
        in_break = is_break;
    }
    out
}
