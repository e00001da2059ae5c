//! The changes from outside the loop ([`Change`]): settings, the transcript, the queues, and
//! what extensions and the session put into a run in progress.

use std::sync::Arc;

use super::{AgentMachine, Change, LlmView, Phase};

impl AgentMachine {
    pub(super) fn apply_change(&mut self, change: Change) {
        match change {
            Change::SystemPrompt(prompt) => self.system_prompt = prompt,
            Change::Model(model) => self.model = model,
            Change::ThinkingLevel(level) => self.thinking_level = level,
            Change::Tools(tools) => self.tools = Arc::new(tools),
            Change::Messages(messages) => {
                self.messages = messages;
                self.llm_view = LlmView::default();
            }
            Change::OpenRequestGate => {
                if matches!(self.run.as_ref().map(|r| &r.phase), Some(Phase::Gated)) {
                    self.request_gate_open = true;
                    self.request_model();
                }
            }
            Change::RedoRequest => {
                let unanswered = matches!(
                    self.run.as_ref().map(|r| &r.phase),
                    Some(Phase::Model { assembly, .. }) if !assembly.started()
                );
                if unanswered {
                    // The request was gated before it was first made; it is not again. Its
                    // route stands: it asks the `context` hooks now.
                    self.request_gate_open = true;
                    if let Some(run) = self.run.as_mut() {
                        run.route_stands = true;
                    }
                    self.request_model();
                }
            }
            Change::ReplaceMessage { original, message } => {
                self.replace_in_turn(&original, &message);
                if let Some(place) = self.messages.iter_mut().rev().find(|m| **m == original) {
                    *place = message;
                    self.llm_view = LlmView::default();
                }
            }
            Change::AppendContext(message) => {
                if let Some(run) = &mut self.run {
                    run.appended.push(self.messages.len());
                }
                self.messages.push(message);
            }
            Change::Projection(messages) => self.take_projection(messages),
            Change::AtTurnEnd(message) => match &mut self.run {
                Some(run) => run.held.push(message),
                None => self.append_outside(message),
            },
            Change::SteeringMode(mode) => self.steering_mode = mode,
            Change::FollowUpMode(mode) => self.follow_up_mode = mode,
            Change::ToolExecution(mode) => self.tool_execution = mode,
            Change::SessionId(id) => {
                // Pi drops a session's provider state when the session is disposed.
                if id != self.session_id {
                    self.thread_state = None;
                    self.session_diagnostics = Arc::default();
                }
                self.session_id = id;
            }
            Change::ClearSteeringQueue => self.steering.clear(),
            Change::ClearFollowUpQueue => self.follow_up.clear(),
            Change::ClearAllQueues => {
                self.steering.clear();
                self.follow_up.clear();
            }
            Change::Reset => {
                self.messages.clear();
                self.llm_view = LlmView::default();
                self.streaming_message = None;
                self.pending_tool_calls.clear();
                self.error_message = None;
                self.steering.clear();
                self.follow_up.clear();
            }
        }
    }
}
