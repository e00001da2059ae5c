//! Pi 1.5's boundaries on the session's side: what the handlers of `turn_end` and
//! `agent_before_settle` left to append is written before the loop goes on (Pi's
//! `_commitBoundaryDrafts`: each entry announced as `entry_appended`, a custom message joining
//! the context without message events, a context edit or compaction making the transcript the
//! session's projection), and a continuation asked for without a context the
//! model could answer is refused with Pi's error. Before a run settles, where an extension
//! handles `agent_before_settle`, the session asks it (unless the run was aborted) and, when
//! it asks to go on or messages are queued, continues the run instead of settling.

use serde_json::{Map, Value};

use crate::agent::boundary::{outcome_of, BoundaryDraft};
use crate::agent::hooks::{HookDecision, HookError, HookEvent, HookOutcome, HookPayload};
use crate::agent::{CallId, Change, Input};
use crate::compaction::prepare::projected_tokens;
use crate::message::{AgentMessage, CustomMessage};
use crate::session::entry::SessionEntry;

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
    /// Writes the drafts a boundary's handlers left, in order (Pi's `_commitBoundaryDrafts`);
    /// after a context edit or compaction the transcript becomes the session's projection, so
    /// the next request sends it. Drafts the session cannot write are all dropped, reported as
    /// Pi reports them (`Invalid boundary entries: ...`).
    pub(super) fn commit_boundary(
        &mut self,
        event: HookEvent,
        drafts: &[BoundaryDraft],
    ) -> Result<(), SessionError> {
        if let Some(error) = drafts.iter().find_map(|d| self.refusal(d)) {
            self.report_boundary_error(event, format!("Invalid boundary entries: {error}"));
            return Ok(());
        }
        let mut projected = false;
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
                BoundaryDraft::ContextEdit {
                    target_id,
                    replacement,
                } => {
                    let replacement = self.normalized(target_id, replacement.clone());
                    match self.tree.append_context_edit(
                        target_id,
                        replacement,
                        self.now,
                        &mut self.ids,
                    ) {
                        Ok((id, decision)) => {
                            self.persist(decision);
                            self.emit_entry_appended(&id);
                            projected = true;
                        }
                        Err(error) => self.report_boundary_error(event, error.to_string()),
                    }
                }
                BoundaryDraft::Compaction {
                    summary,
                    first_kept_entry_id,
                    details,
                    usage,
                } => {
                    let tokens_before = projected_tokens(
                        &self.tree.branch_path(None),
                        &self.tree.context().into_messages(),
                    );
                    let (id, decision) = self.tree.append_compaction(
                        summary,
                        first_kept_entry_id.as_deref(),
                        tokens_before,
                        details.clone(),
                        usage.clone(),
                        Some(true),
                        self.now,
                        &mut self.ids,
                    );
                    self.persist(decision);
                    self.emit_entry_appended(&id);
                    projected = true;
                }
                BoundaryDraft::Other(_) => {}
            }
        }
        if projected {
            let messages = self.tree.context().into_messages();
            self.agent_step(Input::Change(Change::Projection(messages)))?;
        }
        Ok(())
    }

    /// Why Pi's session manager would refuse `draft` on the branch as it is (its
    /// `appendContextEdit` checks, in its order), if it would.
    fn refusal(&self, draft: &BoundaryDraft) -> Option<String> {
        let BoundaryDraft::ContextEdit {
            target_id,
            replacement,
        } = draft
        else {
            return None;
        };
        let shaped = replacement
            .as_ref()
            .is_none_or(|r| matches!(r.get("content"), Some(Value::String(_) | Value::Array(_))));
        if !shaped {
            return Some(
                "Context edit replacement must be null or contain string/array content".into(),
            );
        }
        let Some(target) = self.tree.entry(target_id) else {
            return Some(format!("Entry {target_id} not found"));
        };
        if !self
            .tree
            .branch_path(None)
            .iter()
            .any(|e| e.id() == target_id)
        {
            return Some(format!("Entry {target_id} is not on the active branch"));
        }
        let editable = matches!(target, SessionEntry::CustomMessage(_))
            || matches!(
                target.message(),
                Some(
                    AgentMessage::User(_)
                        | AgentMessage::Assistant(_)
                        | AgentMessage::ToolResult(_)
                )
            );
        (!editable).then(|| format!("Entry {target_id} does not contribute editable model content"))
    }

    /// Pi's replacement as written: a string content of an assistant message or tool result
    /// becomes one text block.
    fn normalized(&self, target_id: &str, replacement: Option<Value>) -> Option<Value> {
        let blocks = matches!(
            self.tree.entry(target_id).and_then(|e| e.message()),
            Some(AgentMessage::Assistant(_) | AgentMessage::ToolResult(_))
        );
        match replacement {
            Some(Value::Object(mut fields)) if blocks => {
                if let Some(Value::String(text)) = fields.get("content") {
                    let block = serde_json::json!([{"type": "text", "text": text}]);
                    fields = Map::from_iter([("content".to_owned(), block)]);
                }
                Some(Value::Object(fields))
            }
            other => other,
        }
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
