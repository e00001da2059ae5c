//! Turning a path the model wrote into the path a tool touches, and the opt-in confinement of
//! those paths to the working directory.
//!
//! Confinement resolves symlinks: the deepest existing ancestor of the path is canonicalised, so
//! a link inside the working directory that points outside it is refused like a plain `../..`.

use std::io;
use std::path::{Component, Path, PathBuf};

use pi_core::tools::paths::{read_path_candidates, resolve_to_cwd};

use super::ToolEnv;

/// Why a path cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The sandbox is on and the path leads outside the working directory.
    #[error("Path is outside the working directory: {0}")]
    OutsideWorkingDirectory(String),
    /// The working directory itself cannot be resolved.
    #[error("Cannot resolve the working directory {path}: {source}")]
    WorkingDirectory { path: PathBuf, source: io::Error },
}

/// Which spelling rules apply: the read tool also tries the macOS screenshot and NFD spellings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathUse {
    Read,
    Other,
}

/// Resolves `raw` (as the model wrote it) against the environment's cwd, and confines it when
/// the sandbox is on.
pub fn resolve(env: &ToolEnv, raw: &str, usage: PathUse) -> Result<PathBuf, PathError> {
    let cwd = env.cwd.to_string_lossy();
    let home = env.home.to_string_lossy();
    let resolved = resolve_to_cwd(raw, &cwd, &home);
    let path = match usage {
        PathUse::Other => PathBuf::from(resolved),
        PathUse::Read => read_path_candidates(&resolved)
            .into_iter()
            .map(PathBuf::from)
            .find(|candidate| candidate.exists())
            .unwrap_or_else(|| PathBuf::from(&resolved)),
    };
    if env.sandbox {
        confine(&env.cwd, &path, raw)?;
    }
    Ok(path)
}

/// Refuses `path` unless it lies inside `cwd` once symlinks are resolved.
fn confine(cwd: &Path, path: &Path, raw: &str) -> Result<(), PathError> {
    let root = cwd
        .canonicalize()
        .map_err(|source| PathError::WorkingDirectory {
            path: cwd.to_path_buf(),
            source,
        })?;
    if real_path(path).starts_with(&root) {
        Ok(())
    } else {
        Err(PathError::OutsideWorkingDirectory(raw.to_owned()))
    }
}

/// The path with its deepest existing ancestor canonicalised and the rest appended lexically.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<PathBuf> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                push_lexically(&mut out, part);
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(PathBuf::from(name));
                existing = parent.to_path_buf();
            }
            _ => return lexical(path),
        }
    }
}

fn push_lexically(out: &mut PathBuf, part: &Path) {
    for component in part.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    push_lexically(&mut out, path);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(dir: &Path) -> ToolEnv {
        let mut env = ToolEnv::new(dir);
        env.sandbox = true;
        env
    }

    #[test]
    fn paths_inside_are_allowed_even_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let env = env(dir.path());
        assert!(resolve(&env, "a/b/new.txt", PathUse::Other).is_ok());
        assert!(resolve(&env, "./x/../y.txt", PathUse::Other).is_ok());
    }

    #[test]
    fn parent_escapes_and_absolute_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let env = env(dir.path());
        for raw in ["../outside.txt", "/etc/passwd", "~/x", "a/../../b"] {
            let err = resolve(&env, raw, PathUse::Other).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("Path is outside the working directory: {raw}")
            );
        }
    }

    #[test]
    fn symlink_escapes_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let env = env(dir.path());
        assert!(resolve(&env, "link/secret.txt", PathUse::Read).is_err());
        assert!(resolve(&env, "link/new/file.txt", PathUse::Other).is_err());
        assert!(resolve(&env, "link", PathUse::Other).is_err());
    }

    #[test]
    fn without_the_sandbox_anything_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let env = ToolEnv::new(dir.path());
        let path = resolve(&env, "../x", PathUse::Other).unwrap();
        assert_eq!(path, dir.path().parent().unwrap().join("x"));
    }
}
