//! Loading the run's extensions (found by `pi_effects::extension::sidecar::discover` in
//! `Runtime::from_args`): the extension host is started only when one is configured, its tools
//! join the run's custom tools, and an extension that fails to load is Pi 1.5.2's error, which
//! ends the run (never a silent skip).

use pi_effects::extension::sidecar::{register_tools, ExtensionHost};

use crate::setup::{Diagnostic, Runtime};

/// What Pi 1.5.2 prints after an extension failed to load.
pub const LOAD_FAILURE_HINT: &str = "Hint: Start without extensions using \"pi -ne\".";

/// Pi's diagnostic for an extension that failed to load.
fn load_failure(path: &str, error: &str) -> Diagnostic {
    Diagnostic::Error(format!("Failed to load extension \"{path}\": {error}"))
}

/// Whether `diagnostics` hold a failed extension load (which Pi follows with its hint).
pub fn load_failed(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(
        |d| matches!(d, Diagnostic::Error(text) if text.starts_with("Failed to load extension")),
    )
}

impl Runtime {
    /// Starts the extension host for the extensions found, if any, and registers their tools;
    /// failures become diagnostics.
    pub fn start_extensions(&mut self) {
        if self.extension_paths.is_empty() {
            return;
        }
        match ExtensionHost::start(&self.extension_paths, &self.cwd, self.project_trusted) {
            Ok((host, registrations)) => {
                for failed in &registrations.errors {
                    self.diagnostics
                        .push(load_failure(&failed.path, &failed.error));
                }
                register_tools(&mut self.custom_tools, &registrations, &host);
                self.extension_host = Some(host);
            }
            Err(error) => {
                for path in &self.extension_paths {
                    self.diagnostics
                        .push(load_failure(&path.to_string_lossy(), &error.to_string()));
                }
            }
        }
    }
}
