//! Moving the session's leaf to another entry, optionally summarising the branch left behind
//! (Pi's `navigateTree`), and recording `!command` results (Pi's `recordBashResult`).

use serde_json::json;

use crate::agent::hooks::{HookDecision, HookEvent, HookOutcome, HookPayload, SuppliedSummary};
use crate::agent::{CallId, Effect, Input, ModelRequest};
use crate::compaction::branch::{
    branch_summary_request, collect_entries_for_branch_summary, finish_branch_summary,
    prepare_branch_entries, BranchSummaryOutcome,
};
use crate::compaction::files::FileOps;
use crate::event::{Event, SessionEvent, SummarySource};
use crate::message::StopReason;
use crate::message::{AgentMessage, BashExecutionMessage};
use crate::session::entry::SessionEntry;

use super::compaction::answer_of;
use super::contract::{NavigateRequest, Navigated, Reply, SessionError, SessionRejection};
use super::machine::SessionMachine;
use super::provider_hooks::Hooks;
use super::retry::{delay_ms, is_retryable};

/// The text of a branch summary when the abandoned branch holds no messages.
const NO_CONTENT: &str = "No content to summarize";

/// A navigation waiting for its branch summary.
#[derive(Clone, Debug)]
pub(super) struct NavigateJob {
    pub(super) call: CallId,
    request: NavigateRequest,
    file_ops: FileOps,
    /// The summary request, sent again by a retry.
    summary_request: ModelRequest,
    /// Retries made so far.
    attempt: u32,
    /// Waiting for the backoff before the next attempt.
    pub(super) waiting: bool,
}

/// A navigation waiting for its `session_before_tree` handlers.
#[derive(Clone, Debug)]
pub(super) struct TreeAsk {
    call: CallId,
    request: NavigateRequest,
    /// An abort came meanwhile (the handlers' signal fired): a summary the model would write
    /// is not asked for.
    aborted: bool,
}

impl SessionMachine {
    /// Whether a navigation is in progress (its handlers asked, or its summary written).
    pub(super) fn navigating(&self) -> bool {
        self.navigation.is_some() || self.tree_ask.is_some()
    }

    /// The tree hook point (`session_before_tree`, `session_tree`) whose handlers are heard:
    /// a notice they send waits for what they asked for, which Pi writes at once, so a front
    /// end holds their notices until that call is no longer heard.
    pub fn tree_hook_heard(&self) -> Option<CallId> {
        self.tree_ask
            .as_ref()
            .map(|ask| ask.call)
            .or(self.notifications.tree)
    }

    /// Starts `navigateTree`: asks the `session_before_tree` handlers first, where an
    /// extension handles it; finishes at once unless a summary has to be written.
    pub(super) fn navigate(&mut self, request: NavigateRequest) -> Result<(), SessionError> {
        if self.agent.is_streaming() {
            return Err(SessionRejection::NavigateWhileAnswering.into());
        }
        if self.is_compacting() || self.navigating() {
            return Err(SessionRejection::NavigateWhileCompacting.into());
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
        if self
            .agent
            .handled_hooks()
            .contains(HookEvent::SessionBeforeTree)
        {
            let (entries, common_ancestor) = collect_entries_for_branch_summary(
                &self.tree,
                old_leaf.as_deref(),
                &request.target_id,
            );
            let mut preparation = json!({
                "targetId": request.target_id,
                "oldLeafId": old_leaf,
                "commonAncestorId": common_ancestor,
                "entriesToSummarize": entries,
                "userWantsSummary": request.summarize,
            });
            if let Some(instructions) = &request.custom_instructions {
                preparation["customInstructions"] = json!(instructions);
            }
            if request.replace_instructions {
                preparation["replaceInstructions"] = json!(true);
            }
            if let Some(label) = &request.label {
                preparation["label"] = json!(label);
            }
            let call = self.agent.reserve_call();
            self.push_hook(call, HookPayload::SessionBeforeTree { preparation });
            self.tree_ask = Some(TreeAsk {
                call,
                request,
                aborted: false,
            });
            return Ok(());
        }
        self.navigate_on(request, None)
    }

    /// Whether `call` is a navigation's `session_before_tree`.
    pub(super) fn awaits_tree_hook(&self, call: CallId) -> bool {
        self.tree_ask.as_ref().is_some_and(|ask| ask.call == call)
    }

    /// The `session_before_tree` handlers' answer: what they asked for is applied first; a
    /// cancel ends the navigation (`cancelled`, nothing moved); otherwise their instructions
    /// and label replace those asked for, and their summary, when one was asked for, is
    /// written instead of the model's (Pi's `navigateTree`).
    pub(super) fn tree_hook_decided(&mut self, outcome: HookOutcome) -> Result<(), SessionError> {
        self.apply_asked_actions(&outcome.actions)?;
        let Some(TreeAsk {
            mut request,
            aborted,
            ..
        }) = self.tree_ask.take()
        else {
            return Ok(());
        };
        let answer = match outcome.decision {
            HookDecision::SessionBeforeTree(answer) => answer,
            _ => Default::default(),
        };
        if answer.cancel {
            self.reply(Reply::Navigated(Ok(Navigated {
                cancelled: true,
                ..Navigated::default()
            })));
            return Ok(());
        }
        if let Some(instructions) = answer.custom_instructions {
            request.custom_instructions = Some(instructions);
        }
        if let Some(replace) = answer.replace_instructions {
            request.replace_instructions = replace;
        }
        if let Some(label) = answer.label {
            request.label = Some(label);
        }
        let supplied = answer.summary.filter(|_| request.summarize);
        if aborted && request.summarize && supplied.is_none() {
            self.navigation_aborted();
            return Ok(());
        }
        self.navigate_on(request, supplied)
    }

    /// The navigation once its handlers were heard: `supplied`, their summary, written as
    /// given; else the model's, when one is asked for and there is something to summarise.
    fn navigate_on(
        &mut self,
        request: NavigateRequest,
        supplied: Option<SuppliedSummary>,
    ) -> Result<(), SessionError> {
        if let Some(supplied) = supplied {
            // An empty summary writes no entry (Pi tests the text), and no model is asked.
            let summary = (!supplied.summary.is_empty()).then(|| {
                let details = supplied.details.unwrap_or(serde_json::Value::Null);
                (supplied.summary, details, supplied.usage)
            });
            return self.complete_navigation(&request, summary, true);
        }
        let old_leaf = self.tree.leaf_id().map(str::to_owned);
        let (entries, _) =
            collect_entries_for_branch_summary(&self.tree, old_leaf.as_deref(), &request.target_id);
        if !request.summarize || entries.is_empty() {
            return self.complete_navigation(&request, None, false);
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
            self.agent.thinking_level(),
            self.now,
        );
        let Some(summary_request) = summary_request else {
            let details = json!({"readFiles": [], "modifiedFiles": []});
            let summary = Some((NO_CONTENT.to_owned(), details, None));
            return self.complete_navigation(&request, summary, false);
        };
        let call = self.agent.reserve_call();
        self.send_call(call, summary_request.clone(), Hooks::HeadersOnly);
        self.navigation = Some(NavigateJob {
            call,
            request,
            file_ops,
            summary_request,
            attempt: 0,
            waiting: false,
        });
        Ok(())
    }

    /// The branch summary's answer: retried as a compaction's summary is (Pi 1.5's
    /// `completeSummarization` with `source: "branchSummary"`), else the navigation's end.
    pub(super) fn navigation_answer(&mut self, input: Input) -> Result<(), SessionError> {
        let Some((_, answer)) = answer_of(input) else {
            return Ok(());
        };
        let Some(job) = self.navigation.as_ref() else {
            return Ok(());
        };
        let attempt = job.attempt;
        let window = self.agent.model().context_window;
        let retries = if self.retry.enabled {
            self.retry.max_retries
        } else {
            0
        };
        if answer.stop_reason == StopReason::Error
            && attempt < retries
            && is_retryable(&answer, window)
        {
            let delay = delay_ms(&self.retry, attempt + 1);
            self.emit(Event::Session(SessionEvent::SummarizationRetryScheduled {
                attempt: attempt + 1,
                max_attempts: retries,
                delay_ms: delay,
                error_message: answer
                    .error_message
                    .clone()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "Unknown error".into()),
            }));
            if let Some(job) = self.navigation.as_mut() {
                job.attempt += 1;
                job.waiting = true;
            }
            self.retry_summary_soon(delay);
            return Ok(());
        }
        if attempt > 0 {
            self.emit(Event::Session(SessionEvent::SummarizationRetryFinished));
        }
        let Some(job) = self.navigation.take() else {
            return Ok(());
        };
        match finish_branch_summary(&answer, &job.file_ops) {
            BranchSummaryOutcome::Summary {
                summary,
                read_files,
                modified_files,
                usage,
            } => {
                let details = json!({"readFiles": read_files, "modifiedFiles": modified_files});
                self.complete_navigation(&job.request, Some((summary, details, usage)), false)
            }
            BranchSummaryOutcome::Aborted => {
                self.navigation_aborted();
                Ok(())
            }
            BranchSummaryOutcome::Error(error) => {
                self.reply(Reply::Navigated(Err(error)));
                Ok(())
            }
        }
    }

    fn navigation_aborted(&mut self) {
        self.reply(Reply::Navigated(Ok(Navigated {
            cancelled: true,
            aborted: true,
            ..Navigated::default()
        })));
    }

    /// The backoff of a failed branch summary call is over: the same request again.
    pub(super) fn retry_navigation_call(&mut self) -> Result<(), SessionError> {
        let Some(request) = self
            .navigation
            .as_ref()
            .filter(|job| job.waiting)
            .map(|job| job.summary_request.clone())
        else {
            return Ok(());
        };
        self.emit(Event::Session(
            SessionEvent::SummarizationRetryAttemptStart {
                source: SummarySource::BranchSummary,
                reason: None,
            },
        ));
        let call = self.agent.reserve_call();
        self.send_call(call, request, Hooks::HeadersOnly);
        if let Some(job) = self.navigation.as_mut() {
            job.call = call;
            job.waiting = false;
        }
        Ok(())
    }

    /// Aborting a navigation: its summary call is cancelled (it ends as aborted when it
    /// answers); during a retry's backoff the navigation ends at once.
    pub(super) fn abort_navigation(&mut self) {
        if let Some(ask) = self.tree_ask.as_mut() {
            // The handlers' signal fires; their answer is still awaited.
            if !std::mem::replace(&mut ask.aborted, true) {
                let call = ask.call;
                self.out.effects.push(Effect::Cancel { call });
            }
            return;
        }
        let Some(job) = self.navigation.as_ref() else {
            return;
        };
        if !job.waiting {
            let call = job.call;
            self.out.effects.push(Effect::Cancel { call });
            return;
        }
        if self.cancel_summary_retry() {
            self.emit(Event::Session(SessionEvent::SummarizationRetryFinished));
        }
        self.navigation = None;
        self.navigation_aborted();
    }

    /// Moves the leaf, writing `summary` (`from_extension`: a handler supplied it) and the
    /// label; the `session_tree` handlers hear of it.
    fn complete_navigation(
        &mut self,
        request: &NavigateRequest,
        summary: Option<(String, serde_json::Value, Option<serde_json::Value>)>,
        from_extension: bool,
    ) -> Result<(), SessionError> {
        let Some(target) = self.tree.entry(&request.target_id).cloned() else {
            return Ok(());
        };
        let old_leaf = self.tree.leaf_id().map(str::to_owned);
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
            Some((text, details, usage)) => {
                let (id, decision) = self
                    .tree
                    .branch_with_summary(
                        new_leaf.as_deref(),
                        text,
                        (!details.is_null()).then(|| details.clone()),
                        usage.clone(),
                        Some(from_extension),
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
        if self.agent.handled_hooks().contains(HookEvent::SessionTree) {
            let summary_entry = summary_entry_id
                .as_deref()
                .and_then(|id| self.tree.entry(id))
                .and_then(|entry| serde_json::to_value(entry).ok());
            self.tell_session(HookPayload::SessionTree {
                new_leaf_id: self.tree.leaf_id().map(str::to_owned),
                old_leaf_id: old_leaf,
                summary_entry,
                from_extension: summary.is_some().then_some(from_extension),
            });
        }
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
