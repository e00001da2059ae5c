//! A trial's folders: a fresh copy of the task's fixture as the workspace, a home and temp
//! folder of its own, and an agent directory holding the trial's settings, the user's model
//! definitions and, for trials that call a model (never for replays), the user's credentials
//! (`auth.json`). Removed when the trial ends, unless kept; a kept trial's agent directory
//! lives in a temporary folder while the trial runs and is copied into the kept folder without
//! `auth.json` when it ends, so no credential is ever written there.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use serde_json::Value;

/// The folders of one trial.
#[derive(Debug)]
pub struct TrialDirs {
    /// Owns the folders while the trial runs; `None` when they are kept.
    owner: Option<tempfile::TempDir>,
    /// Where the folders go to be removed when dropped; removed on the spot when `None`.
    remover: Option<Sender<tempfile::TempDir>>,
    /// A kept trial's agent directory while it runs, outside the kept folder.
    kept_agent: Option<tempfile::TempDir>,
    pub root: PathBuf,
    /// The fixture's copy: the agent's working directory.
    pub workspace: PathBuf,
    /// HOME and TMPDIR of confined commands.
    pub temp: PathBuf,
    /// The agent directory (`PI_CODING_AGENT_DIR`).
    pub agent_dir: PathBuf,
}

/// Why a trial's folders could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot prepare the trial's workspace: {what}: {source}")]
pub struct WorkspaceError {
    pub what: String,
    #[source]
    pub source: std::io::Error,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> WorkspaceError {
    let what = what.into();
    move |source| WorkspaceError { what, source }
}

impl TrialDirs {
    /// Makes the folders: under `keep` (as `name`, kept) or in the system's temp folder
    /// (removed when dropped); copies `fixture` into the workspace, and `models.json` from
    /// `user_agent_dir` into the agent directory, with `auth.json` when `credentials` (a trial
    /// that calls a model).
    pub fn prepare(
        name: &str,
        keep: Option<&Path>,
        fixture: Option<&Path>,
        user_agent_dir: Option<&Path>,
        credentials: bool,
    ) -> Result<TrialDirs, WorkspaceError> {
        let (owner, root) = match keep {
            Some(dir) => {
                // Absolute: the agent runs in the workspace, where a relative path means
                // another place.
                let root = std::path::absolute(dir.join(name))
                    .map_err(io(dir.join(name).display().to_string()))?;
                if root.exists() {
                    std::fs::remove_dir_all(&root).map_err(io(root.display().to_string()))?;
                }
                std::fs::create_dir_all(&root).map_err(io(root.display().to_string()))?;
                (None, root)
            }
            None => {
                let owner = tempfile::Builder::new()
                    .prefix("pi-eval-")
                    .tempdir()
                    .map_err(io("a temporary folder"))?;
                let root = owner.path().to_path_buf();
                (Some(owner), root)
            }
        };
        let workspace = root.join("workspace");
        let temp = root.join("home");
        let kept_agent = match keep {
            Some(_) => Some(
                tempfile::Builder::new()
                    .prefix("pi-eval-agent-")
                    .tempdir()
                    .map_err(io("a temporary folder"))?,
            ),
            None => None,
        };
        let agent_dir = kept_agent
            .as_ref()
            .map_or_else(|| root.join("agent"), |dir| dir.path().to_path_buf());
        for dir in [&temp, &agent_dir] {
            std::fs::create_dir_all(dir).map_err(io(dir.display().to_string()))?;
        }
        match fixture {
            Some(fixture) => copy_dir(fixture, &workspace)
                .map_err(io(format!("copying the fixture {}", fixture.display())))?,
            None => std::fs::create_dir_all(&workspace).map_err(io("the workspace"))?,
        }
        if let Some(user) = user_agent_dir {
            let files: &[&str] = if credentials {
                &["models.json", CREDENTIALS]
            } else {
                &["models.json"]
            };
            for file in files {
                let from = user.join(file);
                if from.is_file() {
                    std::fs::copy(&from, agent_dir.join(file))
                        .map_err(io(from.display().to_string()))?;
                }
            }
        }
        Ok(TrialDirs {
            owner,
            remover: None,
            kept_agent,
            root,
            workspace,
            temp,
            agent_dir,
        })
    }
}

impl TrialDirs {
    /// Hands the folders, when dropped, to `remover` (a thread that removes them) instead of
    /// removing them on the spot: on some disks removing a tree takes longer than the trial,
    /// and nothing waits for it but the end of the run.
    pub fn removed_by(mut self, remover: Sender<tempfile::TempDir>) -> Self {
        self.remover = Some(remover);
        self
    }

    /// Writes the agent's `settings.json`.
    pub fn write_settings(
        &self,
        settings: &serde_json::Map<String, Value>,
    ) -> Result<(), WorkspaceError> {
        let text = serde_json::to_string_pretty(&Value::Object(settings.clone()))
            .unwrap_or_else(|_| "{}".into());
        std::fs::write(self.agent_dir.join("settings.json"), text).map_err(io("settings.json"))
    }
}

impl Drop for TrialDirs {
    fn drop(&mut self) {
        if let Some(agent) = self.kept_agent.take() {
            // Best effort: a folder that cannot be copied is not kept; the credentials never are.
            let _ = copy_dir_except(agent.path(), &self.root.join("agent"), CREDENTIALS);
        }
        if let (Some(owner), Some(remover)) = (self.owner.take(), &self.remover) {
            // A remover that is gone hands the folders back, to be removed here.
            let _ = remover.send(owner);
        }
    }
}

/// The user's credentials file in an agent directory.
const CREDENTIALS: &str = "auth.json";

/// Copies a folder recursively; symbolic links are copied as links.
pub fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    copy_dir_except(from, to, "")
}

/// [`copy_dir`], leaving out the top-level entry named `left_out`.
fn copy_dir_except(from: &Path, to: &Path, left_out: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if !left_out.is_empty() && entry.file_name() == left_out {
            continue;
        }
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The user's agent directory, as Pi finds it: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn user_agent_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pi").join("agent"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn credentials_are_copied_only_when_asked_and_never_kept() {
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("models.json"), "{}").unwrap();
        std::fs::write(user.path().join(CREDENTIALS), "planted").unwrap();
        let keep = tempfile::tempdir().unwrap();
        for (keep, credentials) in [(None, false), (None, true), (Some(keep.path()), true)] {
            let dirs = TrialDirs::prepare("t", keep, None, Some(user.path()), credentials).unwrap();
            assert!(dirs.agent_dir.join("models.json").is_file());
            assert_eq!(dirs.agent_dir.join(CREDENTIALS).is_file(), credentials);
            if keep.is_some() {
                assert!(
                    !dirs.agent_dir.starts_with(&dirs.root),
                    "outside the kept folder"
                );
                dirs.write_settings(&serde_json::Map::new()).unwrap();
            }
            drop(dirs);
        }
        let kept = keep.path().join("t/agent");
        assert!(kept.join("settings.json").is_file());
        assert!(kept.join("models.json").is_file());
        assert!(!kept.join(CREDENTIALS).exists());
    }
}
