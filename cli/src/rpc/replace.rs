//! The commands that replace the session (Pi's `AgentSessionRuntime`: `new_session`,
//! `switch_session`, `fork`, `clone`) and `export_html` (through [`crate::export`]). A replacement builds a whole new session
//! through [`Runtime::open`](crate::setup::Runtime::open), which claims the new file first (a
//! file another process writes is refused, and the old session stays); the old one is then
//! dropped without further output, as Pi disposes it, and its claim with it.

use std::path::PathBuf;

use pi_effects::driver::Interpreter;
use pi_effects::session::{plan_fork, ForkPosition, ForkTarget};
use serde_json::{json, Value};

use super::commands::{text_field, Failure};
use super::{failure, success, Rpc};
use crate::setup::SessionChoice;
use crate::CliError;

impl<I: Interpreter + Send> Rpc<I> {
    /// Runs a session-replacing command; its data.
    pub(super) fn replace_command(
        &mut self,
        kind: &str,
        command: &Value,
    ) -> Result<Option<Value>, Failure> {
        // Refused before anything is read or written (no clock, no session file): a replay
        // holds one session, and a cassette's lines may come from anyone.
        if kind != "export_html" && self.reopen.is_none() {
            return Err(not_while_replaying());
        }
        match kind {
            "new_session" => {
                let choice = match command.get("parentSession").and_then(Value::as_str) {
                    Some(parent) => SessionChoice::Child(parent.to_owned()),
                    None => SessionChoice::New,
                };
                self.replace(&choice)?;
                Ok(Some(json!({ "cancelled": false })))
            }
            "switch_session" => {
                let path = PathBuf::from(text_field(command, "sessionPath")?);
                let path = if path.is_absolute() {
                    path
                } else {
                    self.runtime.cwd.join(path)
                };
                self.replace(&SessionChoice::Open(path))?;
                Ok(Some(json!({ "cancelled": false })))
            }
            "fork" => {
                let entry_id = text_field(command, "entryId")?;
                // Pi answers `{text, cancelled}` (`text` left out when undefined).
                let data = match self.fork(&entry_id, ForkPosition::Before)? {
                    Some(text) => json!({ "text": text, "cancelled": false }),
                    None => json!({ "cancelled": false }),
                };
                Ok(Some(data))
            }
            "clone" => {
                let leaf = self.session.machine().tree().leaf_id().map(str::to_owned);
                let Some(leaf) = leaf else {
                    return Err(Failure::Message(
                        "Cannot clone session: no current entry selected".into(),
                    ));
                };
                self.fork(&leaf, ForkPosition::At)?;
                Ok(Some(json!({ "cancelled": false })))
            }
            _ => self.export_html(command).map(Some),
        }
    }

    /// `export_html`. Replaying, it is answered as the recorded run was (the path derived from
    /// the recorded working directory and session file) and nothing is read or written: the
    /// page the recorded run wrote is not this replay's to write, wherever the line points.
    fn export_html(&self, command: &Value) -> Result<Value, Failure> {
        let Some(file) = self.session.file() else {
            return Err(Failure::Message(
                "Cannot export in-memory session to HTML".into(),
            ));
        };
        let replaying = matches!(self.role, super::Role::Replaying);
        // The file written so far: the replay's own copy stands for the recorded one.
        let written = if replaying {
            self.session.written_file().unwrap_or(file)
        } else {
            file
        };
        if !written.exists() {
            return Err(Failure::Message(
                "Nothing to export yet - start a conversation first".into(),
            ));
        }
        let out = command.get("outputPath").and_then(Value::as_str).map(|p| {
            let path = PathBuf::from(p);
            if path.is_absolute() {
                path
            } else {
                self.runtime.cwd.join(path)
            }
        });
        let path = if replaying {
            crate::export::export_path(file, out.as_deref())
        } else {
            crate::export::export_html(file, out.as_deref()).map_err(Failure::Message)?
        };
        Ok(json!({ "path": path.display().to_string() }))
    }

    /// Pi's `AgentSessionRuntime.fork`: the text of the user message forked before, if any. A
    /// session kept in memory forks in memory.
    fn fork(&mut self, entry_id: &str, position: ForkPosition) -> Result<Option<String>, Failure> {
        let tree = self.session.machine().tree();
        let plan = plan_fork(tree, self.session.file(), entry_id, position)
            .map_err(|refusal| Failure::Message(refusal.into()))?;
        let choice = match plan.target {
            ForkTarget::New { parent: Some(file) } => SessionChoice::Child(file),
            ForkTarget::New { parent: None } => SessionChoice::InMemory,
            ForkTarget::Branch { from, leaf } => SessionChoice::Branch { from, leaf },
            ForkTarget::BranchInMemory { leaf } => SessionChoice::BranchInMemory {
                tree: Box::new(tree.clone()),
                leaf,
            },
        };
        self.replace(&choice)?;
        Ok(plan.text)
    }

    /// Builds the new session and drops the old one. Commands still waiting on the old session
    /// are answered now: an abort as done, a compaction as cancelled.
    fn replace(&mut self, choice: &SessionChoice) -> Result<(), Failure> {
        let reopen = self.reopen.as_ref().ok_or_else(not_while_replaying)?;
        let mut session =
            reopen(&self.runtime, choice, self.session.interpreter()).map_err(|error| {
                Failure::Message(match error {
                    // Without the command line's advice: a replacement never waits.
                    CliError::SessionHeld(held) => held.to_string(),
                    other => other.to_string(),
                })
            })?;
        session.set_input_source(pi_core::agent_session::RPC_SOURCE);
        self.session = session;
        self.bash = None;
        self.generation += 1;
        for id in std::mem::take(&mut self.abort_waiters) {
            self.respond(&success(id, "abort", None));
        }
        for (_, id) in std::mem::take(&mut self.compact_waiters) {
            self.respond(&failure(id, "compact", "Compaction cancelled"));
        }
        Ok(())
    }
}

/// The answer to a replacing command where none can be built (a replay, a hybrid run).
fn not_while_replaying() -> Failure {
    Failure::Message("Replacing the session is not supported while replaying a cassette".into())
}
