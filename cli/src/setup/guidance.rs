//! Where Pi's documentation is said to be, and the messages that point to it when no model or
//! key can be found (Pi's `auth-guidance.js`).

use std::path::{Path, PathBuf};

use pi_core::system_prompt::DocPaths;

/// Where Pi's documentation is said to be in the system prompt: `PI_PACKAGE_DIR`, else the
/// directory of this executable.
pub(crate) fn docs() -> DocPaths {
    let package = std::env::var_os("PI_PACKAGE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
        })
        .unwrap_or_default();
    let text = |p: PathBuf| p.to_string_lossy().into_owned();
    DocPaths {
        readme: text(package.join("README.md")),
        docs: text(package.join("docs")),
        examples: text(package.join("examples")),
    }
}

/// Pi's pointer to its login and model documentation (`auth-guidance.js`).
fn login_help() -> String {
    let docs = PathBuf::from(docs().docs);
    format!(
        "Use /login to log into a provider via OAuth or API key. See:\n  {}\n  {}",
        docs.join("providers.md").display(),
        docs.join("models.md").display()
    )
}

/// What Pi prints when no model has credentials.
pub fn no_models_available() -> String {
    format!("No models available. {}", login_help())
}

/// What a prompt fails with when the model's provider has no key (`unknown` is Pi's
/// placeholder when no model could be chosen).
pub fn no_api_key_found(provider: &str) -> String {
    let shown = if provider == "unknown" {
        "the selected model"
    } else {
        provider
    };
    format!("No API key found for {shown}.\n\n{}", login_help())
}
