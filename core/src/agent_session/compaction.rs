//! Compaction inside the session machine: when one starts (Pi's `_checkCompaction` after an
//! answer, on threshold or overflow, and a manual `compact`), the summary calls (the history,
//! then the prefix of a split turn, one after the other as Pi 1.5.2 awaits them), each retried
//! with the session's retry settings (`retryAssistantCall`, announced by `summarization_retry_*`),
//! and the compaction entry (Pi's `compact`, `_runAutoCompaction` and `AgentSession.compact`).
//!
//! Where extensions handle them, a compaction (manual, threshold or overflow alike) waits at two
//! hook points: `session_before_compact` after `compaction_start`, with Pi's preparation and
//! the branch (a cancel ends it as aborted, `Compaction cancelled`; a supplied compaction is
//! written as given, `fromHook: true`, with no summary request), and `session_compact` once the
//! entry is written, before `compaction_end`; `session_compact_failed` after the `compaction_end`
//! of one that failed, was aborted or cancelled, before its caller hears it (that compaction has
//! ended: a manual `compact` may start meanwhile, as Pi's `compact()` has returned from its
//! state by then; an automatic one's waits for them, as Pi's waits for idle). An abort while
//! the `session_before_compact` handlers run cancels their hook point (their `signal` fires), and
//! so does a handler's `ctx.abort()` or `ctx.compact()`. Their decisions are inputs, so a replay
//! needs no extension.

use serde_json::{json, Value};

use crate::agent::hooks::{
    HookAction, HookDecision, HookEvent, HookOutcome, HookPayload, SuppliedCompaction,
};
use crate::agent::{CallId, Change, Effect, Input, ModelRequest, StreamEvent};
use crate::compaction::prepare::{context_has_edits, projected_tokens};
use crate::compaction::prepare::{prepare_compaction, CompactionPreparation};
use crate::compaction::summary::{
    combine_usage, compaction_summary, history_summary_request, summary_text,
    turn_prefix_summary_request, usage_value,
};
use crate::compaction::tokens::estimate_tokens;
use crate::compaction::tokens::{
    calculate_context_tokens, estimate_context_tokens, should_compact,
};
use crate::event::{CompactionReason, CompactionResult, Event, SessionEvent, SummarySource};
use crate::message::{AgentMessage, AssistantMessage, Extra, StopReason};
use crate::overflow::is_context_overflow;
use crate::session::entry::SessionEntry;
use crate::session::time::ms_from_iso;

mod failure;

use super::contract::{Reply, SessionError, SessionRejection};
use super::machine::SessionMachine;
use super::provider_hooks::Hooks;
use super::retry::{delay_ms, is_retryable};

/// What a second context overflow in a row says (no further compaction is tried).
const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// What a second answer in a row cut at the output limit says (Pi 1.5).
const LENGTH_RECOVERY_FAILED: &str =
    "Truncated response recovery failed after one compact-and-retry attempt.";

/// The error of a compaction aborted or cancelled by an extension (Pi's).
const CANCELLED: &str = "Compaction cancelled";

/// Where a compaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JobState {
    /// A manual compaction waits for the aborted run to end.
    WaitingForIdle,
    /// The `session_before_compact` handlers decide (cancel, supply the entry, or neither).
    Deciding,
    /// The summary calls are out.
    Calling,
    /// The entry is written; the `session_compact` handlers run before `compaction_end`.
    Notifying,
    /// It failed (`compaction_end` is out); the `session_compact_failed` handlers run before
    /// the caller hears it.
    Failed,
}

/// Which summary a call asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    History,
    TurnPrefix,
}

impl Part {
    /// How Pi names the summary in its errors.
    fn what(self) -> &'static str {
        match self {
            Part::History => "Summarization",
            Part::TurnPrefix => "Turn prefix summarization",
        }
    }
}

/// The summary call in flight, or waiting for its retry.
#[derive(Clone, Debug)]
struct Summary {
    part: Part,
    call: CallId,
    request: ModelRequest,
    /// Retries made so far.
    attempt: u32,
    /// Waiting for the backoff before the next attempt.
    waiting: bool,
}

/// A compaction in progress.
#[derive(Clone, Debug)]
pub(super) struct CompactionJob {
    pub(super) state: JobState,
    reason: CompactionReason,
    will_retry: bool,
    custom_instructions: Option<String>,
    preparation: Option<CompactionPreparation>,
    current: Option<Summary>,
    /// The history summary's text and usage, once answered (before a split turn's prefix).
    history: Option<(String, Option<Value>)>,
    aborted: bool,
    /// Asked by an extension's `ctx.compact()`: its end answers no RPC `compact`.
    pub(super) asked: bool,
    /// The hook point the job waits on (`session_before_compact` or `session_compact`).
    hook: Option<CallId>,
    /// The result announced once the `session_compact` handlers ran.
    ending: Option<CompactionResult>,
    /// The number of the `onComplete`/`onError` of the `ctx.compact()` that asked for it.
    pub(super) callback: Option<u64>,
    /// An extension supplied the compaction (Pi's `fromExtension`).
    supplied: bool,
    /// What the caller hears once the `session_compact_failed` handlers ran.
    failure: Option<String>,
    /// The number of the `compact` that asked for it (its answer carries it).
    compact: u64,
    /// Asked once the agent's run had ended while extensions were still hearing its events:
    /// the job waits for them, and those events are the session's (it is not deaf to them).
    hears_held: bool,
}

impl CompactionJob {
    fn new(
        reason: CompactionReason,
        will_retry: bool,
        custom_instructions: Option<String>,
    ) -> Self {
        CompactionJob {
            state: JobState::WaitingForIdle,
            reason,
            will_retry,
            custom_instructions,
            preparation: None,
            current: None,
            history: None,
            aborted: false,
            asked: false,
            hook: None,
            ending: None,
            callback: None,
            supplied: false,
            failure: None,
            compact: 0,
            hears_held: false,
        }
    }
}

impl CompactionJob {
    /// Whether the job's end answers the `compact` that asked for it.
    fn replies(&self) -> bool {
        self.reason == CompactionReason::Manual && !self.asked
    }
}

impl CompactionJob {
    /// Whether `call` is this job's summary call.
    pub(super) fn owns(&self, call: CallId) -> bool {
        self.current
            .as_ref()
            .is_some_and(|s| s.call == call && !s.waiting)
    }
}

/// What a summary call answered: the message, or the transport's error.
pub(super) fn answer_of(input: Input) -> Option<(CallId, AssistantMessage)> {
    match input {
        Input::Model {
            call,
            event: StreamEvent::Done { message, .. },
        } => Some((call, message)),
        Input::Model {
            call,
            event: StreamEvent::Error { error, .. },
        } => Some((call, error)),
        Input::ModelFailed { call, error } => Some((
            call,
            AssistantMessage {
                stop_reason: StopReason::Error,
                error_message: Some(error),
                ..AssistantMessage::default()
            },
        )),
        _ => None,
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
        self.compaction = Some(CompactionJob::new(reason, will_retry, custom_instructions));
    }

    /// Pi disconnects from the agent for a manual compaction: the run it aborts ends unheard
    /// (its last events are neither emitted nor persisted).
    pub(super) fn deaf(&self) -> bool {
        self.compaction
            .as_ref()
            .is_some_and(|job| job.state == JobState::WaitingForIdle && !job.hears_held)
    }

    /// Plans the compaction and sends its first summary call. With nothing to summarise, a
    /// manual compaction is refused (after its `compaction_start`) and an automatic one does not
    /// start at all (Pi 1.5's `_runAutoCompaction` returns before its `compaction_start`).
    pub(super) fn begin_compaction_calls(&mut self) -> Result<(), SessionError> {
        let Some(mut job) = self.compaction.take() else {
            return Ok(());
        };
        let path = self.tree.branch_path(None);
        let ends_in_compaction = matches!(path.last(), Some(SessionEntry::Compaction(_)));
        let Some(preparation) = prepare_compaction(&path, self.compaction_settings) else {
            if job.reason == CompactionReason::Manual {
                self.emit(Event::Session(SessionEvent::CompactionStart {
                    reason: job.reason,
                }));
                let message = if ends_in_compaction {
                    "Already compacted"
                } else {
                    "Nothing to compact (session too small)"
                };
                return self.fail_compaction(&job, message.into());
            }
            return Ok(());
        };
        let asks = self
            .agent
            .handled_hooks()
            .contains(HookEvent::SessionBeforeCompact);
        let branch_entries: Vec<Value> = match asks {
            true => path
                .iter()
                .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
                .collect(),
            false => Vec::new(),
        };
        self.emit(Event::Session(SessionEvent::CompactionStart {
            reason: job.reason,
        }));
        if asks {
            let payload = HookPayload::SessionBeforeCompact {
                preparation: preparation_json(&preparation),
                branch_entries,
                custom_instructions: job.custom_instructions.clone(),
                reason: job.reason,
                will_retry: job.will_retry,
            };
            let call = self.agent.reserve_call();
            job.preparation = Some(preparation);
            job.state = JobState::Deciding;
            job.hook = Some(call);
            self.compaction = Some(job);
            self.push_hook(call, payload);
            return Ok(());
        }
        job.preparation = Some(preparation);
        self.compaction = Some(job);
        self.summarize();
        Ok(())
    }

    /// Sends the first summary call of the planned job.
    fn summarize(&mut self) {
        let Some(mut job) = self.compaction.take() else {
            return;
        };
        let Some(preparation) = &job.preparation else {
            return;
        };
        let split = preparation.is_split_turn && !preparation.turn_prefix_messages.is_empty();
        let first = if !split || !preparation.messages_to_summarize.is_empty() {
            Part::History
        } else {
            if let Some(previous) = &preparation.previous_summary {
                job.history = Some((previous.clone(), None));
            }
            Part::TurnPrefix
        };
        job.state = JobState::Calling;
        self.compaction = Some(job);
        self.send_summary_call(first);
    }

    /// Whether `call` is the hook point the compaction waits on.
    pub(super) fn owns_compaction_hook(&self, call: CallId) -> bool {
        self.compaction
            .iter()
            .chain(&self.failing)
            .any(|job| job.hook == Some(call))
    }

    /// The extensions' answer at the compaction's hook point (which
    /// [`Self::owns_compaction_hook`] checked): what they asked for is applied first, as Pi's
    /// handlers apply it while it awaits them. At `session_before_compact`, a cancel ends the
    /// compaction as aborted (Pi's `Compaction cancelled`), a supplied compaction is written as
    /// given (`fromHook: true`, no summary request), else the model summarises; an abort that
    /// came meanwhile, or a handler's `ctx.abort()` or `ctx.compact()` (Pi's `abort()` fires the
    /// signal the handlers were given), ends it as aborted. After `session_compact`, the
    /// compaction ends; after `session_compact_failed`, the failed one's caller hears it.
    pub(super) fn compaction_hook_decided(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        self.apply_asked_actions(&outcome.actions)?;
        if let Some(at) = self.failing.iter().position(|job| job.hook == Some(call)) {
            let mut job = self.failing.remove(at);
            job.hook = None;
            return match job.failure.take() {
                Some(error) => self.tell_failure(&job, error),
                None => Ok(()),
            };
        }
        let Some(mut job) = self.compaction.take() else {
            return Ok(());
        };
        job.hook = None;
        if job.state == JobState::Deciding && outcome.actions.iter().any(HookAction::aborts) {
            job.aborted = true;
            if self.run_active {
                self.abort_requested = true;
            }
        }
        match (job.state, outcome.decision) {
            (JobState::Notifying, _) => {
                let result = job.ending.take();
                self.conclude(job, result)
            }
            (JobState::Deciding, decision) if job.aborted => {
                job.supplied = matches!(
                    decision,
                    HookDecision::SessionBeforeCompact {
                        cancel: false,
                        compaction: Some(_)
                    }
                );
                self.abort_ended(&job)
            }
            (JobState::Deciding, HookDecision::SessionBeforeCompact { cancel: true, .. }) => {
                self.abort_ended(&job)
            }
            (
                JobState::Deciding,
                HookDecision::SessionBeforeCompact {
                    compaction: Some(supplied),
                    ..
                },
            ) => {
                self.compaction = Some(job);
                self.write_compaction(supplied, true)
            }
            (JobState::Deciding, _) => {
                self.compaction = Some(job);
                self.summarize();
                Ok(())
            }
            _ => {
                self.compaction = Some(job);
                Ok(())
            }
        }
    }

    /// Sends the request for `part` of the job's summary.
    fn send_summary_call(&mut self, part: Part) {
        let model = self.agent.model().clone();
        let level = self.agent.thinking_level();
        let now = self.now;
        let Some(job) = self.compaction.as_ref() else {
            return;
        };
        let Some(preparation) = &job.preparation else {
            return;
        };
        let custom = job.custom_instructions.as_deref();
        let request = match part {
            Part::History => history_summary_request(
                &preparation.messages_to_summarize,
                &model,
                custom,
                preparation.previous_summary.as_deref(),
                level,
                now,
            ),
            Part::TurnPrefix => turn_prefix_summary_request(
                &preparation.turn_prefix_messages,
                &model,
                custom,
                level,
                now,
            ),
        };
        let call = self.agent.reserve_call();
        self.send_call(call, request.clone(), Hooks::HeadersOnly);
        if let Some(job) = self.compaction.as_mut() {
            job.current = Some(Summary {
                part,
                call,
                request,
                attempt: 0,
                waiting: false,
            });
        }
    }

    /// The backoff of a failed summary call is over: `summarization_retry_attempt_start`, and
    /// the same request again.
    pub(super) fn retry_summary_call(&mut self) -> Result<(), SessionError> {
        let Some(job) = self.compaction.as_ref() else {
            return Ok(());
        };
        let reason = job.reason;
        let Some(request) = job
            .current
            .as_ref()
            .filter(|s| s.waiting)
            .map(|s| s.request.clone())
        else {
            return Ok(());
        };
        self.emit(Event::Session(
            SessionEvent::SummarizationRetryAttemptStart {
                source: SummarySource::Compaction,
                reason: Some(reason),
            },
        ));
        let call = self.agent.reserve_call();
        self.send_call(call, request, Hooks::HeadersOnly);
        if let Some(current) = self.compaction.as_mut().and_then(|j| j.current.as_mut()) {
            current.call = call;
            current.waiting = false;
        }
        Ok(())
    }

    /// An answer to the summary call: retried when it failed with a retryable error and retries
    /// are left, else the next summary or the compaction's end.
    pub(super) fn compaction_answer(&mut self, input: Input) -> Result<(), SessionError> {
        let Some((call, answer)) = answer_of(input) else {
            return Ok(());
        };
        let Some(job) = self.compaction.as_ref() else {
            return Ok(());
        };
        let Some(current) = job.current.clone().filter(|s| s.call == call) else {
            return Ok(());
        };
        let aborted = job.aborted;
        let split = job
            .preparation
            .as_ref()
            .is_some_and(|p| p.is_split_turn && !p.turn_prefix_messages.is_empty());
        let stored_history = job.history.clone();
        let window = self.agent.model().context_window;
        let retries = if self.retry.enabled {
            self.retry.max_retries
        } else {
            0
        };
        if !aborted
            && answer.stop_reason == StopReason::Error
            && current.attempt < retries
            && is_retryable(&answer, window)
        {
            let attempt = current.attempt + 1;
            let delay = delay_ms(&self.retry, attempt);
            self.emit(Event::Session(SessionEvent::SummarizationRetryScheduled {
                attempt,
                max_attempts: retries,
                delay_ms: delay,
                error_message: answer
                    .error_message
                    .clone()
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "Unknown error".into()),
            }));
            if let Some(current) = self.compaction.as_mut().and_then(|j| j.current.as_mut()) {
                current.attempt = attempt;
                current.waiting = true;
            }
            self.retry_summary_soon(delay);
            return Ok(());
        }
        if current.attempt > 0 {
            self.emit(Event::Session(SessionEvent::SummarizationRetryFinished));
        }
        if aborted {
            let job = self.compaction.take();
            return match job {
                Some(job) => self.abort_ended(&job),
                None => Ok(()),
            };
        }
        let text = match summary_text(&answer, current.part.what()) {
            Ok(text) => text,
            Err(error) => {
                let job = self.compaction.take();
                return match job {
                    Some(job) => self.fail_compaction(&job, error),
                    None => Ok(()),
                };
            }
        };
        let usage = usage_value(&answer.usage);
        if current.part == Part::History && split {
            if let Some(job) = self.compaction.as_mut() {
                job.history = Some((text, usage));
                job.current = None;
            }
            self.send_summary_call(Part::TurnPrefix);
            return Ok(());
        }
        let (history, prefix) = match current.part {
            Part::History => ((text, usage), None),
            Part::TurnPrefix => {
                let history =
                    stored_history.unwrap_or_else(|| ("No prior history.".to_owned(), None));
                (history, Some((text, usage)))
            }
        };
        self.finish_compaction(history, prefix)
    }

    fn finish_compaction(
        &mut self,
        history: (String, Option<Value>),
        prefix: Option<(String, Option<Value>)>,
    ) -> Result<(), SessionError> {
        let Some(job) = self.compaction.as_ref() else {
            return Ok(());
        };
        let Some(preparation) = &job.preparation else {
            return Ok(());
        };
        let (history_text, history_usage) = history;
        let (summary, usage) = match prefix {
            Some((prefix_text, prefix_usage)) => (
                compaction_summary(&history_text, Some(&prefix_text), &preparation.file_ops),
                match (history_usage, prefix_usage) {
                    (Some(history), Some(prefix)) => usage_value(&combine_usage(&history, &prefix)),
                    (_, prefix) => prefix,
                },
            ),
            None => (
                compaction_summary(&history_text, None, &preparation.file_ops),
                history_usage,
            ),
        };
        let (read_files, modified_files) = preparation.file_ops.lists();
        let details = json!({ "readFiles": read_files, "modifiedFiles": modified_files });
        let written = SuppliedCompaction {
            summary,
            first_kept_entry_id: preparation.first_kept_entry_id.clone(),
            tokens_before: preparation.tokens_before,
            details: Some(details),
            usage,
        };
        self.write_compaction(written, false)
    }

    /// Writes the compaction entry (`fromHook`: whether an extension supplied it) and replaces
    /// the transcript; the `session_compact` handlers, where there are some, run before the
    /// compaction ends.
    fn write_compaction(
        &mut self,
        written: SuppliedCompaction,
        from_extension: bool,
    ) -> Result<(), SessionError> {
        let Some(mut job) = self.compaction.take() else {
            return Ok(());
        };
        let (id, decision) = self.tree.append_compaction(
            &written.summary,
            Some(&written.first_kept_entry_id),
            written.tokens_before,
            written.details.clone(),
            written.usage.clone(),
            Some(from_extension),
            self.now,
            &mut self.ids,
        );
        self.persist(decision);
        let messages = self.tree.context().into_messages();
        let estimated_tokens_after = messages.iter().map(estimate_tokens).sum();
        // Compacted before a routed request, the run goes on: its own messages stay its own.
        if self.agent.is_streaming() {
            self.agent_step(Input::Change(Change::Projection(messages)))?;
        } else {
            self.replace_messages(messages)?;
        }
        let result = CompactionResult {
            summary: written.summary,
            first_kept_entry_id: written.first_kept_entry_id,
            tokens_before: written.tokens_before,
            estimated_tokens_after: Some(estimated_tokens_after),
            usage: written.usage,
            details: written.details,
            extra: Extra::new(),
        };
        let entry = self
            .tree
            .entry(&id)
            .and_then(|e| serde_json::to_value(e).ok());
        match entry {
            Some(compaction_entry)
                if self
                    .agent
                    .handled_hooks()
                    .contains(HookEvent::SessionCompact) =>
            {
                let call = self.agent.reserve_call();
                let payload = HookPayload::SessionCompact {
                    compaction_entry,
                    from_extension,
                    reason: job.reason,
                    will_retry: job.will_retry,
                };
                job.state = JobState::Notifying;
                job.hook = Some(call);
                job.ending = Some(result);
                self.compaction = Some(job);
                self.push_hook(call, payload);
                Ok(())
            }
            _ => self.conclude(job, Some(result)),
        }
    }

    /// The written compaction ends: `compaction_end` with its result, the `compact` answered,
    /// and the run continued where Pi continues it.
    fn conclude(
        &mut self,
        job: CompactionJob,
        result: Option<CompactionResult>,
    ) -> Result<(), SessionError> {
        let Some(result) = result else {
            return Ok(());
        };
        self.end_compaction(&job, Some(result.clone()), false, None)?;
        if let Some(callback) = job.callback {
            self.call_back(callback, Ok(result.clone()));
        }
        if job.reason == CompactionReason::Manual {
            if job.replies() {
                self.reply(Reply::Compacted(job.compact, Ok(result)));
            }
        } else if job.will_retry {
            self.drop_trailing_assistant(true)?;
            self.continue_soon();
        } else if self.agent.has_queued_messages() && !self.agent.is_streaming() {
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

    /// `abortCompaction`: cancels the summary call (the job ends as aborted when it answers);
    /// during a retry's backoff the job ends at once.
    pub(super) fn abort_compaction(&mut self) -> Result<(), SessionError> {
        let Some(job) = self.compaction.as_mut() else {
            return Ok(());
        };
        if matches!(job.state, JobState::WaitingForIdle | JobState::Notifying) {
            return Ok(());
        }
        job.aborted = true;
        // The handlers are awaited, as Pi awaits them; the job ends as aborted once they ran.
        // Their signal fires (the hook point's call is cancelled).
        if job.state == JobState::Deciding {
            if let Some(call) = job.hook {
                self.out.effects.push(Effect::Cancel { call });
            }
            return Ok(());
        }
        let in_flight = job.current.as_ref().filter(|s| !s.waiting).map(|s| s.call);
        match in_flight {
            Some(call) => self.out.effects.push(Effect::Cancel { call }),
            None => {
                if self.cancel_summary_retry() {
                    self.emit(Event::Session(SessionEvent::SummarizationRetryFinished));
                }
                if let Some(job) = self.compaction.take() {
                    self.abort_ended(&job)?;
                }
            }
        }
        Ok(())
    }

    /// The timestamp (ms) of the latest compaction on the current branch.
    pub(super) fn latest_compaction_ms(&self) -> Option<i64> {
        self.tree
            .branch_path(None)
            .into_iter()
            .rev()
            .find_map(|entry| match entry {
                SessionEntry::Compaction(c) => Some(ms_from_iso(&c.timestamp).unwrap_or(i64::MAX)),
                _ => None,
            })
    }

    /// Pi's `_checkCompaction`.
    pub(super) fn check_compaction(
        &mut self,
        assistant: &AssistantMessage,
        skip_aborted: bool,
    ) -> Result<(), SessionError> {
        let settings = self.compaction_settings;
        if !settings.enabled || (skip_aborted && assistant.stop_reason == StopReason::Aborted) {
            return Ok(());
        }
        // Under a virtual selection, the physical model that produced the message supplies
        // the limits (Pi's `_modelForMessage`).
        let model = self
            .route_gate
            .limits_for(self.agent.model(), assistant)
            .clone();
        let context_window = model.context_window;
        let same_model = assistant.provider == model.provider && assistant.model == model.id;
        let compacted_at = self.latest_compaction_ms();
        let before_compaction =
            |timestamp: u64| compacted_at.is_some_and(|at| i128::from(timestamp) <= i128::from(at));
        if before_compaction(assistant.timestamp) {
            return Ok(());
        }
        let overflow = same_model && is_context_overflow(assistant, Some(context_window));
        // Pi 1.5: an answer cut at the output limit below the model's own limit is recovered
        // like an overflow (`isRecoverableLength`).
        let cut = same_model
            && assistant.stop_reason == StopReason::Length
            && model.max_tokens > 0
            && assistant.usage.output < model.max_tokens;
        if overflow || cut {
            // A complete answer cannot be asked again: it is compacted after, and kept.
            if assistant.stop_reason == StopReason::Stop {
                return self.start_compaction(CompactionReason::Overflow, false, None);
            }
            if self.overflow_recovery_attempted {
                let text = match overflow {
                    true => OVERFLOW_RECOVERY_FAILED,
                    false => LENGTH_RECOVERY_FAILED,
                };
                self.emit(Event::Session(SessionEvent::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(text.into()),
                }));
                let job = CompactionJob::new(CompactionReason::Overflow, false, None);
                self.notify_failure(&job, Some(text.into()), false, None);
                return Ok(());
            }
            self.overflow_recovery_attempted = true;
            self.omit_attempt()?;
            return self.start_compaction(CompactionReason::Overflow, true, None);
        }
        // Pi 1.5: a context with edits is estimated as the projection leaves it; a failed
        // answer or one reporting no usage from the last usage before it (unless that usage
        // predates the latest compaction), or from the messages alone when none reported any.
        let path = self.tree.branch_path(None);
        let direct = calculate_context_tokens(&assistant.usage);
        let tokens = if context_has_edits(&path) {
            projected_tokens(&path, &self.tree.context().into_messages())
        } else if assistant.stop_reason == StopReason::Error || direct == 0 {
            let messages = self.agent.messages();
            let estimate = estimate_context_tokens(messages);
            if let Some(AgentMessage::Assistant(source)) =
                estimate.last_usage_index.and_then(|i| messages.get(i))
            {
                if before_compaction(source.timestamp) {
                    return Ok(());
                }
            }
            estimate.tokens
        } else {
            direct
        };
        if should_compact(tokens, context_window, &settings) {
            self.start_compaction(CompactionReason::Threshold, false, None)?;
        }
        Ok(())
    }

    /// The `compact`s accepted so far: a front end numbers its waiting `compact`s with it, to
    /// match each answer ([`Reply::Compacted`]) with its own.
    pub fn compacts_accepted(&self) -> u64 {
        self.compacts
    }

    /// Pi's `compact()` (RPC `compact`). It aborts first: a compaction running ends aborted
    /// (its own `compact` answered as cancelled), then this one starts. Not held while a failed
    /// one's `session_compact_failed` handlers run (a manual one has ended by then, and the
    /// compaction starts at once; after an automatic one it is held until the run settled).
    /// Refused while another is already held behind an aborted one.
    pub(super) fn compact(
        &mut self,
        custom_instructions: Option<String>,
    ) -> Result<(), SessionError> {
        if self.held_compaction.is_some() {
            return Err(SessionRejection::CompactionInProgress.into());
        }
        if self.compaction.is_some() {
            self.compacts += 1;
            let mut job = CompactionJob::new(CompactionReason::Manual, false, custom_instructions);
            job.compact = self.compacts;
            self.held_compaction = Some(job);
            return self.abort();
        }
        if self.navigating() {
            return Err(SessionRejection::NavigationInProgress.into());
        }
        self.compacts += 1;
        // Pi's `compact()` waits for idle: an automatic compaction has not ended while its
        // `session_compact_failed` handlers run, nor has the run it belongs to.
        if self.automatic_failing() {
            let mut job = CompactionJob::new(CompactionReason::Manual, false, custom_instructions);
            job.compact = self.compacts;
            self.held_compaction = Some(job);
            return self.abort();
        }
        self.queue_compaction(CompactionReason::Manual, false, custom_instructions);
        if let Some(job) = self.compaction.as_mut() {
            job.compact = self.compacts;
        }
        self.abort()?;
        if self.agent.is_streaming() {
            return Ok(());
        }
        // The run is over but extensions still hear its last events, which the session holds:
        // Pi's `compact()` waits for the session to be idle, so the compaction starts once
        // they are out (`after_step`), and they are the session's like any run's.
        if self.notifications.holds() {
            if let Some(job) = self.compaction.as_mut() {
                job.hears_held = true;
            }
            return Ok(());
        }
        self.begin_compaction_calls()
    }
}

/// Pi's `CompactionPreparation` as its handlers read it (the file operations' sets as arrays in
/// their insertion order, `previousSummary` left out when there is none).
fn preparation_json(preparation: &CompactionPreparation) -> Value {
    let mut value = json!({
        "firstKeptEntryId": preparation.first_kept_entry_id,
        "messagesToSummarize": preparation.messages_to_summarize,
        "turnPrefixMessages": preparation.turn_prefix_messages,
        "isSplitTurn": preparation.is_split_turn,
        "tokensBefore": preparation.tokens_before,
    });
    if let (Some(previous), Some(object)) = (&preparation.previous_summary, value.as_object_mut()) {
        object.insert("previousSummary".into(), json!(previous));
    }
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "fileOps".into(),
            json!({
                "read": in_order(&preparation.file_ops.read),
                "written": in_order(&preparation.file_ops.written),
                "edited": in_order(&preparation.file_ops.edited),
            }),
        );
        object.insert(
            "settings".into(),
            json!({
                "enabled": preparation.settings.enabled,
                "reserveTokens": preparation.settings.reserve_tokens,
                "keepRecentTokens": preparation.settings.keep_recent_tokens,
            }),
        );
    }
    value
}

/// A set's paths in the order they were added, as Pi's `[...set]` lists them.
fn in_order(paths: &indexmap::IndexSet<String>) -> Vec<&str> {
    paths.iter().map(String::as_str).collect()
}
