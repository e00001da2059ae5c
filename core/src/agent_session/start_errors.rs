//! Errors the session reports when it starts, which no handler threw: Pi 1.5.2's report of the
//! MCP servers extensions registered while nothing connects them (`--no-mcp`: one
//! `register_mcp_server` extension error a server, after `session_start`). They come with the
//! run's configuration, so a replay reports them where the run did with no extension loaded.

use serde::{Deserialize, Serialize};

use super::machine::SessionMachine;
use crate::event::{Event, SessionEvent};

/// One error reported at the start: the extension Pi names, the event, the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartError {
    pub extension_path: String,
    pub event: String,
    pub error: String,
}

impl SessionMachine {
    /// Keeps `errors` for the session's start; none changes nothing.
    pub fn set_start_errors(&mut self, errors: Vec<StartError>) {
        self.start_errors = errors;
    }

    /// Whether the start has errors to report (the front end then sends the start).
    pub(super) fn has_start_errors(&self) -> bool {
        !self.start_errors.is_empty()
    }

    /// Right after the start told `session_start`: its errors now when no handler hears it,
    /// else once its handlers are done (and their errors reported), as Pi reports them after
    /// emitting `session_start`.
    pub(super) fn start_errors_after_start(&mut self) {
        if self.start_errors.is_empty() {
            return;
        }
        if self.hears(crate::agent::hooks::HookEvent::SessionStart) {
            self.start_errors_call = self.session_call_last();
        }
        if self.start_errors_call.is_none() {
            self.report_start_errors();
        }
    }

    /// Reports the start's errors, once.
    pub(super) fn report_start_errors(&mut self) {
        for error in std::mem::take(&mut self.start_errors) {
            self.emit(Event::Session(SessionEvent::ExtensionError {
                extension_path: error.extension_path,
                event: error.event,
                error: error.error,
            }));
        }
    }
}
