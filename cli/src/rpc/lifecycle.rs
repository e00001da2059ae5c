//! The session's own notifications in RPC mode, as Pi 1.5.2's RPC mode has them: its
//! extensions hear `session_start` (and `resources_discover`) when they are bound, before the
//! first command is read, and
//! `session_shutdown` once stdin has ended. Pi subscribes its printer after binding and
//! disposes after the loop: what the handlers cause is not printed, but their errors are
//! (`extension_error` lines, its `onError`).

use pi_core::agent::hooks::HookEvent;
use pi_core::agent_session::SessionInput;
use pi_core::event::{Event, SessionEvent};

use super::{Ended, Front, Rpc};

impl<I: Front> Rpc<I> {
    /// Tells the extensions that handle it of the session's start; `Some` when the replay
    /// parted from its recording there.
    pub(super) async fn bind_extensions(&mut self) -> Option<Ended> {
        let hears = self.session.machine().hears_start();
        self.tell(hears, SessionInput::Start).await
    }

    /// Tells the extensions that handle it of the session's end.
    pub(super) async fn shut_down(&mut self) -> Option<Ended> {
        let hears = self.session.machine().hears(HookEvent::SessionShutdown);
        self.tell(hears, SessionInput::Shutdown).await
    }

    async fn tell(&mut self, hears: bool, input: SessionInput) -> Option<Ended> {
        if !hears {
            return None;
        }
        let out = &mut self.out;
        let print = |event: &Event| {
            if matches!(event, Event::Session(SessionEvent::ExtensionError { .. })) {
                out.json_line(event);
            }
        };
        let told = self.session.run_to_end(input, print).await;
        self.out.flush();
        let error = told.err()?;
        if let Some(divergence) = self.session.interpreter().diverged(Some(&error)) {
            return Some(Ended::Diverged(divergence));
        }
        self.out.say(&error);
        None
    }
}
