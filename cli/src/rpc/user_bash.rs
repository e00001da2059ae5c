//! RPC `bash` as Pi 1.5.2 runs it when an extension handles `user_bash`: the session asks the
//! handlers first, and their decision answers the command. A result of theirs (recorded by the
//! session) is the answer; a command their operations ran streams its cleaned chunks as
//! `bash_execution_update` lines as its `exec` gives them, then answers; a handler's error (reported by the session as
//! its `extension_error`) or its `exec`'s fails the command; nobody answering leaves it to the
//! local shell, as without a handler.

use pi_core::agent::hooks::{HookEvent, UserBashAnswer};
use pi_core::agent_session::SessionInput;
use serde_json::{json, Value};

use super::commands::Failure;

use super::{failure, success, Front, Rpc};

impl<I: Front> Rpc<I> {
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
        let streamed = std::mem::take(&mut self.user_bash_streamed);
        let response = match answer {
            None => return self.start_bash(id, command, exclude),
            Some(UserBashAnswer::Result { result }) => success(id, "bash", Some(result)),
            Some(UserBashAnswer::Ran { chunks, result }) => {
                // Those its `exec` streamed went out as they came; the rest (what the end of
                // the output held back) go out now.
                for delta in chunks.iter().skip(streamed) {
                    self.out.json_line(&update(id.as_ref(), &json!(delta)));
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

    /// A cleaned chunk of output the oldest waiter's extension `exec` gave while it runs (an
    /// input the recording holds, so a replay shows it in its place): shown at once, as Pi
    /// 1.5.2 streams it, with the command's id.
    pub(super) fn user_bash_chunk(&mut self, delta: &Value) {
        let id = self
            .user_bash_waiters
            .front()
            .and_then(|(id, _, _)| id.clone());
        self.out.json_line(&update(id.as_ref(), delta));
        self.user_bash_streamed += 1;
    }
}

/// Pi's `bash_execution_update` line: the command's id (when it had one) and the delta.
fn update(id: Option<&Value>, delta: &Value) -> Value {
    let mut update = serde_json::Map::new();
    update.insert("type".into(), json!("bash_execution_update"));
    if let Some(id) = id {
        update.insert("id".into(), id.clone());
    }
    update.insert("delta".into(), delta.clone());
    Value::Object(update)
}
