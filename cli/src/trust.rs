//! Project trust (Pi 1.5's `resolveProjectTrusted`, `core/project-trust.js` and
//! `core/trust-manager.js`): whether this run reads the project's own files. Untrusted, the
//! project's settings, `mcp.json`, extensions, skills and prompt templates are not read.
//! A folder that needs trust asks the global and command line's extensions first (their
//! `project_trust` handlers, `remember` storing the decision in `trust.json` as Pi stores it);
//! without a terminal to ask in, an undecided project is untrusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pi_effects::extension::sidecar::{TrustAnswer, TrustDecision};
use serde_json::Value;

/// What under the project's `.pi` makes a folder ask for trust (`TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES`).
const TRUST_REQUIRING: [&str; 8] = [
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
];

/// The file of remembered decisions in the agent directory: folder path -> true/false/null.
const TRUST_FILE: &str = "trust.json";

/// What decided a run's trust.
#[derive(Debug, PartialEq)]
pub struct Trust {
    /// Whether the project is trusted; a trust store that cannot be read or written is Pi's
    /// error.
    pub trusted: Result<bool, String>,
    /// The decision of an extension's `project_trust` handler, when one decided.
    pub by_extension: Option<TrustDecision>,
    /// Pi's warnings for the handlers that threw.
    pub warnings: Vec<String>,
}

/// Whether the project in `cwd` is trusted for this run: `--approve`/`--no-approve` first; a
/// folder with nothing that needs trust takes the remembered decision or is trusted; else the
/// extensions loaded so far are asked (`ask`: their answer, `None` when none is loaded), the
/// first handler's decision deciding (and stored when it says `remember`); else the decision
/// remembered for the folder or its nearest parent, else the global `defaultProjectTrust`
/// setting (`always`, `never`; `ask` cannot ask here, so it is untrusted).
pub fn resolve(
    agent_dir: &Path,
    cwd: &Path,
    home: &Path,
    flag: Option<bool>,
    default_trust: Option<&str>,
    ask: impl FnOnce() -> Option<TrustAnswer>,
) -> Trust {
    let decided = |trusted| Trust {
        trusted,
        by_extension: None,
        warnings: Vec::new(),
    };
    if let Some(decision) = flag {
        return decided(Ok(decision));
    }
    let store = agent_dir.join(TRUST_FILE);
    if !needs_trust(cwd, home) {
        return decided(remembered(&store, cwd).map(|r| r.unwrap_or(true)));
    }
    let mut warnings = Vec::new();
    if let Some(answer) = ask() {
        warnings.extend(answer.errors.iter().map(|e| e.warning()));
        if let Some(decision) = answer.decision {
            let stored = if decision.remember {
                remember(&store, cwd, decision.trusted)
            } else {
                Ok(())
            };
            return Trust {
                trusted: stored.map(|()| decision.trusted),
                by_extension: Some(decision),
                warnings,
            };
        }
    }
    let trusted =
        remembered(&store, cwd).map(|decision| decision.unwrap_or(default_trust == Some("always")));
    Trust {
        trusted,
        by_extension: None,
        warnings,
    }
}

/// Pi's `ProjectTrustStore.set`: the decision for `cwd` (its real path) in place of any it
/// had, the file rewritten with its keys sorted, two-space indented, a newline at its end.
fn remember(file: &Path, cwd: &Path, trusted: bool) -> Result<(), String> {
    locked(file, || write_decision(file, cwd, trusted))
}

fn write_decision(file: &Path, cwd: &Path, trusted: bool) -> Result<(), String> {
    let mut entries = read_store(file)?;
    entries.insert(canonical(cwd).display().to_string(), Value::Bool(trusted));
    let sorted: BTreeMap<String, Value> = entries.into_iter().collect();
    let text = serde_json::to_string_pretty(&sorted).map_err(|e| e.to_string())?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("Failed to write trust store {}: {e}", file.display()))?;
    }
    std::fs::write(file, format!("{text}\n"))
        .map_err(|e| format!("Failed to write trust store {}: {e}", file.display()))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Pi's `hasTrustRequiringProjectResources`: a trust-requiring entry under `cwd/.pi`, or an
/// `.agents/skills` folder in `cwd` or a parent (the user's own `~/.agents/skills` aside).
fn needs_trust(cwd: &Path, home: &Path) -> bool {
    let cwd = canonical(cwd);
    let config = cwd.join(".pi");
    if TRUST_REQUIRING
        .iter()
        .any(|entry| config.join(entry).exists())
    {
        return true;
    }
    let users = canonical(home).join(".agents").join("skills");
    cwd.ancestors().any(|dir| {
        let skills = dir.join(".agents").join("skills");
        skills != users && skills.exists()
    })
}

/// The decision remembered for `cwd` or its nearest parent (`findNearestTrustEntry`); a
/// `null` entry decides nothing.
fn remembered(file: &Path, cwd: &Path) -> Result<Option<bool>, String> {
    let entries = locked(file, || read_store(file))?;
    Ok(canonical(cwd).ancestors().find_map(|dir| {
        entries
            .iter()
            .find(|(key, _)| Path::new(key) == dir)
            .and_then(|(_, value)| value.as_bool())
    }))
}

/// How many times, and how far apart, the store's lock is tried (Pi's `acquireTrustLockSync`).
const LOCK_ATTEMPTS: u32 = 10;
const LOCK_DELAY: std::time::Duration = std::time::Duration::from_millis(20);
/// A lock older than this was left by a process that died holding it (proper-lockfile's
/// `stale`), and is taken over.
const LOCK_STALE: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `work` holding the store's lock as Pi 1.5.2 holds it, so that a `pi` of either kind
/// running at once never interleaves a read and a write: the folder `trust.json.lock`
/// (proper-lockfile's), made beside the store, removed afterwards.
fn locked<T>(file: &Path, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let failed = |error: &dyn std::fmt::Display| {
        format!("Failed to lock trust store {}: {error}", file.display())
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
    }
    let lock = PathBuf::from(format!("{}.lock", file.display()));
    let mut attempt = 1;
    loop {
        match std::fs::create_dir(&lock) {
            Ok(()) => break,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|at| at.elapsed().ok())
                    .is_some_and(|age| age > LOCK_STALE);
                if stale {
                    let _ = std::fs::remove_dir(&lock);
                    continue;
                }
                if attempt == LOCK_ATTEMPTS {
                    return Err(failed(&"Lock file is already being held"));
                }
                attempt += 1;
                std::thread::sleep(LOCK_DELAY);
            }
            Err(error) => return Err(failed(&error)),
        }
    }
    let done = work();
    let _ = std::fs::remove_dir(&lock);
    done
}

/// The trust store's entries (none when there is no file); a file that does not parse is an
/// error, in Pi's words.
fn read_store(file: &Path) -> Result<serde_json::Map<String, Value>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(serde_json::Map::new())
        }
        Err(error) => {
            return Err(format!(
                "Failed to read trust store {}: {error}",
                file.display()
            ))
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parsed: Value = serde_json::from_str(text)
        .map_err(|error| format!("Failed to read trust store {}: {error}", file.display()))?;
    let Value::Object(entries) = parsed else {
        return Err(format!(
            "Invalid trust store {}: expected an object",
            file.display()
        ));
    };
    for (key, value) in &entries {
        if !matches!(value, Value::Bool(_) | Value::Null) {
            return Err(format!(
                "Invalid trust store {}: value for {} must be true, false, or null",
                file.display(),
                Value::String(key.clone())
            ));
        }
    }
    Ok(entries)
}

/// Pi 1.5.2's pre-trust load: the extensions found while the project is untrusted (the command
/// line's and the global ones) started in the extension host and asked about the project
/// (`project_trust`), their context that of the run's mode (`print` for `--help` and
/// `--list-models`). None are found, or the host does not start: nobody is asked (a host that
/// fails is said when the final set loads). The host stays started for that final load.
pub(crate) fn ask_extensions(
    args: &crate::args::Args,
    agent_dir: &Path,
    cwd: &Path,
    home: &Path,
    global: &crate::settings::Settings,
) -> Option<(
    std::sync::Arc<pi_effects::extension::sidecar::ExtensionHost>,
    pi_effects::extension::sidecar::TrustAnswer,
)> {
    let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
        agent_dir,
        cwd,
        home,
        listed: global.listed_resources(),
    });
    let paths = pi_effects::extension::sidecar::discover(&pi_effects::extension::sidecar::Wanted {
        agent_dir,
        cwd,
        home,
        project_trusted: false,
        no_extensions: args.no_extensions,
        cli_paths: &args.extensions,
        listed: global.listed_resources(),
        packages: &packages.found,
    });
    if paths.is_empty() {
        return None;
    }
    let (host, _) = pi_effects::extension::sidecar::ExtensionHost::start_with_flags(
        &paths,
        cwd,
        false,
        &args.extension_flags,
    )
    .ok()?;
    let mode = match args.mode {
        _ if args.help || args.list_models.is_some() => "print",
        Some(crate::args::Mode::Json) => "json",
        Some(crate::args::Mode::Rpc) => "rpc",
        _ => "print",
    };
    let answer = host.project_trust(cwd, mode).ok()?;
    Some((host, answer))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_remembered_decision_counts_and_null_decides_nothing() {
        let root = tempfile::tempdir().unwrap();
        let project = canonical(root.path()).join("a/b");
        std::fs::create_dir_all(project.join(".pi")).unwrap();
        std::fs::write(project.join(".pi/settings.json"), "{}").unwrap();
        let agent = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let store = |text: String| std::fs::write(agent.path().join(TRUST_FILE), text).unwrap();
        let trusted =
            |default| resolve(agent.path(), &project, home.path(), None, default, || None).trusted;
        assert_eq!(trusted(None), Ok(false), "undecided, and nobody to ask");
        assert_eq!(trusted(Some("always")), Ok(true));
        let parent = project.parent().unwrap().display().to_string();
        let child = project.display().to_string();
        store(serde_json::json!({ parent.clone(): true, child.clone(): null }).to_string());
        assert_eq!(trusted(None), Ok(true), "the parent's decision");
        store(serde_json::json!({ parent: true, child: false }).to_string());
        assert_eq!(
            trusted(Some("always")),
            Ok(false),
            "the nearest decision first"
        );
        assert_eq!(
            resolve(
                agent.path(),
                &project,
                home.path(),
                Some(true),
                None,
                || None
            )
            .trusted,
            Ok(true)
        );
        store(r#"{"x": 1}"#.into());
        assert!(trusted(None)
            .unwrap_err()
            .contains("must be true, false, or null"));
    }

    #[test]
    fn a_folder_without_project_resources_is_trusted_unless_remembered_otherwise() {
        let project = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        let trusted = || {
            resolve(
                agent.path(),
                project.path(),
                project.path(),
                None,
                None,
                || None,
            )
            .trusted
        };
        assert_eq!(trusted(), Ok(true));
        let key = canonical(project.path()).display().to_string();
        std::fs::write(
            agent.path().join(TRUST_FILE),
            serde_json::json!({ key: false }).to_string(),
        )
        .unwrap();
        assert_eq!(trusted(), Ok(false));
    }

    fn answer(decision: Option<(bool, bool)>, errors: &[&str]) -> Option<TrustAnswer> {
        Some(TrustAnswer {
            decision: decision.map(|(trusted, remember)| TrustDecision { trusted, remember }),
            errors: errors
                .iter()
                .map(|e| pi_effects::extension::sidecar::TrustError {
                    path: "/x/ext.ts".into(),
                    error: (*e).into(),
                })
                .collect(),
        })
    }

    #[test]
    fn an_extensions_decision_comes_before_the_remembered_one_and_remember_stores_it_as_pi_does() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".pi/skills")).unwrap();
        let agent = tempfile::tempdir().unwrap();
        let store = agent.path().join(TRUST_FILE);
        let key = canonical(project.path()).display().to_string();
        std::fs::write(&store, "{\"/zz\": null, \"/a\": false}").unwrap();
        let run = |ask: Option<TrustAnswer>| {
            resolve(
                agent.path(),
                project.path(),
                agent.path(),
                None,
                None,
                || ask,
            )
        };
        let decided = run(answer(Some((true, false)), &["boom"]));
        assert_eq!(decided.trusted, Ok(true));
        assert_eq!(
            decided.warnings,
            ["Extension \"/x/ext.ts\" project_trust error: boom"]
        );
        assert_eq!(
            std::fs::read_to_string(&store).unwrap(),
            "{\"/zz\": null, \"/a\": false}",
            "not remembered, not written"
        );
        assert_eq!(run(answer(Some((false, true)), &[])).trusted, Ok(false));
        assert_eq!(
            std::fs::read_to_string(&store).unwrap(),
            format!(
                "{{\n  \"/a\": false,\n  {}: false,\n  \"/zz\": null\n}}\n",
                Value::String(key)
            ),
            "sorted, two-space indented, a newline at the end"
        );
        let undecided = run(answer(None, &[]));
        assert_eq!(undecided.trusted, Ok(false), "the remembered decision");
        assert_eq!(undecided.by_extension, None);
        let asked = std::cell::Cell::new(false);
        let flagged = resolve(
            agent.path(),
            project.path(),
            agent.path(),
            Some(true),
            None,
            || {
                asked.set(true);
                answer(Some((false, true)), &[])
            },
        );
        assert_eq!(flagged.trusted, Ok(true));
        assert!(!asked.get(), "asked despite --approve");
    }

    #[test]
    fn the_store_is_read_and_written_under_pis_lock_and_a_held_lock_is_waited_for_then_an_error() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".pi/prompts")).unwrap();
        let agent = tempfile::tempdir().unwrap();
        let lock = agent.path().join("trust.json.lock");
        std::fs::create_dir(&lock).unwrap();
        let held = resolve(
            agent.path(),
            project.path(),
            agent.path(),
            None,
            None,
            || answer(Some((true, true)), &[]),
        );
        assert!(
            held.trusted
                .unwrap_err()
                .contains("Lock file is already being held"),
            "written while another process held the lock"
        );
        assert!(!agent.path().join(TRUST_FILE).exists());
        std::fs::remove_dir(&lock).unwrap();
        let free = resolve(
            agent.path(),
            project.path(),
            agent.path(),
            None,
            None,
            || answer(Some((true, true)), &[]),
        );
        assert_eq!(free.trusted, Ok(true));
        assert!(agent.path().join(TRUST_FILE).exists());
        assert!(!lock.exists(), "the lock was left behind");
    }
}
