//! The model registry's files read from disk: the user's models.json and auth.json. Parsing
//! and every decision stay in pi-providers (`ModelRegistry::from_text`, `AuthStorage::from_json`);
//! this reads the bytes and says what a missing or unreadable file means, as the original does.

use std::io::ErrorKind;
use std::path::Path;

use pi_providers::catalog::Catalog;
use pi_providers::registry::{AuthStorage, ModelRegistry};

/// Built-ins plus the models.json at `path` (a missing file is no error; an unreadable one is
/// the registry's error, the built-ins kept).
pub fn load_models(catalog: &Catalog, path: &Path) -> ModelRegistry {
    match std::fs::read(path) {
        Ok(bytes) => ModelRegistry::from_text(catalog, &String::from_utf8_lossy(&bytes), path),
        Err(e) if e.kind() == ErrorKind::NotFound => ModelRegistry::builtin(catalog),
        Err(e) => ModelRegistry::unreadable(catalog, path, e.to_string()),
    }
}

/// Credentials from an auth.json file; a missing file means none, and an unreadable or broken
/// one means none with the reason alongside.
pub fn load_auth(path: &Path) -> (AuthStorage, Option<std::io::Error>) {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let (auth, error) = AuthStorage::from_json(&text);
            (auth, error.map(std::io::Error::other))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => (AuthStorage::default(), None),
        Err(e) => (AuthStorage::default(), Some(e)),
    }
}
