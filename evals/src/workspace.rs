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

/// Checks a task's fixture before anything runs: a folder (not a symbolic link to one), every
/// symbolic link in it relative and pointing inside it. A link out of the fixture (to a user's
/// key, say) would be copied into each trial's workspace as it is, handing the agent what it
/// points at; an absolute link, even into the fixture, points at the original, not the copy.
pub fn check_fixture(fixture: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(fixture)
        .map_err(|e| format!("no fixture folder at {}: {e}", fixture.display()))?;
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{} is a symbolic link: name the folder itself",
            fixture.display()
        ));
    }
    if !meta.is_dir() {
        return Err(format!("{} is not a folder", fixture.display()));
    }
    let root = std::fs::canonicalize(fixture)
        .map_err(|e| format!("cannot resolve {}: {e}", fixture.display()))?;
    check_links(fixture, &root, 0)
}

/// The links under `dir`, `depth` folders below the fixture's `root` (canonical).
fn check_links(dir: &Path, root: &Path, depth: usize) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let inside = link_stays_inside(&target, depth)
                && std::fs::canonicalize(&path).is_ok_and(|real| real.starts_with(root));
            if !inside {
                return Err(format!(
                    "{} links to {}, outside the fixture: a fixture's links are relative and stay inside it",
                    path.display(),
                    target.display()
                ));
            }
        } else if kind.is_dir() {
            check_links(&path, root, depth + 1)?;
        }
    }
    Ok(())
}

/// Whether a relative link `target`, in a folder `depth` below the fixture's root, never climbs
/// above that root by its own `..`s (the copy's root has another parent).
fn link_stays_inside(target: &Path, mut depth: usize) -> bool {
    use std::path::Component;
    for component in target.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
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
    fn a_fixture_link_must_stay_inside_the_fixture() {
        use std::os::unix::fs::symlink;
        let root = tempfile::tempdir().unwrap();
        let fixture = root.path().join("f");
        std::fs::create_dir_all(fixture.join("d/x")).unwrap();
        std::fs::write(fixture.join("a.txt"), "a").unwrap();
        std::fs::write(root.path().join("secret"), "s").unwrap();
        symlink("../a.txt", fixture.join("d/ok")).unwrap();
        symlink(".", fixture.join("d/here")).unwrap();
        assert_eq!(check_fixture(&fixture), Ok(()));
        let refused = |link: &str, target: &Path| {
            let at = fixture.join(link);
            symlink(target, &at).unwrap();
            let error = check_fixture(&fixture).expect_err(link);
            assert!(error.contains(&at.display().to_string()), "{error}");
            std::fs::remove_file(&at).unwrap();
        };
        refused("abs", &root.path().join("secret"));
        refused("abs-inside", &fixture.join("a.txt"));
        refused("d/up", Path::new("../../secret"));
        refused("d/back-in", Path::new("../../f/a.txt"));
        // Lexically inside, but `here` is the folder itself, so this climbs out of the fixture.
        refused("d/x/sly", Path::new("../here/../../secret"));
        refused("dangling", Path::new("nothing"));
        symlink(&fixture, root.path().join("linked")).unwrap();
        assert!(check_fixture(&root.path().join("linked")).is_err());
        assert!(check_fixture(&root.path().join("none")).is_err());
        assert!(check_fixture(&root.path().join("secret")).is_err());
    }

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
