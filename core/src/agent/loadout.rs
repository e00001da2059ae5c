//! Pi 1.5.2's `prepareLoadout` hooks as the loop meets them: before a turn declares its tools
//! (a run's first turn, before `agent_start`; each later one, before its `turn_start`), a
//! declared tool whose extension prepares the loadout (codemode) is asked how the declarations
//! change, at a `prepare_loadout` hook point whose answer is an input the interpreter records.
//! The loop waits for it, then goes on where it stopped. The answer holds as long as what it was
//! asked about does (the declared tools and the registered ones): a turn declaring the same
//! tools asks no more, as the hooks Pi runs are functions of those.

use std::sync::Arc;

use serde_json::Value;

use crate::message::AgentMessage;

use super::super::contract::{CallId, Effect};
use super::super::hooks::{HookDecision, HookEvent, HookPayload, LoadoutChanges};
use super::super::ToolSpec;
use super::AgentMachine;

/// Where the loop goes on once the loadout is decided.
#[derive(Debug)]
pub(super) enum Resume {
    /// A run about to start (`begin_run_with`'s arguments).
    Run {
        prompts: Option<Vec<AgentMessage>>,
        skip_steering_poll: bool,
        forced_system_prompt: Option<String>,
        aborted: bool,
    },
    /// A run's next turn, with the messages it takes in.
    NextTurn { pending: Vec<AgentMessage> },
}

/// A turn waiting for its loadout.
#[derive(Debug)]
pub(super) struct Waiting {
    call: CallId,
    asked: HookPayload,
    resume: Resume,
}

/// The last loadout asked about and its answer.
#[derive(Debug, Default)]
pub(super) struct Loadout {
    /// Every registered tool as `pi.getAllTools()` describes it, from the session.
    pub(super) registered: Vec<Value>,
    decided: Option<(HookPayload, LoadoutChanges)>,
    pub(super) waiting: Option<Waiting>,
}

impl AgentMachine {
    /// Tells the loop every registered tool (Pi's `getAllTools()` infos, in registry order):
    /// what the `prepareLoadout` hooks are given beside the declared tools.
    pub fn set_registered_tools(&mut self, registered: Vec<Value>) {
        self.loadout.registered = registered;
    }

    /// Whether the loop must ask for the loadout before it goes on to `resume`: if so, asks.
    pub(super) fn ask_loadout(&mut self, resume: Resume) -> Option<Resume> {
        let Some(payload) = self.loadout_question() else {
            return Some(resume);
        };
        let call = self.new_call();
        self.loadout.waiting = Some(Waiting {
            call,
            asked: payload.clone(),
            resume,
        });
        self.effect(Effect::Hook {
            call,
            payload,
            state: None,
        });
        None
    }

    /// The question the declared tools raise, when one of them prepares the loadout and its
    /// answer is not known yet.
    fn loadout_question(&self) -> Option<HookPayload> {
        if !self.handled_hooks.contains(HookEvent::PrepareLoadout)
            || !self.tools.iter().any(|t| t.prepares_loadout)
        {
            return None;
        }
        // Compared in place: the registered tools' descriptions are cloned only for a question.
        if let Some((
            HookPayload::PrepareLoadout {
                declared,
                registered,
            },
            _,
        )) = &self.loadout.decided
        {
            if *registered == self.loadout.registered
                && declared.iter().eq(self.tools.iter().map(|t| &t.name))
            {
                return None;
            }
        }
        Some(HookPayload::PrepareLoadout {
            declared: self.tools.iter().map(|t| t.name.clone()).collect(),
            registered: self.loadout.registered.clone(),
        })
    }

    /// Whether `call` is the turn waiting for its loadout.
    pub(super) fn awaits_loadout(&self, call: CallId, decision: &HookDecision) -> bool {
        matches!(decision, HookDecision::PrepareLoadout(_))
            && self
                .loadout
                .waiting
                .as_ref()
                .is_some_and(|w| w.call == call)
    }

    /// Keeps the answer to the question asked and goes on where the loop stopped.
    pub(super) fn loadout_decided(&mut self, decision: HookDecision) {
        let (HookDecision::PrepareLoadout(changes), Some(waiting)) =
            (decision, self.loadout.waiting.take())
        else {
            return;
        };
        self.loadout.decided = Some((waiting.asked, changes));
        match waiting.resume {
            Resume::Run {
                prompts,
                skip_steering_poll,
                forced_system_prompt,
                aborted,
            } => self.begin_run_with(prompts, skip_steering_poll, forced_system_prompt, aborted),
            Resume::NextTurn { pending } => self.next_turn(pending),
        }
    }

    /// The tools the next turn declares: the active ones, with the descriptions the
    /// `prepareLoadout` hooks gave them.
    pub(super) fn declared_tools(&self) -> Arc<Vec<ToolSpec>> {
        let changes = match &self.loadout.decided {
            Some((_, changes))
                if !changes.descriptions.is_empty()
                    && self.tools.iter().any(|t| t.prepares_loadout) =>
            {
                changes
            }
            _ => return Arc::clone(&self.tools),
        };
        let tools = self
            .tools
            .iter()
            .map(|tool| match changes.descriptions.get(&tool.name) {
                Some(description) => ToolSpec {
                    description: description.clone(),
                    ..tool.clone()
                },
                None => tool.clone(),
            })
            .collect();
        Arc::new(tools)
    }

    /// Whether requests leave the declaration of `name` out (a `prepareLoadout` answer hid it
    /// while a tool that prepares the loadout is declared).
    pub(super) fn hides(&self, name: &str) -> bool {
        matches!(&self.loadout.decided, Some((_, changes))
            if changes.hidden_declarations.iter().any(|h| h == name)
                && self.tools.iter().any(|t| t.prepares_loadout))
    }

    /// Whether a turn waits for its loadout.
    pub(super) fn loadout_waiting(&self) -> Option<CallId> {
        self.loadout.waiting.as_ref().map(|w| w.call)
    }
}
