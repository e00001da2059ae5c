//! Pi's automatic retry as the session runs it (`_handleRetryableError`): whether a failed run
//! will retry, the attempt scheduled after its backoff and announced, the failed attempt omitted
//! from what the model sees by `context_edit` entries, and a pending retry cancelled.

use crate::message::{AgentMessage, AssistantMessage, ContentBlock};

use super::contract::{SessionError, SessionRejection};
use super::machine::SessionMachine;
use super::retry::{delay_ms, is_retryable};
use super::wake::Wake;
use crate::event::{Event, SessionEvent};

impl SessionMachine {
    /// Pi 1.5's `_willRetryAfterAgentEnd`: no abort was asked for, retries are on and left, and
    /// the run's last answer failed in a way that is retried.
    pub(super) fn will_retry_after(&self, messages: &[AgentMessage]) -> bool {
        if self.abort_requested
            || !self.retry.enabled
            || self.retry_attempt >= self.retry.max_retries
        {
            return false;
        }
        let context_window = self.agent.model().context_window;
        messages
            .iter()
            .rev()
            .find_map(|m| match m {
                AgentMessage::Assistant(a) => Some(is_retryable(a, context_window)),
                _ => None,
            })
            .unwrap_or(false)
    }

    /// Pi's `_handleRetryableError`; true when a retry was scheduled.
    pub(super) fn schedule_retry(
        &mut self,
        failed: &AssistantMessage,
    ) -> Result<bool, SessionError> {
        if !self.retry.enabled {
            return Ok(false);
        }
        self.retry_attempt += 1;
        if self.retry_attempt > self.retry.max_retries {
            let attempt = self.retry_attempt - 1;
            self.retry_attempt = 0;
            self.emit(Event::Session(SessionEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: failed.error_message.clone(),
            }));
            return Ok(false);
        }
        let delay = delay_ms(&self.retry, self.retry_attempt);
        self.emit(Event::Session(SessionEvent::AutoRetryStart {
            attempt: self.retry_attempt,
            max_attempts: self.retry.max_retries,
            delay_ms: delay,
            error_message: failed
                .error_message
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "Unknown error".into()),
        }));
        self.omit_attempt()?;
        self.wake = Some((self.now.saturating_add(delay), Wake::Retry));
        // A virtual model's router is told of it with the retry's request.
        self.route_gate.failed = Some(failed.clone());
        Ok(true)
    }

    /// Pi 1.5's `_omitRecoveryAttempt`: the last assistant message on the branch (the failed
    /// attempt) and the results of its tool calls get one `context_edit` each, omitting them
    /// from what the model sees; the file keeps them. Each edit is announced as
    /// `entry_appended`, and the agent's transcript becomes the edited context.
    pub(super) fn omit_attempt(&mut self) -> Result<(), SessionError> {
        let targets: Vec<String> = {
            let path = self.tree.branch_path(None);
            let Some(at) = path
                .iter()
                .rposition(|e| matches!(e.message(), Some(AgentMessage::Assistant(_))))
            else {
                return Ok(());
            };
            let Some(AgentMessage::Assistant(failed)) = path[at].message() else {
                return Ok(());
            };
            let calls: Vec<&str> = failed
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolCall(call) => Some(call.id.as_str()),
                    _ => None,
                })
                .collect();
            let results = path[at + 1..]
                .iter()
                .copied()
                .map_while(|e| match e.message() {
                    Some(AgentMessage::Assistant(_)) => None,
                    _ => Some(e),
                })
                .filter(|e| match e.message() {
                    Some(AgentMessage::ToolResult(r)) => calls.contains(&r.tool_call_id.as_str()),
                    _ => false,
                });
            std::iter::once(path[at])
                .chain(results)
                .map(|e| e.id().to_owned())
                .collect()
        };
        for target in targets {
            let (id, decision) = self
                .tree
                .append_context_edit(&target, None, self.now, &mut self.ids)
                .map_err(|e| SessionRejection::Entry(e.to_string()))?;
            self.persist(decision);
            self.emit_entry_appended(&id);
        }
        let context = self.tree.context().into_messages();
        self.replace_messages(context)
    }

    /// Pi's `abortRetry`: a retry waiting for its backoff is cancelled.
    pub(super) fn abort_retry(&mut self) {
        if self.is_retrying() {
            self.wake = None;
            self.route_gate.failed = None;
            let attempt = std::mem::take(&mut self.retry_attempt);
            self.emit(Event::Session(SessionEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled".into()),
            }));
        }
    }
}
