//! A model response as it streams in: its events assembled into Pi's snapshots, and the
//! finished message stamped as Pi 1.5 stamps it and handed to the loop (the turn's end, or its
//! tool calls).

use std::sync::Arc;

use crate::event::AgentEvent;
use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::model::ThinkingLevel;

use super::{AgentMachine, Applied, Patch, Phase, Run, StreamEvent};

impl AgentMachine {
    pub(super) fn on_stream_event(&mut self, event: StreamEvent) {
        // The call's thread state is the session's, not the message's.
        if let StreamEvent::Patch(Patch::Thread(state)) = event {
            self.thread_state = state;
            return;
        }
        let Some(Run {
            phase: Phase::Model { assembly, .. },
            ..
        }) = &mut self.run
        else {
            return;
        };
        let started = assembly.started();
        // `check` already refused events that do not fit, so this cannot fail.
        let Ok(applied) = assembly.apply(event) else {
            return;
        };
        match applied {
            Applied::Started(message) => self.emit(AgentEvent::MessageStart {
                message: AgentMessage::Assistant(message),
            }),
            Applied::Update(event) => {
                let message = match &event {
                    crate::event::AssistantMessageEvent::Done { .. }
                    | crate::event::AssistantMessageEvent::Error { .. } => return,
                    crate::event::AssistantMessageEvent::Start { partial }
                    | crate::event::AssistantMessageEvent::TextStart { partial, .. }
                    | crate::event::AssistantMessageEvent::TextDelta { partial, .. }
                    | crate::event::AssistantMessageEvent::TextEnd { partial, .. }
                    | crate::event::AssistantMessageEvent::ThinkingStart { partial, .. }
                    | crate::event::AssistantMessageEvent::ThinkingDelta { partial, .. }
                    | crate::event::AssistantMessageEvent::ThinkingEnd { partial, .. }
                    | crate::event::AssistantMessageEvent::ToolCallStart { partial, .. }
                    | crate::event::AssistantMessageEvent::ToolCallDelta { partial, .. }
                    | crate::event::AssistantMessageEvent::ToolCallEnd { partial, .. } => {
                        partial.clone()
                    }
                };
                self.emit(AgentEvent::MessageUpdate {
                    usage: message.head().usage.clone(),
                    assistant_message_event: event,
                    message,
                });
            }
            Applied::Silent => {}
            Applied::Finished(message) => {
                let message = self.stamp_response(message);
                self.finish_response(message, started)
            }
        }
    }

    /// What Pi 1.5 adds to a finished response: how long the call took, from the message's
    /// `timestamp` (the time the request was made) to now, and the run's thinking level.
    pub(super) fn stamp_response(&self, mut message: AssistantMessage) -> AssistantMessage {
        let Some(run) = &self.run else {
            return message;
        };
        if message.duration_ms.is_none() {
            message.duration_ms = Some(self.now.saturating_sub(message.timestamp));
        }
        let level = self
            .routed_level
            .or(run.settings.reasoning)
            .unwrap_or(ThinkingLevel::Off);
        message.thinking_level = Some(level.as_str().to_owned());
        message
    }

    /// A request refused before it went out (Pi's `prepareRequest` rejected): the turn's
    /// response is Pi's error message naming the selected model, with no duration or thinking
    /// level (no stream stamped it).
    pub(super) fn reject_request(&mut self, error: String) {
        let Some(run) = &mut self.run else { return };
        run.rejected = true;
        let model = &run.settings.model;
        let message = AssistantMessage {
            content: vec![crate::message::ContentBlock::text("")],
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: StopReason::Error,
            error_message: Some(error),
            timestamp: self.now,
            ..AssistantMessage::default()
        };
        self.finish_response(message, false);
    }

    /// The end of `streamAssistantResponse` and what the loop does with the message.
    pub(super) fn finish_response(&mut self, message: AssistantMessage, started: bool) {
        if std::mem::take(&mut self.call_in_flight) {
            if let Some(diagnostics) = message.diagnostics.as_ref().filter(|d| !d.is_empty()) {
                Arc::make_mut(&mut self.session_diagnostics).extend(diagnostics.iter().cloned());
            }
        }
        let message = AgentMessage::Assistant(message);
        if !started {
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            });
        }
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        self.sync_context();
        let AgentMessage::Assistant(assistant) = message else {
            return;
        };
        if assistant.stop_reason.ends_run() {
            return self.finish_turn(assistant, Vec::new(), false, true);
        }
        if assistant.tool_calls().next().is_none() {
            return self.finish_turn(assistant, Vec::new(), false, false);
        }
        self.start_tools(&assistant);
    }
}
