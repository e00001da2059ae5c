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
    if real_path(path).is_some_and(|real| real.starts_with(&root)) {
        Ok(())
    } else {
        Err(PathError::OutsideWorkingDirectory(raw.to_owned()))
    }
}

/// How many symlinks one path may go through (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Where `path` really leads: walked one component at a time, every symlink followed, even one
/// whose target does not exist (a write would create that target). `None` when it cannot be
/// told: `..` after a component that does not exist (whatever it would climb out of is not
/// there yet), or too many links.
fn real_path(path: &Path) -> Option<PathBuf> {
    let mut pending: Vec<Component<'_>> = path.components().rev().collect();
    let mut owned: Vec<PathBuf> = Vec::new();
    let mut out = PathBuf::new();
    let mut missing = false;
    let mut links = 0;
    loop {
        let component = match pending.pop() {
            Some(component) => component.as_os_str().to_owned(),
            None => match owned.pop() {
                Some(part) => part.into_os_string(),
                None => return Some(out),
            },
        };
        match Path::new(&component).components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                if missing {
                    return None;
                }
                out.pop();
            }
            Some(_) => {
                let candidate = out.join(&component);
                if missing {
                    out = candidate;
                    continue;
                }
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return None;
                        }
                        let target = std::fs::read_link(&candidate).ok()?;
                        // The target's components come next, before the rest of the path.
                        let rest: Vec<PathBuf> = pending
                            .drain(..)
                            .rev()
                            .map(|c| PathBuf::from(c.as_os_str()))
                            .chain(owned.drain(..).rev())
                            .collect();
                        owned = target
                            .components()
                            .map(|c| PathBuf::from(c.as_os_str()))
                            .chain(rest)
                            .collect();
                        owned.reverse();
                    }
                    Ok(_) => out = candidate,
                    Err(_) => {
                        missing = true;
                        out = candidate;
                    }
                }
            }
        }
    }
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
    fn dangling_links_and_climbs_out_of_missing_directories_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new"), dir.path().join("dangling"))
            .unwrap();
        std::os::unix::fs::symlink("inner", dir.path().join("relative")).unwrap();
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        let env = env(dir.path());
        assert!(resolve(&env, "dangling", PathUse::Other).is_err());
        assert!(resolve(&env, "newdir/../link/x", PathUse::Other).is_err());
        assert!(resolve(&env, "relative/file.txt", PathUse::Other).is_ok());
        assert!(resolve(&env, "inner/../inner/x", PathUse::Other).is_ok());
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink(&looped, &looped).unwrap();
        assert!(resolve(&env, "loop/x", PathUse::Other).is_err());
    }

    #[test]
    fn without_the_sandbox_anything_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let env = ToolEnv::new(dir.path());
        let path = resolve(&env, "../x", PathUse::Other).unwrap();
        assert_eq!(path, dir.path().parent().unwrap().join("x"));
    }
}
