//! A session written the way a session machine writes it: each entry appended to the tree,
//! and the file flushed when the tree says the entry is to be persisted.

use std::path::Path;

use pi_core::message::AgentMessage;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::{Persist, SessionTree};
use pi_effects::session::{SessionFile, SessionStore, StoreError};

/// A store split into its tree and its file, appended to through the tree.
pub struct Writer {
    tree: SessionTree,
    ids: IdGenerator,
    file: SessionFile,
}

impl Writer {
    pub fn new(store: SessionStore) -> Writer {
        let (tree, ids, file) = store.into_parts();
        Writer { tree, ids, file }
    }

    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    pub fn file(&self) -> Option<&Path> {
        self.file.path()
    }

    fn persist(&mut self, (id, decision): (String, Persist)) -> Result<String, StoreError> {
        if decision != Persist::Nothing {
            self.file.flush(&self.tree)?;
        }
        Ok(id)
    }

    pub fn append_message(
        &mut self,
        message: AgentMessage,
        now: u64,
    ) -> Result<String, StoreError> {
        let appended = self.tree.append_message(message, now, &mut self.ids);
        self.persist(appended)
    }

    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
        now: u64,
    ) -> Result<String, StoreError> {
        let appended = self
            .tree
            .append_model_change(provider, model_id, now, &mut self.ids);
        self.persist(appended)
    }

    pub fn append_thinking_level_change(
        &mut self,
        level: &str,
        now: u64,
    ) -> Result<String, StoreError> {
        let appended = self
            .tree
            .append_thinking_level_change(level, now, &mut self.ids);
        self.persist(appended)
    }

    pub fn append_session_info(&mut self, name: &str, now: u64) -> Result<String, StoreError> {
        let appended = self.tree.append_session_info(name, now, &mut self.ids);
        self.persist(appended)
    }

    pub fn append_label_change(
        &mut self,
        target_id: &str,
        label: Option<&str>,
        now: u64,
    ) -> Result<String, StoreError> {
        let appended = self
            .tree
            .append_label_change(target_id, label, now, &mut self.ids)?;
        self.persist(appended)
    }
}
