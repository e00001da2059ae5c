//! Running a compaction inside the session machine: the summary calls (one, or two in parallel
//! when the cut splits a turn), their answers, and the compaction entry (Pi's `compact`,
//! `_runAutoCompaction` and `AgentSession.compact`).

use serde_json::json;

use crate::agent::{CallId, Effect, Input, StreamEvent};
use crate::compaction::prepare::{prepare_compaction, CompactionPreparation};
use crate::compaction::summary::{
    compaction_summary, history_summary_request, summary_text, turn_prefix_summary_request,
};
use crate::event::{CompactionReason, CompactionResult, Event, SessionEvent};
use crate::message::Extra;
use crate::session::entry::SessionEntry;

use super::contract::{Reply, SessionError};
use super::machine::SessionMachine;

/// Where a compaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JobState {
    /// A manual compaction waits for the aborted run to end.
    WaitingForIdle,
    /// The summary calls are out.
    Calling,
}

/// One summary call and, once answered, its text or error.
#[derive(Clone, Debug)]
struct Summary {
    call: CallId,
    result: Option<Result<String, String>>,
    what: &'static str,
}

/// A compaction in progress.
#[derive(Clone, Debug)]
pub(super) struct CompactionJob {
    pub(super) state: JobState,
    reason: CompactionReason,
    will_retry: bool,
    custom_instructions: Option<String>,
    preparation: Option<CompactionPreparation>,
    history: Option<Summary>,
    turn_prefix: Option<Summary>,
    aborted: bool,
}

impl CompactionJob {
    /// Whether `call` is one of this job's summary calls.
    pub(super) fn owns(&self, call: CallId) -> bool {
        self.summaries().any(|s| s.call == call)
    }

    fn summaries(&self) -> impl Iterator<Item = &Summary> {
        self.history.iter().chain(self.turn_prefix.iter())
    }

    fn slot(&mut self, call: CallId) -> Option<&mut Summary> {
        self.history
            .iter_mut()
            .chain(self.turn_prefix.iter_mut())
            .find(|s| s.call == call)
    }

    fn answered(&self) -> bool {
        self.summaries().all(|s| s.result.is_some())
    }
}

impl SessionMachine {
    /// Starts a compaction: at once when the agent is idle, else after the run ends.
    pub(super) fn start_compaction(
        &mut self,
        reason: CompactionReason,
        will_retry: bool,
        custom_instructions: Option<String>,
    ) -> Result<(), SessionError> {
        self.queue_compaction(reason, will_retry, custom_instructions);
        if !self.agent.is_streaming() {
            self.begin_compaction_calls()?;
        }
        Ok(())
    }

    /// Records a compaction waiting for the agent to be idle. While a manual one waits, the
    /// session does not listen to the run it aborts (see [`SessionMachine::deaf`]).
    pub(super) fn queue_compaction(
        &mut self,
        reason: CompactionReason,
        will_retry: bool,
        custom_instructions: Option<String>,
    ) {
        // A compaction supersedes a retry still waiting for its backoff: continuing the old
        // transcript while it is being replaced could only race (Pi's timer does race here).
        self.abort_retry();
        self.compaction = Some(CompactionJob {
            state: JobState::WaitingForIdle,
            reason,
            will_retry,
            custom_instructions,
            preparation: None,
            history: None,
            turn_prefix: None,
            aborted: false,
        });
    }

    /// Pi disconnects from the agent for a manual compaction: the run it aborts ends unheard
    /// (its last events are neither emitted nor persisted).
    pub(super) fn deaf(&self) -> bool {
        self.compaction
            .as_ref()
            .is_some_and(|job| job.state == JobState::WaitingForIdle)
    }

    /// Emits `compaction_start`, plans the compaction and sends its summary calls.
    pub(super) fn begin_compaction_calls(&mut self) -> Result<(), SessionError> {
        let Some(mut job) = self.compaction.take() else {
            return Ok(());
        };
        self.emit(Event::Session(SessionEvent::CompactionStart {
            reason: job.reason,
        }));
        let path = self.tree.branch_path(None);
        let ends_in_compaction = matches!(path.last(), Some(SessionEntry::Compaction(_)));
        let Some(preparation) = prepare_compaction(&path, self.compaction_settings) else {
            if job.reason == CompactionReason::Manual {
                let message = if ends_in_compaction {
                    "Already compacted"
                } else {
                    "Nothing to compact (session too small)"
                };
                return self.fail_compaction(&job, message.into());
            }
            return self.end_compaction(&job, None, false, None);
        };
        let model = self.agent.model().clone();
        let level = self.agent.thinking_level();
        let reserve = self.compaction_settings.reserve_tokens;
        let split = preparation.is_split_turn && !preparation.turn_prefix_messages.is_empty();
        if !split || !preparation.messages_to_summarize.is_empty() {
            let request = history_summary_request(
                &preparation.messages_to_summarize,
                &model,
                reserve,
                job.custom_instructions.as_deref(),
                preparation.previous_summary.as_deref(),
                level,
                self.now,
            );
            let call = self.agent.reserve_call();
            self.out.effects.push(Effect::CallModel { call, request });
            job.history = Some(Summary {
                call,
                result: None,
                what: "Summarization",
            });
        }
        if split {
            let request = turn_prefix_summary_request(
                &preparation.turn_prefix_messages,
                &model,
                reserve,
                level,
                self.now,
            );
            let call = self.agent.reserve_call();
            self.out.effects.push(Effect::CallModel { call, request });
            job.turn_prefix = Some(Summary {
                call,
                result: None,
                what: "Turn prefix summarization",
            });
        }
        job.preparation = Some(preparation);
        job.state = JobState::Calling;
        self.compaction = Some(job);
        Ok(())
    }

    /// An answer to a summary call.
    pub(super) fn compaction_answer(&mut self, input: Input) -> Result<(), SessionError> {
        let Some(job) = self.compaction.as_mut() else {
            return Ok(());
        };
        let (call, answer) = match input {
            Input::Model {
                call,
                event: StreamEvent::Done { message, .. },
            } => (call, Ok(message)),
            Input::Model {
                call,
                event: StreamEvent::Error { error, .. },
            } => (call, Ok(error)),
            Input::ModelFailed { call, error } => (call, Err(error)),
            _ => return Ok(()),
        };
        let Some(slot) = job.slot(call) else {
            return Ok(());
        };
        slot.result = Some(answer.and_then(|message| summary_text(&message, slot.what)));
        if job.answered() {
            self.finish_compaction()?;
        }
        Ok(())
    }

    fn finish_compaction(&mut self) -> Result<(), SessionError> {
        let Some(job) = self.compaction.take() else {
            return Ok(());
        };
        if job.aborted {
            return self.abort_ended(&job);
        }
        let mut texts = Vec::new();
        for summary in job.summaries() {
            match &summary.result {
                Some(Ok(text)) => texts.push(text.clone()),
                Some(Err(error)) => return self.fail_compaction(&job, error.clone()),
                None => return Ok(()),
            }
        }
        let Some(preparation) = &job.preparation else {
            return Ok(());
        };
        let (history, turn_prefix) = match (&job.history, &job.turn_prefix, texts.as_slice()) {
            (Some(_), Some(_), [history, prefix]) => (history.clone(), Some(prefix.as_str())),
            (None, Some(_), [prefix]) => ("No prior history.".to_owned(), Some(prefix.as_str())),
            (_, _, [history, ..]) => (history.clone(), None),
            _ => return Ok(()),
        };
        let summary = compaction_summary(&history, turn_prefix, &preparation.file_ops);
        let (read_files, modified_files) = preparation.file_ops.lists();
        let details = json!({ "readFiles": read_files, "modifiedFiles": modified_files });
        let (_, decision) = self.tree.append_compaction(
            &summary,
            &preparation.first_kept_entry_id,
            preparation.tokens_before,
            Some(details.clone()),
            Some(false),
            self.now,
            &mut self.ids,
        );
        self.persist(decision);
        let messages = self.tree.context().into_messages();
        self.replace_messages(messages)?;
        let result = CompactionResult {
            summary,
            first_kept_entry_id: preparation.first_kept_entry_id.clone(),
            tokens_before: preparation.tokens_before,
            details: Some(details),
            extra: Extra::new(),
        };
        self.end_compaction(&job, Some(result.clone()), false, None)?;
        if job.reason == CompactionReason::Manual {
            self.reply(Reply::Compacted(Ok(result)));
        } else if job.will_retry {
            self.drop_trailing_assistant(true)?;
            self.continue_soon();
        } else if self.agent.has_queued_messages() {
            self.continue_soon();
        }
        Ok(())
    }

    fn end_compaction(
        &mut self,
        job: &CompactionJob,
        result: Option<CompactionResult>,
        aborted: bool,
        error_message: Option<String>,
    ) -> Result<(), SessionError> {
        let will_retry = result.is_some() && job.will_retry;
        self.emit(Event::Session(SessionEvent::CompactionEnd {
            reason: job.reason,
            result,
            aborted,
            will_retry,
            error_message,
        }));
        Ok(())
    }

    fn fail_compaction(&mut self, job: &CompactionJob, error: String) -> Result<(), SessionError> {
        let text = match job.reason {
            CompactionReason::Manual => format!("Compaction failed: {error}"),
            CompactionReason::Overflow => format!("Context overflow recovery failed: {error}"),
            CompactionReason::Threshold => format!("Auto-compaction failed: {error}"),
        };
        self.end_compaction(job, None, false, Some(text))?;
        if job.reason == CompactionReason::Manual {
            self.reply(Reply::Compacted(Err(error)));
        }
        Ok(())
    }

    fn abort_ended(&mut self, job: &CompactionJob) -> Result<(), SessionError> {
        self.end_compaction(job, None, true, None)?;
        if job.reason == CompactionReason::Manual {
            self.reply(Reply::Compacted(Err("Compaction cancelled".into())));
        }
        Ok(())
    }

    /// `abortCompaction`: cancels the summary calls; the job ends as aborted when they answer.
    pub(super) fn abort_compaction(&mut self) -> Result<(), SessionError> {
        let Some(job) = self.compaction.as_mut() else {
            return Ok(());
        };
        if job.state == JobState::WaitingForIdle {
            return Ok(());
        }
        job.aborted = true;
        let cancels: Vec<CallId> = job
            .summaries()
            .filter(|s| s.result.is_none())
            .map(|s| s.call)
            .collect();
        for call in cancels {
            self.out.effects.push(Effect::Cancel { call });
        }
        Ok(())
    }
}
