//! The loop's events an extension handles, passed to it as Pi 1.5.2's `AgentSession` passes them
//! (`_emitExtensionEvent`): before the event goes further (to the session's listeners, to the
//! session file), and awaited, so nothing the loop did after the event is seen before the
//! handlers are done. An event no extension handles costs nothing (`message_update` above all).
//!
//! The agent machine does not stop at its events, so the session holds back what came after an
//! event it asks about: the rest of that agent step's events and its effects, and every later
//! step, in order, until the decision ([`HookDecision::Done`] and the handlers' actions) comes.
//! The actions are applied first, as Pi applies them inside the handler (their events go out
//! before the held event), then the held events are processed (each handled one asking in turn)
//! and the held effects released. A cancel an action asked for goes out after the held effects,
//! so the interpreter never hears of a call's cancel before its start.

use std::collections::VecDeque;

use crate::agent::hooks::{HookAction, HookDecision, HookEvent, HookOutcome, HookPayload};
use crate::agent::{CallId, Change, Effect, Input, Step};
use crate::event::{AgentEvent, Event, SessionEvent};
use crate::message::AgentMessage;

use super::contract::{Reply, SessionError};
use super::machine::SessionMachine;

/// What an agent step left to do, in its order.
#[derive(Debug)]
pub(super) enum Routed {
    /// An event, not yet shown to the extensions that handle it.
    Event(AgentEvent),
    /// An event the extensions have seen.
    Notified(AgentEvent),
    /// A step's effects, released once its events are processed.
    Effects(Vec<Effect>),
}

/// The notification asked and what waits for its decision.
#[derive(Debug, Default)]
pub(super) struct Notifications {
    /// The call of the loop's event waiting for its handlers (the event is at the front of
    /// `held`).
    waiting: Option<CallId>,
    /// What came after it, in order.
    held: VecDeque<Routed>,
    /// Pi's `_turnIndex`: 0 at `agent_start`, one more after each `turn_end`.
    turn_index: u64,
    /// The session's own notifications (`session_start`, `session_shutdown`) being heard.
    session: Vec<CallId>,
    /// The session's notifications told while another is heard: each is asked once the one
    /// before it is done, so their handlers run in the order the session told them.
    session_queue: VecDeque<HookPayload>,
    /// The `agent_settled` notification being heard, and what its event will say: the
    /// session's own `agent_settled` goes out once its handlers are done (Pi awaits them).
    settling: Option<(CallId, bool)>,
    /// The `session_tree` notification being heard.
    pub(super) tree: Option<CallId>,
}

impl Notifications {
    /// Whether a notification holds the loop's output back.
    pub(super) fn holds(&self) -> bool {
        self.hearing() || !self.held.is_empty()
    }

    /// Whether handlers are being heard: what the loop does next waits for them.
    fn hearing(&self) -> bool {
        self.waiting.is_some() || self.hearing_session()
    }

    /// Whether the session's own notifications are being heard (or wait their turn).
    fn hearing_session(&self) -> bool {
        !self.session.is_empty() || !self.session_queue.is_empty()
    }

    /// Whether one of the loop's events, or what came after it, waits for handlers.
    fn holds_loop(&self) -> bool {
        self.waiting.is_some() || !self.held.is_empty()
    }
}

impl SessionMachine {
    /// Processes an agent step: its events in order, then its effects. When an extension handles
    /// one of its events, that event and what follows wait for the handlers.
    pub(super) fn route(&mut self, step: Step) -> Result<(), SessionError> {
        if !self.notifications.hearing() && !step.events.iter().any(|e| self.notifies(e)) {
            // Nothing to ask: the effects go out first, their hook points given the state
            // once the events are processed.
            let first = self.out.effects.len();
            self.release(step.effects);
            for event in step.events {
                self.count_turns(&event);
                self.process(event)?;
            }
            self.fill_hook_states(first);
            return self.open_request_gate();
        }
        let mut effects = step.effects;
        if self.notifications.hearing() {
            // A cancel of a call already started goes out at once (an abort does not wait for
            // the handlers); one of a call still held follows its start.
            let (now, later): (Vec<Effect>, Vec<Effect>) = effects
                .into_iter()
                .partition(|e| matches!(e, Effect::Cancel { call } if !self.holds_start(*call)));
            self.out.effects.extend(now);
            effects = later;
        }
        let items = step
            .events
            .into_iter()
            .map(Routed::Event)
            .chain(std::iter::once(Routed::Effects(effects)));
        if self.notifications.hearing() {
            self.notifications.held.extend(items);
            return Ok(());
        }
        self.drain(items.collect())
    }

    /// Whether the start of `call` (a model call, a tool, a hook point) is still held.
    fn holds_start(&self, call: CallId) -> bool {
        self.notifications.held.iter().any(|item| match item {
            Routed::Effects(effects) => effects.iter().any(|e| match e {
                Effect::CallModel { call: c, .. }
                | Effect::RunTool { call: c, .. }
                | Effect::Hook { call: c, .. } => *c == call,
                Effect::Cancel { .. } | Effect::AnswerNested { .. } => false,
            }),
            _ => false,
        })
    }

    /// Lets the run make the request it waits to make, once no notification holds anything
    /// back (its `message_end` handlers may have replaced a message it sends).
    fn open_request_gate(&mut self) -> Result<(), SessionError> {
        if self.notifications.holds() || !self.agent.request_gated() {
            return Ok(());
        }
        self.agent_step(Input::Change(Change::OpenRequestGate))
    }

    /// Processes `items` in order until an event extensions handle; that event and the rest
    /// wait (before anything held already) for the handlers' decision.
    fn drain(&mut self, mut items: VecDeque<Routed>) -> Result<(), SessionError> {
        while let Some(item) = items.pop_front() {
            match item {
                Routed::Effects(effects) => {
                    let first = self.out.effects.len();
                    self.release(effects);
                    self.fill_hook_states(first);
                }
                Routed::Notified(event) => self.process_told(event)?,
                Routed::Event(event) => {
                    self.count_turns(&event);
                    self.dequeue_started(&event);
                    let Some(payload) = self.notification(&event) else {
                        self.process_told(event)?;
                        continue;
                    };
                    let call = self.agent.reserve_call();
                    items.push_front(Routed::Notified(event));
                    items.extend(std::mem::take(&mut self.notifications.held));
                    self.notifications.held = items;
                    self.notifications.waiting = Some(call);
                    self.push_hook(call, payload);
                    return Ok(());
                }
            }
        }
        self.open_request_gate()
    }

    /// Whether the agent streams as Pi's session says (`isStreaming`): its run goes on, or its
    /// last events are still with the extensions (`agent_end`'s handlers run while it streams).
    /// The session's own notifications do not make it stream: in Pi a prompt sent while an
    /// RPC `set_model` awaits its `model_select` handlers starts a run (whose events wait here
    /// for the handlers). The run is active, too, while `agent_before_settle` is asked (a
    /// message its handlers send is queued, and the run goes on with it).
    pub(super) fn streaming(&self) -> bool {
        self.agent.is_streaming()
            || self.notifications.holds_loop()
            || matches!(self.before_settle, super::boundary::BeforeSettle::Asking(_))
    }

    /// Whether the session's own notifications (`model_select` after a model change, say) are
    /// still with their handlers: Pi answers RPC `set_model` and `cycle_model` after them.
    pub fn hearing_session(&self) -> bool {
        self.notifications.hearing_session()
    }

    /// Whether `call` is the notification waiting for its decision.
    pub(super) fn awaits_notification(&self, call: CallId) -> bool {
        self.notifications.waiting == Some(call)
    }

    /// The handlers of the waiting notification are done: their actions are applied (an abort
    /// last), then what was held goes on.
    pub(super) fn notified(&mut self, outcome: &HookOutcome) -> Result<(), SessionError> {
        // What is held stays held while the actions apply (the session streams on, as Pi's
        // does while the handlers run); what they cause goes out before it.
        self.notifications.waiting = None;
        if let HookDecision::MessageEnd { message } = &outcome.decision {
            self.replace_ended(message.clone())?;
        }
        let before = self.out.effects.len();
        self.apply_asked_actions(&outcome.actions)?;
        if outcome.actions.iter().any(HookAction::aborts) {
            self.abort()?;
        }
        self.go_on(before)
    }

    /// What is held goes on once no handler is being heard; the cancels the actions applied
    /// since `before` caused, of calls whose start is still held, follow that start.
    fn go_on(&mut self, before: usize) -> Result<(), SessionError> {
        let mut cancels = Vec::new();
        let mut index = before;
        while index < self.out.effects.len() {
            if matches!(self.out.effects[index], Effect::Cancel { call } if self.holds_start(call))
            {
                cancels.push(self.out.effects.remove(index));
            } else {
                index += 1;
            }
        }
        if !cancels.is_empty() {
            self.notifications.held.push_back(Routed::Effects(cancels));
        }
        if self.notifications.hearing() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.notifications.held);
        self.drain(held)
    }

    /// Tells the extensions that handle it of `payload`, an event of the session's own; what
    /// the loop does next waits for them (Pi's handlers run within the call that caused the
    /// event, a `setModel` awaiting them). Nothing when none handles it.
    pub(super) fn tell_session(&mut self, payload: HookPayload) {
        if !self.agent.handled_hooks().contains(payload.event()) {
            return;
        }
        if !self.notifications.session.is_empty() {
            self.notifications.session_queue.push_back(payload);
            return;
        }
        let call = self.agent.reserve_call();
        self.notifications.session.push(call);
        if let HookPayload::AgentSettled { aborted } = payload {
            self.notifications.settling = Some((call, aborted));
        }
        if payload.event() == HookEvent::SessionTree {
            self.notifications.tree = Some(call);
        }
        if payload.event() == HookEvent::UserBash {
            self.user_bash_call = Some(call);
        }
        self.push_hook(call, payload);
    }

    /// The run settled: the session's `agent_settled` goes out, once the extensions that
    /// handle it have heard it.
    pub(super) fn settle(&mut self, aborted: bool) {
        if self.hears(HookEvent::AgentSettled) {
            self.tell_session(HookPayload::AgentSettled { aborted });
        } else {
            self.emit(Event::Session(SessionEvent::AgentSettled { aborted }));
            self.command_settled();
        }
    }

    /// Whether the `agent_settled` handlers are being heard: a run they ask for starts once
    /// the session's own `agent_settled` is out.
    pub(super) fn settling(&self) -> bool {
        self.notifications.settling.is_some()
    }

    /// Asks the extensions whether the session may be replaced (`payload`: its
    /// `session_before_switch` or `session_before_fork`), as Pi's runtime asks before it
    /// tears the session down; the answer is a [`Reply::Replacing`], at once when no
    /// extension handles the event. Asked like the session's notifications, so what the
    /// handlers ask for (an entry, a message) lands in this session first.
    pub(super) fn ask_replace(&mut self, payload: HookPayload) {
        if !self.agent.handled_hooks().contains(payload.event()) {
            self.out.replies.push(Reply::Replacing { cancelled: false });
            return;
        }
        self.tell_session(payload);
    }

    /// Whether a session notification's handlers are still heard, or one waits its turn.
    pub(super) fn session_notifications_pending(&self) -> bool {
        !self.notifications.session.is_empty() || !self.notifications.session_queue.is_empty()
    }

    /// Whether `call` is a notification of the session's own being heard.
    pub(super) fn awaits_session_notification(&self, call: CallId) -> bool {
        self.notifications.session.contains(&call)
    }

    /// The session notification told last (the one being asked, when none waits).
    pub(super) fn session_call_last(&self) -> Option<CallId> {
        self.notifications.session.last().copied()
    }

    /// The handlers of the session's notification `call` are done: what they asked for is
    /// applied (an abort last).
    pub(super) fn session_notified(
        &mut self,
        call: CallId,
        outcome: &HookOutcome,
    ) -> Result<(), SessionError> {
        self.notifications.session.retain(|c| *c != call);
        self.notifications.tree.take_if(|c| *c == call);
        let for_command = self.command_replacement_asked();
        if let HookDecision::SessionBeforeReplace { cancel } = outcome.decision {
            if !for_command {
                self.out
                    .replies
                    .push(Reply::Replacing { cancelled: cancel });
            }
        }
        let before = self.out.effects.len();
        self.apply_asked_actions(&outcome.actions)?;
        if let (true, HookDecision::SessionBeforeReplace { cancel }) =
            (for_command, &outcome.decision)
        {
            self.command_replacement_answered(*cancel);
        }
        if let HookDecision::ResourcesDiscover(found) = &outcome.decision {
            self.add_discovered(found);
        }
        self.user_bash_decided(outcome)?;
        if outcome.actions.iter().any(HookAction::aborts) {
            self.abort()?;
        }
        if let Some((_, aborted)) = self.notifications.settling.take_if(|(c, _)| *c == call) {
            self.emit(Event::Session(SessionEvent::AgentSettled { aborted }));
            self.command_settled();
            if !self.idle_inputs_pending() {
                self.start_idle_runs()?;
            }
        }
        if self.start_errors_call.take_if(|c| *c == call).is_some() {
            self.report_start_errors();
        }
        if self.notifications.session.is_empty() {
            if let Some(next) = self.notifications.session_queue.pop_front() {
                self.tell_session(next);
            }
        }
        self.release_command_answer();
        self.go_on(before)
    }

    /// Whether an extension handles `event`, one of the session's own notifications (the
    /// front end sends [`SessionInput::Start`](super::SessionInput::Start) and
    /// [`SessionInput::Shutdown`](super::SessionInput::Shutdown) only then).
    pub fn hears(&self, event: HookEvent) -> bool {
        self.agent.handled_hooks().contains(event)
    }

    /// Whether an extension hears of the session's start: `session_start`, or
    /// `resources_discover`, which the start tells right after it (the front end sends
    /// [`SessionInput::Start`](super::SessionInput::Start) only then).
    pub fn hears_start(&self) -> bool {
        self.hears(HookEvent::SessionStart)
            || self.hears(HookEvent::ResourcesDiscover)
            || self.has_start_errors()
    }

    /// Puts the message the `message_end` handlers returned in the place of the one that ended:
    /// in the event still held, which persists it, in what was held after it (a `turn_end`
    /// or `agent_end` and its hook point) and in the agent's transcript and turn (Pi replaces
    /// it in place). A run in progress already took an assistant message's tool calls from
    /// the message as it was streamed.
    fn replace_ended(&mut self, message: AgentMessage) -> Result<(), SessionError> {
        let Some(Routed::Notified(AgentEvent::MessageEnd { message: ended })) =
            self.notifications.held.front_mut()
        else {
            return Ok(());
        };
        let original = std::mem::replace(ended, message.clone());
        for item in self.notifications.held.iter_mut().skip(1) {
            replace_held(item, &original, &message);
        }
        self.agent_step(Input::Change(Change::ReplaceMessage { original, message }))
    }

    /// Keeps Pi's turn index as the events pass.
    fn count_turns(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart => self.notifications.turn_index = 0,
            AgentEvent::TurnEnd { .. } => self.notifications.turn_index += 1,
            _ => {}
        }
    }

    /// Whether an extension handles `event`.
    fn notifies(&self, event: &AgentEvent) -> bool {
        let handled = self.agent.handled_hooks();
        !handled.is_empty() && hook_of(event).is_some_and(|hook| handled.contains(hook))
    }

    /// The notification for `event`, when an extension handles it.
    fn notification(&self, event: &AgentEvent) -> Option<HookPayload> {
        if !self.notifies(event) {
            return None;
        }
        Some(match event {
            AgentEvent::AgentStart => HookPayload::AgentStart,
            AgentEvent::AgentEnd { messages, .. } => HookPayload::AgentEnd {
                messages: messages.clone(),
            },
            // Its `turnIndex` is that of the turn starting: the ends counted so far.
            AgentEvent::TurnStart => HookPayload::TurnStart {
                turn_index: self.notifications.turn_index,
                timestamp: self.now,
            },
            AgentEvent::TurnEnd { .. } => return None,
            AgentEvent::MessageStart { message } => HookPayload::MessageStart {
                message: message.clone(),
            },
            AgentEvent::MessageUpdate {
                message,
                assistant_message_event,
                ..
            } => HookPayload::MessageUpdate {
                message: message.clone(),
                assistant_message_event: assistant_message_event.clone(),
            },
            AgentEvent::MessageEnd { message } => HookPayload::MessageEnd {
                message: message.clone(),
            },
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id,
            } => HookPayload::ToolExecutionStart {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                args: args.clone(),
                parent_tool_call_id: parent_tool_call_id.clone(),
            },
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
                parent_tool_call_id,
            } => HookPayload::ToolExecutionUpdate {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                args: args.clone(),
                partial_result: partial_result.clone(),
                parent_tool_call_id: parent_tool_call_id.clone(),
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                duration_ms,
                parent_tool_call_id,
            } => HookPayload::ToolExecutionEnd {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
                result: result.clone(),
                is_error: *is_error,
                duration_ms: *duration_ms,
                parent_tool_call_id: parent_tool_call_id.clone(),
            },
        })
    }
}

/// Puts `message` in the place of `original` wherever the held `item` carries the messages of
/// a turn or a run: a `turn_end` or `agent_end` event, a `turn_end` hook point.
fn replace_held(item: &mut Routed, original: &AgentMessage, message: &AgentMessage) {
    let replace = |messages: &mut [AgentMessage]| {
        for place in messages.iter_mut().filter(|m| *m == original) {
            *place = message.clone();
        }
    };
    match item {
        Routed::Event(event) | Routed::Notified(event) => match event {
            AgentEvent::TurnEnd {
                message: ended,
                tool_results,
            } => {
                replace(std::slice::from_mut(ended));
                replace(tool_results);
            }
            AgentEvent::AgentEnd { messages, .. } => replace(messages),
            _ => {}
        },
        Routed::Effects(effects) => {
            for effect in effects {
                if let Effect::Hook {
                    payload:
                        HookPayload::TurnEnd {
                            message: ended,
                            tool_results,
                            ..
                        },
                    ..
                } = effect
                {
                    replace(std::slice::from_mut(ended));
                    replace(tool_results);
                }
            }
        }
    }
}

/// The notification an event is (`turn_end` is a hook point of the loop's own, asked before
/// the event).
fn hook_of(event: &AgentEvent) -> Option<HookEvent> {
    Some(match event {
        AgentEvent::AgentStart => HookEvent::AgentStart,
        AgentEvent::AgentEnd { .. } => HookEvent::AgentEnd,
        AgentEvent::TurnStart => HookEvent::TurnStart,
        AgentEvent::TurnEnd { .. } => return None,
        AgentEvent::MessageStart { .. } => HookEvent::MessageStart,
        AgentEvent::MessageUpdate { .. } => HookEvent::MessageUpdate,
        AgentEvent::MessageEnd { .. } => HookEvent::MessageEnd,
        AgentEvent::ToolExecutionStart { .. } => HookEvent::ToolExecutionStart,
        AgentEvent::ToolExecutionUpdate { .. } => HookEvent::ToolExecutionUpdate,
        AgentEvent::ToolExecutionEnd { .. } => HookEvent::ToolExecutionEnd,
    })
}
