//! The commands that replace the session (Pi's `AgentSessionRuntime`: `new_session`,
//! `switch_session`, `fork`, `clone`) and `export_html` (through [`crate::export`]). A
//! replacement is taken by the loop once its line was read ([`Rpc::replace_pending`]), since it
//! waits for the extensions, as Pi 1.5.2's runtime does: `session_before_switch` or
//! `session_before_fork` may cancel it (answered `cancelled: true`, nothing replaced); then
//! the new session is built through [`Runtime::open`](crate::setup::Runtime::open), which claims
//! the new file first (a file another process writes is refused, and the old session stays),
//! the old one hears `session_shutdown` with the replacement's reason and the new file, and is
//! dropped (a recording ends there), the extensions are loaded again and the new session hears
//! `session_start` with the reason and the old file, twice, as Pi's RPC mode binds them twice
//! (its printer subscribed only for the second).

use std::path::PathBuf;

use pi_core::agent::hooks::{HookEvent, HookPayload};
use pi_core::agent_session::{Reply, SessionError, SessionInput};
use pi_core::event::{Event, SessionEvent};
use pi_effects::driver::{DriveError, FrontEndInput, Interpreter};
use pi_effects::session::{plan_fork, ForkPosition, ForkTarget};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::commands::{text_field, Failure};
use super::{failure, success, Ended, Front, Rpc};
use crate::setup::SessionChoice;
use crate::CliError;

/// A replacing command read, waiting for the loop to carry it out.
pub(super) struct PendingReplace {
    id: Option<Value>,
    kind: String,
    command: Value,
}

/// Why a replacement stopped: Pi's error, or the replay parted from its recording.
enum Stop {
    Failed(Failure),
    Ended(Ended),
}

impl From<Failure> for Stop {
    fn from(failure: Failure) -> Self {
        Stop::Failed(failure)
    }
}

impl<I: Interpreter + Send> Rpc<I> {
    /// Runs `export_html` (its data), or keeps a session-replacing command for the loop
    /// ([`Rpc::replace_pending`]): `None`, answered later.
    pub(super) fn replace_command(
        &mut self,
        kind: &str,
        command: &Value,
    ) -> Result<Option<Option<Value>>, Failure> {
        if kind == "export_html" {
            return self.export_html(command).map(|data| Some(Some(data)));
        }
        // Refused before anything is read or written (no clock, no session file): a replay
        // holds one session, and a cassette's lines may come from anyone. Where the recorded
        // run's extensions were asked first, the replay asks them too (a cancel is recorded).
        if self.reopen.is_none() && !self.session.machine().hears(before_event(kind)) {
            return Err(not_while_replaying());
        }
        self.pending_replace = Some(PendingReplace {
            id: command.get("id").cloned(),
            kind: kind.to_owned(),
            command: command.clone(),
        });
        Ok(None)
    }
}

impl<I: Interpreter + Send> Rpc<I> {
    /// Whether the replacing command `line` asks the extensions first.
    pub(super) fn asks_before_replacing(&self, line: &str) -> bool {
        let kind = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|command| command.get("type")?.as_str().map(str::to_owned));
        kind.is_some_and(|kind| self.session.machine().hears(before_event(&kind)))
    }
}

/// The "before" event a replacing command asks.
fn before_event(kind: &str) -> HookEvent {
    match kind {
        "fork" | "clone" => HookEvent::SessionBeforeFork,
        _ => HookEvent::SessionBeforeSwitch,
    }
}

impl<I: Front> Rpc<I> {
    /// Carries out the replacing command read last, if any, and answers it; `Some` when the
    /// replay parted from its recording. `ui`: the extensions' UI requests, printed as their
    /// handlers ask (before the answer).
    pub(super) async fn replace_pending(
        &mut self,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Option<Ended> {
        let PendingReplace { id, kind, command } = self.pending_replace.take()?;
        let response = match self.replace_now(&kind, &command, ui).await {
            Ok(data) => success(id, &kind, Some(data)),
            Err(Stop::Failed(Failure::Message(message))) => failure(id, &kind, message),
            Err(Stop::Failed(Failure::Unknown)) => failure(id, &kind, "Unknown command"),
            Err(Stop::Ended(ended)) => return Some(ended),
        };
        self.print_ui(ui);
        self.respond(&response);
        self.out.flush();
        None
    }

    async fn replace_now(
        &mut self,
        kind: &str,
        command: &Value,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<Value, Stop> {
        match kind {
            "new_session" => {
                let choice = match command.get("parentSession").and_then(Value::as_str) {
                    Some(parent) => SessionChoice::Child(parent.to_owned()),
                    None => SessionChoice::New,
                };
                let asked = HookPayload::SessionBeforeSwitch {
                    reason: "new".into(),
                    target_session_file: None,
                };
                if self.cancelled(asked, ui).await? {
                    return Ok(json!({ "cancelled": true }));
                }
                self.replace(&choice, "new", ui).await?;
                Ok(json!({ "cancelled": false }))
            }
            "switch_session" => {
                let given = text_field(command, "sessionPath")?;
                let asked = HookPayload::SessionBeforeSwitch {
                    reason: "resume".into(),
                    target_session_file: Some(given.clone()),
                };
                if self.cancelled(asked, ui).await? {
                    return Ok(json!({ "cancelled": true }));
                }
                let path = PathBuf::from(given);
                let path = if path.is_absolute() {
                    path
                } else {
                    self.runtime.cwd.join(path)
                };
                self.replace(&SessionChoice::Open(path), "resume", ui)
                    .await?;
                Ok(json!({ "cancelled": false }))
            }
            "fork" => {
                let entry_id = text_field(command, "entryId")?;
                // Pi answers `{text, cancelled}` (`text` left out when undefined).
                let data = match self.fork(&entry_id, ForkPosition::Before, ui).await? {
                    Forked::Cancelled => json!({ "cancelled": true }),
                    Forked::Done(Some(text)) => json!({ "text": text, "cancelled": false }),
                    Forked::Done(None) => json!({ "cancelled": false }),
                };
                Ok(data)
            }
            _ => {
                let leaf = self.session.machine().tree().leaf_id().map(str::to_owned);
                let Some(leaf) = leaf else {
                    return Err(Stop::Failed(Failure::Message(
                        "Cannot clone session: no current entry selected".into(),
                    )));
                };
                let cancelled = matches!(
                    self.fork(&leaf, ForkPosition::At, ui).await?,
                    Forked::Cancelled
                );
                Ok(json!({ "cancelled": cancelled }))
            }
        }
    }

    /// Pi's `AgentSessionRuntime.fork`: asks `session_before_fork`, then forks; the text of the
    /// user message forked before, if any. A session kept in memory forks in memory.
    async fn fork(
        &mut self,
        entry_id: &str,
        position: ForkPosition,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<Forked, Stop> {
        let asked = HookPayload::SessionBeforeFork {
            entry_id: entry_id.to_owned(),
            position: match position {
                ForkPosition::Before => "before".into(),
                ForkPosition::At => "at".into(),
            },
        };
        if self.cancelled(asked, ui).await? {
            return Ok(Forked::Cancelled);
        }
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
        self.replace(&choice, "fork", ui).await?;
        Ok(Forked::Done(plan.text))
    }

    /// Asks the extensions that handle it whether the replacement `asked` may go on (Pi's
    /// `emitBeforeSwitch`/`emitBeforeFork`); what they cause is printed, the old session's
    /// printer being subscribed still.
    async fn cancelled(
        &mut self,
        asked: HookPayload,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<bool, Stop> {
        if !self.session.machine().hears(asked.event()) {
            return Ok(false);
        }
        // Asked while a run may stream on (Pi's handlers run beside it): the session is driven
        // until their answer, not until idle.
        let input = SessionInput::AskReplace(asked);
        let submitted = {
            let (out, waiting) = (&mut self.out, &mut self.started_waiters);
            self.session.submit(input, |event| {
                super::started::print_event(out, waiting, event)
            })
        };
        // The hook point is asked, not answered, within the submission.
        let mut replies = self.settled(submitted.map(Ok))?;
        loop {
            let (answer, others): (Vec<Reply>, Vec<Reply>) = replies
                .into_iter()
                .partition(|reply| matches!(reply, Reply::Replacing { .. }));
            self.replies(others);
            if let Some(Reply::Replacing { cancelled }) = answer.first() {
                return Ok(*cancelled);
            }
            if !self.session.machine().is_busy() {
                return Ok(false);
            }
            let advanced = {
                let (out, waiting) = (&mut self.out, &mut self.started_waiters);
                self.session
                    .advance(|event| super::started::print_event(out, waiting, event))
                    .await
            };
            replies = self.settled(advanced)?;
            // What the handlers asked of the UI follows what their answer applied (their
            // entries), as the session's own notifications print it.
            self.print_ui(ui);
        }
    }

    /// The replies of a step driven for a replacement; an error is reported (the replay
    /// parted from its recording: the loop ends).
    fn settled(
        &mut self,
        driven: Result<Result<Vec<Reply>, SessionError>, DriveError>,
    ) -> Result<Vec<Reply>, Stop> {
        match driven {
            Ok(Ok(replies)) => Ok(replies),
            Ok(Err(error)) => {
                self.out.flush();
                eprintln!("{error}");
                Ok(Vec::new())
            }
            Err(error) => {
                if let Some(divergence) = self.session.interpreter().diverged(Some(&error)) {
                    return Err(Stop::Ended(Ended::Diverged(divergence)));
                }
                self.out.flush();
                eprintln!("{error}");
                Ok(Vec::new())
            }
        }
    }

    /// Feeds `input` (one of the session's own notifications) and drives the session until
    /// it is idle; every event printed when `print_all`, else only the handlers' errors.
    async fn told(
        &mut self,
        input: SessionInput,
        print_all: bool,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        let out = &mut self.out;
        let print = |event: &Event| {
            if print_all || matches!(event, Event::Session(SessionEvent::ExtensionError { .. })) {
                out.json_line(event);
            }
        };
        let told = self.session.run(input, print).await;
        self.print_ui(ui);
        match told {
            Ok(driven) => {
                self.replies(driven.replies);
                Ok(())
            }
            Err(error) => {
                if let Some(divergence) = self.session.interpreter().diverged(Some(&error)) {
                    return Err(Stop::Ended(Ended::Diverged(divergence)));
                }
                self.out.flush();
                eprintln!("{error}");
                Ok(())
            }
        }
    }

    /// Prints the extensions' UI requests that came so far.
    pub(super) fn print_ui(&mut self, ui: &mut Option<UnboundedReceiver<Value>>) {
        let Some(requests) = ui else {
            return;
        };
        while let Ok(request) = requests.try_recv() {
            self.arrived(FrontEndInput::ExtensionUi(request));
        }
    }

    /// Builds the new session, tells the old one's extensions it ends (`reason`, the new
    /// file), drops it and tells the new one's they start. Commands still waiting on the old
    /// session are answered: an abort as done, a compaction as cancelled.
    async fn replace(
        &mut self,
        choice: &SessionChoice,
        reason: &str,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        // A replay holds the recorded session up to here: the recording ended with the
        // extensions' answer.
        let Some(reopen) = self.reopen.as_ref() else {
            return Err(Stop::Ended(Ended::Replaced));
        };
        let mut session =
            reopen(&self.runtime, choice, self.session.interpreter()).map_err(|error| {
                Failure::Message(match error {
                    // Without the command line's advice: a replacement never waits.
                    CliError::SessionHeld(held) => held.to_string(),
                    other => other.to_string(),
                })
            })?;
        session.set_input_source(pi_core::agent_session::RPC_SOURCE);
        let previous = self.session.file().map(|f| f.display().to_string());
        // Building the new session pointed the extensions' session manager at its file; the
        // old session's handlers still read the old one.
        self.runtime.mirror_for_extensions(self.session.file());
        // The recording ends with the extensions' answer (a replay cannot build the session
        // that follows); the old session still hears of its end, its run aborted first (Pi's
        // `teardownCurrent`).
        self.end_session();
        if self.session.machine().hears(HookEvent::SessionShutdown) {
            if self.session.machine().is_busy() {
                self.told(SessionInput::Abort, true, ui).await?;
            }
            let leave = SessionInput::Leave {
                reason: reason.to_owned(),
                target_session_file: session.file().map(|f| f.display().to_string()),
            };
            self.told(leave, true, ui).await?;
        }
        self.runtime.mirror_for_extensions(session.file());
        self.session = session;
        self.session_ended = false;
        self.bash = None;
        self.generation += 1;
        for id in std::mem::take(&mut self.abort_waiters) {
            self.respond(&success(id, "abort", None));
        }
        for (_, id) in std::mem::take(&mut self.compact_waiters) {
            self.respond(&failure(id, "compact", "Compaction cancelled"));
        }
        if let Some(host) = &self.runtime.extension_host {
            if let Err(error) = host.reload() {
                self.out.flush();
                eprintln!("{error}");
            }
        }
        if self.session.machine().hears(HookEvent::SessionStart) {
            for print_all in [false, true] {
                let start = SessionInput::Replaced {
                    reason: reason.to_owned(),
                    previous_session_file: previous.clone(),
                };
                self.told(start, print_all, ui).await?;
            }
        }
        Ok(())
    }
}

/// How a fork went.
enum Forked {
    /// An extension cancelled it.
    Cancelled,
    /// The session was forked; the text of the user message forked before, if any.
    Done(Option<String>),
}

impl<I: Interpreter + Send> Rpc<I> {
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
}

/// The answer to a replacing command where none can be built (a replay, a hybrid run).
fn not_while_replaying() -> Failure {
    Failure::Message("Replacing the session is not supported while replaying a cassette".into())
}
