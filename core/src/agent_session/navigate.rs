//! Moving the session's leaf to another entry, optionally summarising the branch left behind
//! (Pi's `navigateTree`), and recording `!command` results (Pi's `recordBashResult`).

use serde_json::json;

use crate::agent::{CallId, Effect, Input, StreamEvent};
use crate::compaction::branch::{
    branch_summary_request, collect_entries_for_branch_summary, finish_branch_summary,
    prepare_branch_entries, BranchSummaryOutcome,
};
use crate::compaction::files::FileOps;
use crate::message::{AgentMessage, BashExecutionMessage};
use crate::session::entry::SessionEntry;

use super::contract::{NavigateRequest, Navigated, Reply, SessionError, SessionRejection};
use super::machine::SessionMachine;

/// The text of a branch summary when the abandoned branch holds no messages.
const NO_CONTENT: &str = "No content to summarize";

/// A navigation waiting for its branch summary.
#[derive(Clone, Debug)]
pub(super) struct NavigateJob {
    pub(super) call: CallId,
    request: NavigateRequest,
    file_ops: FileOps,
}

impl SessionMachine {
    /// Starts `navigateTree`; finishes at once unless a summary has to be written.
    pub(super) fn navigate(&mut self, request: NavigateRequest) -> Result<(), SessionError> {
        if self.agent.is_streaming() || self.is_compacting() || self.navigation.is_some() {
            return Err(SessionRejection::NavigateWhileBusy.into());
        }
        // Leaving the branch drops what was pending on it: a waiting retry, a continue after a
        // compaction.
        self.abort_retry();
        self.cancel_continue();
        let old_leaf = self.tree.leaf_id().map(str::to_owned);
        if old_leaf.as_deref() == Some(request.target_id.as_str()) {
            self.reply(Reply::Navigated(Ok(Navigated::default())));
            return Ok(());
        }
        if self.tree.entry(&request.target_id).is_none() {
            let error = format!("Entry {} not found", request.target_id);
            self.reply(Reply::Navigated(Err(error)));
            return Ok(());
        }
        let (entries, _) =
            collect_entries_for_branch_summary(&self.tree, old_leaf.as_deref(), &request.target_id);
        if !request.summarize || entries.is_empty() {
            return self.complete_navigation(&request, None);
        }
        let model = self.agent.model().clone();
        let window = if model.context_window > 0 {
            model.context_window
        } else {
            128_000
        };
        let budget = window.saturating_sub(self.branch_summary_reserve_tokens);
        let (messages, file_ops, _) = prepare_branch_entries(&entries, budget);
        let summary_request = branch_summary_request(
            &messages,
            &model,
            request.custom_instructions.as_deref(),
            request.replace_instructions,
            self.now,
        );
        let Some(summary_request) = summary_request else {
            let details = json!({"readFiles": [], "modifiedFiles": []});
            return self.complete_navigation(&request, Some((NO_CONTENT.to_owned(), details)));
        };
        let call = self.agent.reserve_call();
        self.out.effects.push(Effect::CallModel {
            call,
            request: summary_request,
        });
        self.navigation = Some(NavigateJob {
            call,
            request,
            file_ops,
        });
        Ok(())
    }

    /// The branch summary's answer.
    pub(super) fn navigation_answer(&mut self, input: Input) -> Result<(), SessionError> {
        let answer = match input {
            Input::Model {
                event: StreamEvent::Done { message, .. },
                ..
            } => Ok(message),
            Input::Model {
                event: StreamEvent::Error { error, .. },
                ..
            } => Ok(error),
            Input::ModelFailed { error, .. } => Err(error),
            _ => return Ok(()),
        };
        let Some(job) = self.navigation.take() else {
            return Ok(());
        };
        let outcome = match answer {
            Ok(message) => finish_branch_summary(&message, &job.file_ops),
            Err(error) => BranchSummaryOutcome::Error(error),
        };
        match outcome {
            BranchSummaryOutcome::Summary {
                summary,
                read_files,
                modified_files,
            } => {
                let details = json!({"readFiles": read_files, "modifiedFiles": modified_files});
                self.complete_navigation(&job.request, Some((summary, details)))
            }
            BranchSummaryOutcome::Aborted => {
                self.reply(Reply::Navigated(Ok(Navigated {
                    cancelled: true,
                    aborted: true,
                    ..Navigated::default()
                })));
                Ok(())
            }
            BranchSummaryOutcome::Error(error) => {
                self.reply(Reply::Navigated(Err(error)));
                Ok(())
            }
        }
    }

    fn complete_navigation(
        &mut self,
        request: &NavigateRequest,
        summary: Option<(String, serde_json::Value)>,
    ) -> Result<(), SessionError> {
        let Some(target) = self.tree.entry(&request.target_id).cloned() else {
            return Ok(());
        };
        let (new_leaf, editor_text) = match &target {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(user) => (m.parent_id.clone(), Some(user.content.text())),
                _ => (Some(request.target_id.clone()), None),
            },
            SessionEntry::CustomMessage(c) => (c.parent_id.clone(), Some(c.content.text())),
            _ => (Some(request.target_id.clone()), None),
        };
        let mut summary_entry_id = None;
        match &summary {
            Some((text, details)) => {
                let (id, decision) = self
                    .tree
                    .branch_with_summary(
                        new_leaf.as_deref(),
                        text,
                        Some(details.clone()),
                        Some(false),
                        self.now,
                        &mut self.ids,
                    )
                    .map_err(|e| SessionRejection::Entry(e.to_string()))?;
                self.persist(decision);
                if let Some(label) = request.label.as_deref().filter(|l| !l.is_empty()) {
                    self.label(&id, label)?;
                }
                summary_entry_id = Some(id);
            }
            None => {
                match &new_leaf {
                    None => self.tree.reset_leaf(),
                    Some(id) => self
                        .tree
                        .branch(id)
                        .map_err(|e| SessionRejection::Entry(e.to_string()))?,
                }
                if let Some(label) = request.label.as_deref().filter(|l| !l.is_empty()) {
                    let target_id = request.target_id.clone();
                    self.label(&target_id, label)?;
                }
            }
        }
        let messages = self.tree.context().into_messages();
        self.replace_messages(messages)?;
        self.reply(Reply::Navigated(Ok(Navigated {
            editor_text,
            cancelled: false,
            aborted: false,
            summary_entry_id,
        })));
        Ok(())
    }

    fn label(&mut self, target: &str, label: &str) -> Result<(), SessionError> {
        let (_, decision) = self
            .tree
            .append_label_change(target, Some(label), self.now, &mut self.ids)
            .map_err(|e| SessionRejection::Entry(e.to_string()))?;
        self.persist(decision);
        Ok(())
    }

    /// Pi's `recordBashResult`: into the transcript and the session now, or, while the agent
    /// streams, at the next prompt (so a tool call and its result stay adjacent).
    pub(super) fn record_bash(
        &mut self,
        message: BashExecutionMessage,
    ) -> Result<(), SessionError> {
        let message = AgentMessage::BashExecution(message);
        if self.agent.is_streaming() {
            self.pending_bash.push(message);
            return Ok(());
        }
        self.append_to_transcript(vec![message])
    }

    /// Delivers `!command` results held back while the agent was streaming.
    pub(super) fn flush_pending_bash(&mut self) -> Result<(), SessionError> {
        let pending = std::mem::take(&mut self.pending_bash);
        if pending.is_empty() {
            return Ok(());
        }
        self.append_to_transcript(pending)
    }

    fn append_to_transcript(&mut self, added: Vec<AgentMessage>) -> Result<(), SessionError> {
        for message in &added {
            let (_, decision) = self
                .tree
                .append_message(message.clone(), self.now, &mut self.ids);
            self.persist(decision);
        }
        let mut messages = self.agent.messages().to_vec();
        messages.extend(added);
        self.replace_messages(messages)
    }
}
