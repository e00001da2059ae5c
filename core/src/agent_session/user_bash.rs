//! The session's side of Pi 1.5.2's `user_bash` (RPC mode's `bash` command): the command is
//! asked of the handlers as the session's own notifications are (in order, each after the one
//! before), and their decision answers it ([`Reply::UserBash`]). A result of theirs, or of the
//! command their operations ran, is recorded as Pi's `recordBashResult` records it, at the time
//! the decision came (held back while the agent streams, as every user command's is).

use crate::agent::hooks::{HookDecision, HookOutcome, HookPayload};
use crate::agent::user_bash::bash_message;
use crate::agent::Effect;

use super::contract::{Reply, SessionError};
use super::machine::SessionMachine;

impl SessionMachine {
    /// Asks the `user_bash` handlers about `command` (the front end sends it only when an
    /// extension handles the event; without one the answer is at once: the local shell).
    pub(super) fn ask_user_bash(&mut self, command: String, exclude_from_context: Option<bool>) {
        if !self.hears(crate::agent::hooks::HookEvent::UserBash) {
            self.out.replies.push(Reply::UserBash(None));
            return;
        }
        let cwd = self.tree.header().cwd.clone();
        self.user_bash
            .push_back((command.clone(), exclude_from_context));
        self.tell_session(HookPayload::UserBash {
            command,
            exclude_from_context: exclude_from_context.unwrap_or(false),
            cwd,
        });
    }

    /// RPC `abort_bash` while the handlers are asked: the hook point's call is cancelled, so
    /// the signal a handler's `exec` runs with fires (Pi's `abortBash`); its answer still
    /// comes, a command it ran marked cancelled.
    pub(super) fn abort_user_bash(&mut self) {
        if let Some(call) = self.user_bash_call {
            self.out.effects.push(Effect::Cancel { call });
        }
    }

    /// The `user_bash` handlers decided (what they asked for is applied already): their
    /// errors are reported, a result is recorded, then the decision answers the oldest command
    /// asked.
    pub(super) fn user_bash_decided(&mut self, outcome: &HookOutcome) -> Result<(), SessionError> {
        let HookDecision::UserBash { answer } = &outcome.decision else {
            return Ok(());
        };
        self.user_bash_call = None;
        self.report_hook_errors(&outcome.errors);
        let Some((command, exclude)) = self.user_bash.pop_front() else {
            return Ok(());
        };
        if let Some(result) = answer.as_ref().and_then(|a| a.result()) {
            let message = bash_message(&command, result, exclude, self.now);
            self.record_bash(message)?;
        }
        self.out.replies.push(Reply::UserBash(answer.clone()));
        Ok(())
    }
}
