//! The extensions' `ctx.ui` across the extension host's channel (the host's side is
//! `sidecar/extension-ui.mjs`). A run with a UI (RPC mode) enables it: the host then sends each
//! dialog and notice as Pi 1.5.2's `extension_ui_request` line, which the front end writes and
//! records, and the front end passes each client's `extension_ui_response` back. The requests
//! come on a channel of their own, read beside stdin, so a tool waiting for its client's answer
//! holds up neither. Without a UI the host answers the dialogs' defaults itself, as Pi's
//! print mode does.

use std::sync::Mutex;

use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::host::{ExtensionHost, HostError, Routes};

/// The host's entry module, shipped in the binary so that it needs nothing but Node at run time.
const HOST_SOURCE: &str = include_str!("../../../../sidecar/pi-extension-host.mjs");

/// The modules the entry imports, each by the name it is imported by, every module after those
/// it imports (the imports form no circle).
const MODULES: &[(&str, &str)] = &[
    (
        "./host-scope.mjs",
        include_str!("../../../../sidecar/host-scope.mjs"),
    ),
    (
        "./host-typed-models.mjs",
        include_str!("../../../../sidecar/host-typed-models.mjs"),
    ),
    (
        "./host-loadout.mjs",
        include_str!("../../../../sidecar/host-loadout.mjs"),
    ),
    (
        "./session-view.mjs",
        include_str!("../../../../sidecar/session-view.mjs"),
    ),
    (
        "./host-routing.mjs",
        include_str!("../../../../sidecar/host-routing.mjs"),
    ),
    (
        "./host-loading.mjs",
        include_str!("../../../../sidecar/host-loading.mjs"),
    ),
    (
        "./host-providers.mjs",
        include_str!("../../../../sidecar/host-providers.mjs"),
    ),
    (
        "./extension-ui.mjs",
        include_str!("../../../../sidecar/extension-ui.mjs"),
    ),
];

/// The entry module with each import of a module of [`MODULES`] made a `data:` URL of that
/// module (its own imports made so first): Node runs one script (`-e`), which has no folder to
/// import a file beside it from. A module imported twice has one URL, so Node loads it once.
pub(super) fn host_source() -> String {
    use base64::Engine;
    let mut urls: Vec<(&str, String)> = Vec::new();
    for (name, source) in MODULES {
        let encoded = base64::engine::general_purpose::STANDARD.encode(linked(source, &urls));
        urls.push((name, format!("data:text/javascript;base64,{encoded}")));
    }
    linked(HOST_SOURCE, &urls)
}

/// `source` with each import of a module named in `urls` (`from "<name>"`) made its URL.
fn linked(source: &str, urls: &[(&str, String)]) -> String {
    urls.iter().fold(source.to_owned(), |text, (name, url)| {
        text.replace(&format!("from \"{name}\""), &format!("from \"{url}\""))
    })
}

/// Hands a `ui.request` the host wrote to the run's UI; says whether `message` was one (a run
/// without a UI gets none: the host answers its defaults).
pub(super) fn divert(message: &Value, routes: &Mutex<Routes>) -> bool {
    if message["type"] != "ui.request" {
        return false;
    }
    if let Some(ui) = routes.lock().ok().and_then(|r| r.ui.clone()) {
        // A front end gone wants no more requests.
        let _ = ui.send(message["request"].clone());
    }
    true
}

impl ExtensionHost {
    /// Hands the run's UI a line of the front end's own (an extension's `exec` streaming a
    /// user command's output); a run without a UI has no front end to show it.
    pub(super) fn tell_ui(&self, line: Value) {
        if let Some(ui) = self.routes.lock().ok().and_then(|r| r.ui.clone()) {
            // A front end gone wants no more lines.
            let _ = ui.send(line);
        }
    }

    /// Says `message` as a notice of `notify_type` (Pi's `ctx.ui.notify`) on the run's UI, for
    /// a built-in extension that runs in this process; a run without a UI shows none, as Pi's
    /// print mode shows none.
    pub fn notify(&self, message: &str, notify_type: &str) {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let id = pi_core::session::ids::IdGenerator::new(seed).uuid_v4();
        self.tell_ui(json!({
            "type": "extension_ui_request",
            "id": id,
            "method": "notify",
            "message": message,
            "notifyType": notify_type,
        }));
    }

    /// Gives the extensions a UI (`ctx.hasUI` true, dialogs asked, not defaulted): their
    /// `extension_ui_request` lines come on the receiver, in the order the host wrote them.
    pub fn enable_ui(&self) -> Result<UnboundedReceiver<Value>, HostError> {
        let (sender, receiver) = unbounded_channel();
        self.routes
            .lock()
            .map_err(|_| HostError::Protocol("poisoned".into()))?
            .ui = Some(sender);
        self.send(&json!({"type": "ui.enable"}))?;
        Ok(receiver)
    }

    /// Passes a client's `extension_ui_response` line to the dialog waiting for it (one no
    /// dialog waits for is dropped by the host, as by Pi).
    pub fn answer_ui(&self, response: &Value) -> Result<(), HostError> {
        self.send(&json!({"type": "ui.response", "response": response}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_import_of_a_hosts_module_is_joined_and_each_module_is_imported() {
        let joined = host_source();
        for (name, _) in MODULES {
            let import = format!("from \"{name}\"");
            assert!(!joined.contains(&import), "{name} left unjoined");
            let imported = std::iter::once(HOST_SOURCE)
                .chain(MODULES.iter().map(|(_, source)| *source))
                .any(|source| source.contains(&import));
            assert!(imported, "{name} is imported by no module");
        }
        assert!(
            !joined.contains("from \"./"),
            "an import of a module not joined"
        );
    }
}
