//! Pi 1.5.2's `project_trust` event across the channel: the extensions loaded before trust is
//! decided (the global and the command line's, `init`'s paths) are asked whether the project
//! is trusted, as Pi's `resolveProjectTrusted` asks them through `emitProjectTrustEvent`; once
//! decided, the final set (the project's own among them when trusted) is loaded into the same
//! host with [`ExtensionHost::extend`], the extensions already loaded kept, as Pi's final load
//! keeps them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;

use super::host::{response_data, ExtensionHost, HostError, Registrations, Waiter};

/// A handler's decision: the first whose `trusted` was not `"undecided"`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub struct TrustDecision {
    /// Whether it answered `"yes"` (anything else decided is "no", as in Pi).
    pub trusted: bool,
    /// `remember: true`: the decision goes into the trust store.
    pub remember: bool,
}

/// A handler that threw (or answered nothing), in the order asked.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct TrustError {
    /// The extension's path, as Pi's warning names it.
    pub path: String,
    /// What it threw.
    pub error: String,
}

/// The host's answer to `project_trust`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct TrustAnswer {
    /// The deciding handler's decision, if one decided.
    pub decision: Option<TrustDecision>,
    /// The handlers that threw before it.
    #[serde(default)]
    pub errors: Vec<TrustError>,
}

impl TrustError {
    /// Pi 1.5.2's warning for it (`resolveProjectTrusted`'s `onExtensionError`).
    pub fn warning(&self) -> String {
        format!(
            "Extension \"{}\" project_trust error: {}",
            self.path, self.error
        )
    }
}

impl ExtensionHost {
    /// Asks the loaded extensions' `project_trust` handlers about the project in `cwd`, their
    /// context Pi's without a terminal in `mode` (`print`, `json`, `rpc`).
    pub fn project_trust(&self, cwd: &Path, mode: &str) -> Result<TrustAnswer, HostError> {
        let data = self.ask(
            json!({"type": "project_trust", "cwd": cwd, "mode": mode}),
            "project_trust",
        )?;
        serde_json::from_value(data)
            .map_err(|e| HostError::Protocol(format!("project_trust's answer: {e}")))
    }

    /// Loads the final set `paths` (in Pi's order) once trust is decided: those loaded already
    /// stay as they are, the others load over the same runtime; the registrations of the whole
    /// set come back as `init`'s do (the providers registered before among them).
    pub fn extend(
        &self,
        paths: &[PathBuf],
        project_trusted: bool,
    ) -> Result<Registrations, HostError> {
        let data = self.ask(
            json!({"type": "extend", "paths": paths, "projectTrusted": project_trusted}),
            "extend",
        )?;
        serde_json::from_value(data)
            .map_err(|e| HostError::Protocol(format!("extend's answer: {e}")))
    }

    fn ask(&self, message: serde_json::Value, what: &str) -> Result<serde_json::Value, HostError> {
        let (sender, answers) = std::sync::mpsc::channel();
        let id = self.send_request(message, Waiter::Thread(sender))?;
        let answer = answers.recv().map_err(|_| self.ended(what));
        self.forget(id);
        response_data(answer?)
    }
}
