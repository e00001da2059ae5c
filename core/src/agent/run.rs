//! A run's life: how it begins (a prompt, a `continue()`, a run `before_agent_start` decided),
//! its turns (the system declaration, the messages injected, the steering and follow-up polls,
//! `turn_end` and the decision to go on), and how it ends (`agent_end`, a hook that threw, an
//! abort).

use std::collections::VecDeque;

use crate::event::AgentEvent;
use crate::message::{AgentMessage, AssistantMessage, StopReason};
use crate::model::ThinkingLevel;

use super::loadout::Resume;
use super::{
    system, AgentMachine, Assembly, CallId, Effect, LlmView, Phase, QueueMode, Run, RunSettings,
    TurnSummary,
};

impl AgentMachine {
    pub(super) fn drain(queue: &mut VecDeque<AgentMessage>, mode: QueueMode) -> Vec<AgentMessage> {
        match mode {
            QueueMode::All => queue.drain(..).collect(),
            QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
        }
    }

    pub(super) fn poll_steering(&mut self) -> Vec<AgentMessage> {
        if let Some(run) = &mut self.run {
            if std::mem::take(&mut run.skip_steering_poll) {
                return Vec::new();
            }
        }
        Self::drain(&mut self.steering, self.steering_mode)
    }

    pub(super) fn poll_follow_up(&mut self) -> Vec<AgentMessage> {
        Self::drain(&mut self.follow_up, self.follow_up_mode)
    }

    pub(super) fn continue_run(&mut self) {
        if matches!(self.messages.last(), Some(AgentMessage::Assistant(_))) {
            let steering = Self::drain(&mut self.steering, self.steering_mode);
            if !steering.is_empty() {
                return self.begin_run(Some(steering), true);
            }
            let follow_ups = self.poll_follow_up();
            return self.begin_run(Some(follow_ups), false);
        }
        self.begin_run(None, false);
    }

    /// `runAgentLoop` (with prompts) or `runAgentLoopContinue` (without).
    pub(super) fn begin_run(
        &mut self,
        prompts: Option<Vec<AgentMessage>>,
        skip_steering_poll: bool,
    ) {
        self.begin_run_with(prompts, skip_steering_poll, None, false);
    }

    /// A prompt's run as `before_agent_start` decided it.
    pub(super) fn begin_forced_run(
        &mut self,
        prompts: Vec<AgentMessage>,
        forced_system_prompt: Option<String>,
        aborted: bool,
    ) {
        self.begin_run_with(Some(prompts), false, forced_system_prompt, aborted);
    }

    pub(super) fn begin_run_with(
        &mut self,
        prompts: Option<Vec<AgentMessage>>,
        skip_steering_poll: bool,
        forced_system_prompt: Option<String>,
        aborted: bool,
    ) {
        let resume = Resume::Run {
            prompts,
            skip_steering_poll,
            forced_system_prompt,
            aborted,
        };
        let Some(Resume::Run {
            prompts,
            skip_steering_poll,
            forced_system_prompt,
            aborted,
        }) = self.ask_loadout(resume)
        else {
            return;
        };
        self.error_message = None;
        self.streaming_message = None;
        let start = self.messages.len();
        self.run = Some(Run {
            settings: RunSettings {
                model: self.model.clone(),
                system_prompt: self.system_prompt.clone(),
                tools: self.declared_tools(),
                reasoning: (self.thinking_level != ThinkingLevel::Off)
                    .then_some(self.thinking_level),
                tool_execution: self.tool_execution,
                session_id: self.session_id.clone(),
                forced_system_prompt,
            },
            start,
            context_len: start,
            skip_steering_poll,
            aborted,
            turns: 0,
            held: Vec::new(),
            appended: Vec::new(),
            earlier: Vec::new(),
            context_decided: None,
            system_context_decided: None,
            route_stands: false,
            rejected: false,
            phase: Phase::Model {
                call: CallId(0),
                assembly: Assembly::default(),
            },
        });
        self.emit(AgentEvent::AgentStart);
        self.emit(AgentEvent::TurnStart);
        self.declare_system();
        for prompt in prompts.unwrap_or_default() {
            self.emit(AgentEvent::MessageStart {
                message: prompt.clone(),
            });
            self.emit(AgentEvent::MessageEnd { message: prompt });
        }
        self.sync_context();
        let pending = self.poll_steering();
        self.turn_body(pending);
    }

    /// Pi 1.5's prompt and tool loadout before a turn's messages: the difference between the
    /// wanted prompt and tools and the transcript's, recorded as a system message.
    pub(super) fn declare_system(&mut self) {
        let Some(sections) = &self.system_sections else {
            return;
        };
        let tools: Vec<serde_json::Value> = self
            .declared_tools()
            .iter()
            .map(system::tool_declaration)
            .collect();
        if let Some(update) = system::update(&self.messages, sections, &tools, self.now) {
            let message = AgentMessage::System(update);
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            });
            self.emit(AgentEvent::MessageEnd { message });
        }
    }

    /// The loop's context catches up with the transcript.
    pub(super) fn sync_context(&mut self) {
        let len = self.messages.len();
        if let Some(run) = &mut self.run {
            run.context_len = len;
        }
    }

    /// One inner-loop iteration after its `turn_start`: inject pending messages, call the model.
    pub(super) fn turn_body(&mut self, pending: Vec<AgentMessage>) {
        for message in pending {
            self.emit(AgentEvent::MessageStart {
                message: message.clone(),
            });
            self.emit(AgentEvent::MessageEnd { message });
        }
        self.sync_context();
        self.request_model();
    }

    /// `turn_end`, `shouldStopAfterTurn`, the steering poll, and the decision to go on
    /// (`go_on`: a boundary's handlers asked for another turn with no new message).
    pub(super) fn after_turn(
        &mut self,
        assistant: AssistantMessage,
        results: Vec<AgentMessage>,
        terminate: bool,
        go_on: bool,
    ) {
        let has_more_tool_calls = !results.is_empty() && !terminate;
        self.emit(AgentEvent::TurnEnd {
            message: AgentMessage::Assistant(assistant.clone()),
            tool_results: results.clone(),
        });
        self.flush_held();
        let Some(run) = &self.run else { return };
        let stop = self.hooks.should_stop_after_turn(&TurnSummary {
            message: &assistant,
            tool_results: &results,
            context: &self.messages[..run.context_len],
            new_messages: &self.messages[run.start..],
        });
        match stop {
            Ok(true) => return self.end_run(),
            Ok(false) => {}
            Err(thrown) => return self.fail_run(thrown),
        }
        let mut pending = self.poll_steering();
        if !has_more_tool_calls && pending.is_empty() {
            pending = self.poll_follow_up();
            if pending.is_empty() && !go_on {
                return self.end_run();
            }
        }
        if let Some(Resume::NextTurn { pending }) = self.ask_loadout(Resume::NextTurn { pending }) {
            self.next_turn(pending);
        }
    }

    /// Pi 1.5.2's `prepareNextTurn` (the session's next-turn refresh): a turn after the first
    /// asks the model with the thinking level and declares the tools in force now, ones an
    /// extension or a front end set during the run included.
    pub(super) fn next_turn(&mut self, pending: Vec<AgentMessage>) {
        let reasoning = (self.thinking_level != ThinkingLevel::Off).then_some(self.thinking_level);
        let tools = self.declared_tools();
        let model = self.model.clone();
        if let Some(run) = self.run.as_mut() {
            run.settings.reasoning = reasoning;
            run.settings.tools = tools;
            run.settings.model = model;
        }
        self.emit(AgentEvent::TurnStart);
        self.declare_system();
        self.turn_body(pending);
    }

    pub(super) fn end_run(&mut self) {
        let messages = self.run_messages();
        self.emit(AgentEvent::AgentEnd {
            messages,
            will_retry: None,
        });
        self.finish_run();
    }

    /// The messages held for the turn's end, once `turn_end` is out: announced and appended.
    pub(super) fn flush_held(&mut self) {
        let held = match &mut self.run {
            Some(run) => std::mem::take(&mut run.held),
            None => return,
        };
        for message in held {
            self.append_outside(message);
        }
    }

    /// Appends a message the loop did not make, announced, and kept out of the run's messages.
    pub(super) fn append_outside(&mut self, message: AgentMessage) {
        // `message_end` appends it to the transcript, here.
        if let Some(run) = &mut self.run {
            run.appended.push(self.messages.len());
        }
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.emit(AgentEvent::MessageEnd { message });
    }

    /// The messages the run added to the transcript, less those the session appended.
    pub(super) fn run_messages(&self) -> Vec<AgentMessage> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        if run.rejected {
            return self.messages.last().cloned().into_iter().collect();
        }
        let later = self
            .messages
            .iter()
            .enumerate()
            .skip(run.start)
            .filter(|(i, _)| !run.appended.contains(i))
            .map(|(_, m)| m.clone());
        run.earlier.iter().cloned().chain(later).collect()
    }

    /// The transcript becomes the session's projection; a run in progress keeps its own
    /// messages so far and its loop's context is the projection.
    pub(super) fn take_projection(&mut self, messages: Vec<AgentMessage>) {
        let own = self.run_messages();
        let len = messages.len();
        self.messages = messages;
        self.llm_view = LlmView::default();
        if let Some(run) = &mut self.run {
            run.earlier = own;
            run.start = len;
            run.context_len = len;
            run.appended.clear();
        }
    }

    /// A hook threw: Pi's synthetic failure message, pushed to the transcript with only `agent_end`.
    pub(super) fn fail_run(&mut self, thrown: String) {
        let Some(run) = &self.run else { return };
        let model = &run.settings.model;
        let failure = AssistantMessage {
            content: vec![crate::message::ContentBlock::text("")],
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            stop_reason: if run.aborted {
                StopReason::Aborted
            } else {
                StopReason::Error
            },
            error_message: Some(thrown.clone()),
            timestamp: self.now,
            ..AssistantMessage::default()
        };
        let failure = AgentMessage::Assistant(failure);
        self.messages.push(failure.clone());
        self.error_message = Some(thrown);
        self.emit(AgentEvent::AgentEnd {
            messages: vec![failure],
            will_retry: None,
        });
        self.finish_run();
    }

    /// Pi's `finishRun`: the run is over in one step.
    pub(super) fn finish_run(&mut self) {
        self.run = None;
        self.call_in_flight = false;
        self.streaming_message = None;
        self.pending_tool_calls.clear();
    }

    pub(super) fn abort(&mut self) {
        if let Some(starting) = &mut self.starting {
            starting.aborted = true;
        }
        let Some(run) = &mut self.run else { return };
        if run.aborted {
            return;
        }
        run.aborted = true;
        let calls = match &run.phase {
            Phase::Model { call, .. } => vec![*call],
            Phase::Tools(batch) => batch.running_calls(),
            Phase::TurnEnd(_) | Phase::Context { .. } | Phase::Gated | Phase::Between => Vec::new(),
        };
        for call in calls {
            self.effect(Effect::Cancel { call });
        }
    }
}
