//! The session's switches that front ends change between or during runs (Pi's RPC commands
//! `set_steering_mode`, `set_follow_up_mode`, `set_auto_compaction`, `set_auto_retry`,
//! `set_session_name`), and what they report back (`get_state`).

use crate::agent::hooks::HookPayload;
use crate::agent::{Change, QueueMode};
use crate::event::{Event, SessionEvent};

use super::contract::SessionError;
use super::machine::SessionMachine;

impl SessionMachine {
    /// How queued steering messages are delivered.
    pub fn steering_mode(&self) -> QueueMode {
        self.steering_mode
    }

    /// How queued follow-up messages are delivered.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.follow_up_mode
    }

    /// Whether a run that fills the context window compacts by itself.
    pub fn auto_compaction_enabled(&self) -> bool {
        self.compaction_settings.enabled
    }

    /// The session's display name, if it was given one.
    pub fn session_name(&self) -> Option<String> {
        self.tree.name()
    }

    /// Changes one queue mode of the agent (steering when `steering`, else follow-up).
    pub(super) fn set_queue_mode(
        &mut self,
        mode: QueueMode,
        steering: bool,
    ) -> Result<(), SessionError> {
        let change = if steering {
            self.steering_mode = mode;
            Change::SteeringMode(mode)
        } else {
            self.follow_up_mode = mode;
            Change::FollowUpMode(mode)
        };
        self.agent_step(crate::agent::Input::Change(change))
    }

    /// Pi's `setSessionName`: a `session_info` entry, then the name now in effect.
    pub(super) fn set_session_name(&mut self, name: &str) {
        let (_, decision) = self.tree.append_session_info(name, self.now, &mut self.ids);
        self.persist(decision);
        let name = self.tree.name();
        self.emit(Event::Session(SessionEvent::SessionInfoChanged {
            name: name.clone(),
        }));
        self.tell_session(HookPayload::SessionInfoChanged { name });
    }
}
