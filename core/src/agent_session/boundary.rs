//! Pi 1.5's boundaries on the session's side: what the handlers of `turn_end` and
//! `agent_before_settle` left to append is written before the loop goes on (Pi's
//! `_commitBoundaryDrafts`: each entry announced as `entry_appended`, a custom message joining
//! the context without message events), and a continuation asked for without a context the
//! model could answer is refused with Pi's error. Before a run settles, where an extension
//! handles `agent_before_settle`, the session asks it (unless the run was aborted) and, when
//! it asks to go on or messages are queued, continues the run instead of settling.

use crate::agent::boundary::{outcome_of, BoundaryDraft};
use crate::agent::hooks::{HookDecision, HookError, HookEvent, HookOutcome, HookPayload};
use crate::agent::{CallId, Change, Input};
use crate::message::{AgentMessage, CustomMessage};

use super::contract::SessionError;
use super::machine::SessionMachine;

/// Where the session is in asking `agent_before_settle` as a run is about to settle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum BeforeSettle {
    /// Not asked since the run last went on.
    #[default]
    NotAsked,
    /// Asked under this call.
    Asking(CallId),
    /// The handlers let the run settle.
    Settling,
}

/// Pi's extension path of the errors the session reports for a boundary.
const BOUNDARY: &str = "<boundary>";

impl SessionMachine {
    /// Writes the drafts a boundary's handlers left, in order.
    pub(super) fn commit_boundary(
        &mut self,
        event: HookEvent,
        drafts: &[BoundaryDraft],
    ) -> Result<(), SessionError> {
        for draft in drafts {
            match draft {
                BoundaryDraft::Custom { custom_type, data } => {
                    self.append_custom(custom_type, data.clone())
                }
                BoundaryDraft::CustomMessage {
                    custom_type,
                    content,
                    display,
                    details,
                } => {
                    let (id, decision) = self.tree.append_custom_message_entry(
                        custom_type,
                        content.clone(),
                        *display,
                        details.clone(),
                        self.now,
                        &mut self.ids,
                    );
                    self.persist(decision);
                    self.emit_entry_appended(&id);
                    let message = AgentMessage::Custom(CustomMessage {
                        custom_type: custom_type.clone(),
                        content: content.clone(),
                        display: *display,
                        details: details.clone(),
                        timestamp: self.now,
                        extra: Default::default(),
                    });
                    self.agent_step(Input::Change(Change::AppendContext(message)))?;
                }
                BoundaryDraft::Other(_) => self.report_boundary_error(
                    event,
                    format!(
                        "{} entries from {} are not written by this harness yet",
                        draft.kind(),
                        event.name()
                    ),
                ),
            }
        }
        Ok(())
    }

    /// Whether the model could answer the context as it is now (Pi's `canContinue`): its last
    /// message is not the model's, or messages are queued.
    fn can_continue(&self) -> bool {
        let last = self.agent.messages().last();
        last.is_some_and(|m| !matches!(m, AgentMessage::Assistant(_)))
            || self.agent.has_queued_messages()
    }

    /// The continuation a boundary's decision asks for, if the context allows it (else Pi's
    /// error, and none).
    pub(super) fn boundary_goes_on(&mut self, event: HookEvent, decision: &HookDecision) -> bool {
        let asked = matches!(
            decision,
            HookDecision::Boundary {
                continue_run: true,
                ..
            }
        );
        if asked && !self.can_continue() {
            self.report_boundary_error(
                event,
                format!(
                    "{} requested continuation without runnable model context",
                    event.name()
                ),
            );
            return false;
        }
        asked
    }

    fn report_boundary_error(&mut self, event: HookEvent, error: String) {
        self.report_hook_errors(&[HookError {
            extension: BOUNDARY.to_owned(),
            event,
            error,
        }]);
    }

    /// As the run is about to settle: asks `agent_before_settle` when an extension handles it
    /// and it was not asked yet; `true` while the handlers decide.
    pub(super) fn asks_before_settle(&mut self) -> bool {
        match self.before_settle {
            BeforeSettle::Asking(_) => true,
            BeforeSettle::Settling => {
                self.before_settle = BeforeSettle::NotAsked;
                false
            }
            BeforeSettle::NotAsked => {
                if self.abort_requested
                    || !self
                        .agent
                        .handled_hooks()
                        .contains(HookEvent::AgentBeforeSettle)
                {
                    return false;
                }
                let call = self.agent.reserve_call();
                let last = self
                    .agent
                    .messages()
                    .iter()
                    .rev()
                    .find(|m| matches!(m, AgentMessage::Assistant(_)));
                let payload = HookPayload::AgentBeforeSettle {
                    outcome: outcome_of(last).to_owned(),
                };
                self.before_settle = BeforeSettle::Asking(call);
                self.push_hook(call, payload);
                true
            }
        }
    }

    /// Whether `call` is the `agent_before_settle` the session waits for.
    pub(super) fn awaits_before_settle(&self, call: CallId) -> bool {
        self.before_settle == BeforeSettle::Asking(call)
    }

    /// The `agent_before_settle` handlers are done: their actions and drafts are applied, then
    /// the run goes on (asked for, or messages queued) or settles.
    pub(super) fn before_settle_decided(
        &mut self,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        self.apply_asked_actions(&outcome.actions)?;
        if let HookDecision::Boundary { entries, .. } = &outcome.decision {
            self.commit_boundary(HookEvent::AgentBeforeSettle, entries)?;
        }
        let asked = self.boundary_goes_on(HookEvent::AgentBeforeSettle, &outcome.decision);
        let aborted = self.abort_requested || outcome.actions.iter().any(|a| a.aborts());
        if !aborted && (asked || self.agent.has_queued_messages()) {
            self.before_settle = BeforeSettle::NotAsked;
            return self.agent_step(Input::Continue);
        }
        self.before_settle = BeforeSettle::Settling;
        if aborted {
            self.abort()?;
        }
        Ok(())
    }
}
