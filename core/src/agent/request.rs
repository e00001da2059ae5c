//! A turn's request: the conversation as the model sees it (the `context` decision, Pi's
//! `transformContext`, the LLM view), the prompt in force and the run's settings, or at once
//! Pi's aborted answer when the run was aborted. Where extensions handle `message_end`, the
//! request waits until the session has heard them out (a message it sends may be replaced).

use std::sync::Arc;

use crate::message::{AgentMessage, AssistantMessage, StopReason};

use super::super::contract::{Effect, ModelRequest, ToolDefinition};
use super::super::hooks::HookEvent;
use super::super::model_route::is_virtual;
use super::super::system;
use super::{AgentMachine, Assembly, Phase, ABORTED_REQUEST};

impl AgentMachine {
    /// Makes the turn's request (Pi's `streamAssistantResponse` up to the provider call).
    pub(super) fn request_model(&mut self) {
        self.routed_level = None;
        let Some(run) = &self.run else { return };
        if run.aborted {
            let settings = &run.settings;
            let message = AssistantMessage {
                api: settings.model.api.clone(),
                provider: settings.model.provider.clone(),
                model: settings.model.id.clone(),
                stop_reason: StopReason::Aborted,
                timestamp: self.now,
                error_message: Some(ABORTED_REQUEST.to_owned()),
                // Pi's provider answers an aborted signal at once.
                duration_ms: Some(0),
                ..AssistantMessage::default()
            };
            let message = self.stamp_response(message);
            return self.finish_response(message, false);
        }
        // A message a request would carry may still be replaced by `message_end` handlers: the
        // request is made once the session has heard them out.
        if self.handled_hooks.contains(HookEvent::MessageEnd) && !self.request_gate_open {
            if let Some(run) = self.run.as_mut() {
                run.phase = Phase::Gated;
            }
            return;
        }
        self.request_gate_open = false;
        // A virtual model's request is routed before the `context` hooks see it.
        let route_first = self
            .run
            .as_ref()
            .is_some_and(|r| is_virtual(&r.settings.model) && !r.route_stands);
        let decided = match self.run.as_mut().map(|r| r.context_decided.take()) {
            Some(Some(decided)) => decided,
            _ if route_first => None,
            _ if self.ask_context() => return,
            _ => None,
        };
        let with_system = match self.run.as_mut().map(|r| r.system_context_decided.take()) {
            Some(Some(with_system)) => with_system,
            _ if route_first => None,
            _ if self.ask_context_with_system(decided.as_deref()) => {
                if let Some(run) = self.run.as_mut() {
                    run.context_decided = Some(decided);
                }
                return;
            }
            _ => None,
        };
        let Some(run) = &self.run else { return };
        let context = &self.messages[..run.context_len];
        // What a `context_with_system` handler returned is the whole conversation, system
        // messages and all: it is sent as the transcript's would be.
        let (context, decided) = match &with_system {
            Some(whole) => (whole.as_slice(), None),
            None => (context, decided),
        };
        let source = decided.as_deref().unwrap_or(context);
        let transformed = match self.hooks.transform_context(source) {
            Ok(t) => t,
            Err(thrown) => return self.fail_run(thrown),
        };
        let alone = self.hooks.converts_each_message_alone();
        let placed_in = |messages: &[AgentMessage]| {
            system::placed(messages, alone, |part| {
                self.hooks.convert_to_llm(part).map(|m| m.len())
            })
        };
        // Pi puts only the current prompt back at the head of a conversation a handler chose.
        let converted = match (&transformed, &decided) {
            (None, None) if alone && with_system.is_none() => {
                self.llm_view.extended(context, self.hooks.as_ref())
            }
            (transformed, None) => {
                let messages = transformed.as_deref().unwrap_or(source);
                self.hooks
                    .convert_to_llm(messages)
                    .and_then(|m| Ok((Arc::new(m), Arc::new(placed_in(messages)?))))
            }
            (transformed, Some(_)) => self
                .hooks
                .convert_to_llm(transformed.as_deref().unwrap_or(source))
                .map(|m| (Arc::new(m), Arc::new(Vec::new()))),
        };
        let (messages, system_messages) = match converted {
            Ok(converted) => converted,
            Err(thrown) => return self.fail_run(thrown),
        };
        let settings = run.settings.clone();
        let recorded = system::SystemState::of(context);
        let request = ModelRequest {
            model: settings.model,
            system_prompt: match settings.forced_system_prompt {
                Some(forced) => forced,
                None if recorded.recorded => recorded.render(),
                // A `context_with_system` handler left no system message: no prompt (Pi
                // reports it as the handler's error).
                None if with_system.is_some() => String::new(),
                None => settings.system_prompt,
            },
            messages,
            // Pi 1.5 declares the tools in the system messages: a conversation a
            // `context_with_system` handler returned sends the ones it declares.
            tools: match with_system {
                Some(_) => system::tool_definitions(&recorded.tools),
                // The declarations a `prepareLoadout` hides are left out of requests (Pi's
                // projection of the transcript's declarations).
                None => settings
                    .tools
                    .iter()
                    .filter(|tool| !self.hides(&tool.name))
                    .map(ToolDefinition::from)
                    .collect(),
            },
            reasoning: settings.reasoning,
            session_id: settings.session_id,
            max_tokens: None,
            thread: self.thread_state.clone(),
            session_diagnostics: Arc::clone(&self.session_diagnostics),
            system_messages,
            max_retries: None,
            provider_hooked: None,
        };
        self.call_in_flight = true;
        let call = self.new_call();
        if let Some(run) = &mut self.run {
            run.route_stands = false;
            run.phase = Phase::Model {
                call,
                assembly: Assembly::default(),
            };
        }
        self.effect(Effect::CallModel { call, request });
    }
}
