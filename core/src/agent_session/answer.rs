//! The interpreter's answers to the session's effects, routed: a model call's to the cache warm,
//! the compaction or the navigation that made it, a hook point's decision to the part of the
//! session waiting for it, the rest to the agent loop; and the effects an agent step asks for,
//! sent out.

use crate::agent::hooks::{HookAction, HookDecision, HookError, HookEvent, HookOutcome};
use crate::agent::{Change, Input};
use crate::event::{Event, SessionEvent};
use crate::message::AgentMessage;

use super::contract::{Reply, SessionError};
use super::machine::SessionMachine;

impl SessionMachine {
    pub(super) fn answer(&mut self, input: Input) -> Result<(), SessionError> {
        let Some(input) = self.provider_notice(input) else {
            return Ok(());
        };
        let call = match &input {
            Input::Model { call, .. } | Input::ModelFailed { call, .. } => Some(*call),
            _ => None,
        };
        if let Some(call) = call {
            if self.owns_warm_call(call) {
                self.warm_answer(input);
                return Ok(());
            }
            if self.compaction.as_ref().is_some_and(|job| job.owns(call)) {
                return self.compaction_answer(input);
            }
            if self
                .navigation
                .as_ref()
                .is_some_and(|job| job.call == call && !job.waiting)
            {
                return self.navigation_answer(input);
            }
        }
        if let Input::ToolFinished { call, outcome } = &input {
            self.tool_search_finished(*call, outcome);
        }
        if let Input::ToolActed { action, .. } = &input {
            // Checked by the agent (its call must be running), then applied at once.
            let action = action.clone();
            self.agent_step(input)?;
            self.apply_asked_actions(std::slice::from_ref(&action))?;
            // `ctx.abort()` from the tool is Pi's `AgentSession.abort()`: the run (the tool's
            // own call with it) is aborted at once.
            if action.aborts() {
                self.abort()?;
            }
            return Ok(());
        }
        if let Input::HookDecided { call, outcome } = &input {
            // A command's errors are reported with its answer, under the command's name; an
            // input's and a `user_bash`'s after what its handlers asked for (they ask before
            // they throw).
            if !self.awaits_command(*call)
                && !self.awaits_input(*call, &outcome.decision)
                && !matches!(outcome.decision, HookDecision::UserBash { .. })
            {
                self.report_hook_errors(&outcome.errors);
            }
            if self.owns_warm_call(*call) {
                let (call, outcome) = (*call, outcome.clone());
                self.warm_decided(call, outcome);
                return Ok(());
            }
            if self.awaits_before_settle(*call) {
                return self.before_settle_decided(outcome.clone());
            }
            if self.awaits_notification(*call) {
                let outcome = outcome.clone();
                return self.notified(&outcome);
            }
            if self.awaits_session_notification(*call) {
                let outcome = outcome.clone();
                return self.session_notified(*call, &outcome);
            }
            if self.awaits_tree_hook(*call) {
                return self.tree_hook_decided(outcome.clone());
            }
            if self.owns_compaction_hook(*call) {
                return self.compaction_hook_decided(*call, outcome.clone());
            }
            if self.awaits_callback(*call) {
                let (call, actions) = (*call, outcome.actions.clone());
                return self.called_back(call, &actions);
            }
            if self.awaits_command(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.command_ran(call, outcome);
            }
            if self.awaits_input(*call, &outcome.decision) {
                let (call, outcome) = (*call, outcome.clone());
                return self.input_decided(call, outcome);
            }
            if self.awaits_provider_notice(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.provider_notice_heard(call, &outcome);
            }
            if self.awaits_route(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.route_decided(call, outcome);
            }
            if self.awaits_provider_hook(*call) {
                let (call, outcome) = (*call, outcome.clone());
                return self.provider_hook_decided(call, outcome);
            }
        }
        // A handler's `ctx.abort()` is Pi's `AgentSession.abort()`: the agent applies it within
        // the decision, before its loop goes on, and the session settles as aborted.
        let aborts = matches!(&input, Input::HookDecided { outcome, .. }
            if outcome.actions.iter().any(HookAction::aborts));
        let mut input = input;
        if let Input::HookDecided { call, outcome } = &input {
            if self.agent.awaits_decision(*call, &outcome.decision) {
                let (call, outcome) = (*call, outcome.clone());
                let before = self.pending_input_calls();
                self.apply_asked_actions(&outcome.actions)?;
                if let HookDecision::PrepareLoadout(changes) = &outcome.decision {
                    self.loadout_hides(changes.hidden_declarations.clone());
                }
                if matches!(outcome.decision, HookDecision::BeforeAgentStart { .. }) {
                    self.apply_later_sections_now();
                    self.settle_later_idle_runs()?;
                }
                // A `turn_end` boundary's drafts are written before the loop goes on; a
                // continuation the context cannot take is refused.
                if let HookDecision::Boundary { entries, .. } = &outcome.decision {
                    self.commit_boundary(HookEvent::TurnEnd, entries)?;
                    if !self.boundary_goes_on(HookEvent::TurnEnd, &outcome.decision) {
                        let outcome = HookOutcome {
                            decision: HookDecision::Done,
                            ..outcome
                        };
                        input = Input::HookDecided { call, outcome };
                    }
                }
                if self.hold_decision(&before, &input, aborts) {
                    return Ok(());
                }
            }
        }
        self.decision_step(input, aborts)
    }

    /// Steps the agent with an answer, then runs the session's abort a handler asked for.
    pub(super) fn decision_step(&mut self, input: Input, aborts: bool) -> Result<(), SessionError> {
        self.agent_step(input)?;
        if aborts {
            self.abort()?;
        }
        Ok(())
    }

    /// Steps the agent and processes what it emitted.
    pub(super) fn agent_step(&mut self, input: Input) -> Result<(), SessionError> {
        let step = self.agent.step(self.now, input)?;
        self.route(step)
    }

    /// Replaces the agent's transcript (between runs).
    pub(super) fn replace_messages(
        &mut self,
        messages: Vec<AgentMessage>,
    ) -> Result<(), SessionError> {
        let step = self
            .agent
            .step(self.now, Input::Change(Change::Messages(messages)))?;
        self.route(step)
    }

    /// Sends an agent step's effects out (the session's requests restart cache warming;
    /// `tool_search` calls get what they search).
    pub(super) fn release(&mut self, effects: Vec<crate::agent::Effect>) {
        // The session's own requests (not summaries, which are sent from here) restart warming.
        for effect in &effects {
            if let crate::agent::Effect::CallModel { request, .. } = effect {
                self.start_warming(request);
            }
        }
        let effects = self.gate_routed_calls(effects);
        let mut effects = self.gate_provider_calls(effects);
        self.fill_tool_searches(&mut effects);
        self.out.effects.extend(effects);
    }

    /// The handlers that threw at a hook point, reported as Pi's runner does (before what the
    /// decision leads to).
    pub(super) fn report_hook_errors(&mut self, errors: &[HookError]) {
        for error in errors {
            self.emit(Event::Session(SessionEvent::ExtensionError {
                extension_path: error.extension.clone(),
                event: error.event.name().to_owned(),
                error: error.error.clone(),
            }));
        }
    }

    pub(super) fn reply(&mut self, reply: Reply) {
        if let Reply::Navigated(result) = &reply {
            if self.command_navigated(result) {
                return;
            }
        }
        self.out.replies.push(reply);
    }
}
