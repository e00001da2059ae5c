//! RPC `bash` as Pi 1.5.2 runs it when an extension handles `user_bash`: the session asks the
//! handlers first, and their decision answers the command. A result of theirs (recorded by the
//! session) is the answer; a command their operations ran streams its cleaned chunks as
//! `bash_execution_update` lines, then answers; a handler's error (reported by the session as
//! its `extension_error`) or its `exec`'s fails the command; nobody answering leaves it to the
//! local shell, as without a handler.

use pi_core::agent::hooks::{HookEvent, UserBashAnswer};
use pi_core::agent_session::SessionInput;
use serde_json::{json, Value};

use super::commands::Failure;
use pi_effects::driver::Interpreter;

use super::{failure, success, Rpc};

impl<I: Interpreter + Send> Rpc<I> {
    /// `bash`: asked of the `user_bash` handlers when an extension handles it, else run at once.
    pub(super) fn bash(
        &mut self,
        id: Option<Value>,
        command: String,
        exclude: Option<bool>,
    ) -> Result<(), Failure> {
        if !self.session.machine().hears(HookEvent::UserBash) {
            self.start_bash(id, command, exclude);
            return Ok(());
        }
        self.user_bash_waiters
            .push_back((id, command.clone(), exclude));
        self.submit(SessionInput::UserBash {
            command,
            exclude_from_context: exclude,
        })
    }

    /// Whether a `bash` command waits for its `user_bash` handlers (RPC `abort_bash` then
    /// cancels their hook point).
    pub(super) fn asks_user_bash(&self) -> bool {
        !self.user_bash_waiters.is_empty()
    }

    /// The `user_bash` handlers decided about the oldest command asked.
    pub(super) fn user_bash_answered(&mut self, answer: Option<UserBashAnswer>) {
        let Some((id, command, exclude)) = self.user_bash_waiters.pop_front() else {
            return;
        };
        let response = match answer {
            None => return self.start_bash(id, command, exclude),
            Some(UserBashAnswer::Result { result }) => success(id, "bash", Some(result)),
            Some(UserBashAnswer::Ran { chunks, result }) => {
                for delta in chunks {
                    let mut update = serde_json::Map::new();
                    update.insert("type".into(), json!("bash_execution_update"));
                    if let Some(id) = &id {
                        update.insert("id".into(), id.clone());
                    }
                    update.insert("delta".into(), json!(delta));
                    self.out.json_line(&Value::Object(update));
                }
                success(id, "bash", Some(result))
            }
            Some(UserBashAnswer::Failed { error }) => failure(id, "bash", error),
            // The interpreter cleans an `exec`'s output before the decision is recorded.
            Some(UserBashAnswer::Exec { .. }) => failure(
                id,
                "bash",
                "the extension's exec output reached the session uncleaned",
            ),
        };
        self.respond(&response);
    }
}
