//! Project trust (Pi 1.5's `resolveProjectTrusted`, `core/project-trust.js` and
//! `core/trust-manager.js`): whether this run reads the project's own files. Untrusted, the
//! project's `.pi/settings.json` is ignored (the only project-local resource this build loads).
//! Without a terminal to ask in, an undecided project is untrusted.

use std::path::{Path, PathBuf};

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

/// Whether the project in `cwd` is trusted for this run: `--approve`/`--no-approve` first; a
/// folder with nothing that needs trust takes the remembered decision or is trusted; else the
/// decision remembered for it or its nearest parent, else the global `defaultProjectTrust`
/// setting (`always`, `never`; `ask` cannot ask here, so it is untrusted).
pub fn project_trusted(
    agent_dir: &Path,
    cwd: &Path,
    home: &Path,
    flag: Option<bool>,
    default_trust: Option<&str>,
) -> Result<bool, String> {
    if let Some(decision) = flag {
        return Ok(decision);
    }
    let remembered = remembered(&agent_dir.join(TRUST_FILE), cwd)?;
    if !needs_trust(cwd, home) {
        return Ok(remembered.unwrap_or(true));
    }
    if let Some(decision) = remembered {
        return Ok(decision);
    }
    Ok(default_trust == Some("always"))
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
/// `null` entry decides nothing. A file that does not parse is an error, in Pi's words.
fn remembered(file: &Path, cwd: &Path) -> Result<Option<bool>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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
    Ok(canonical(cwd).ancestors().find_map(|dir| {
        entries
            .iter()
            .find(|(key, _)| Path::new(key) == dir)
            .and_then(|(_, value)| value.as_bool())
    }))
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
        let trusted = |default| project_trusted(agent.path(), &project, home.path(), None, default);
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
            project_trusted(agent.path(), &project, home.path(), Some(true), None),
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
        let trusted = || project_trusted(agent.path(), project.path(), project.path(), None, None);
        assert_eq!(trusted(), Ok(true));
        let key = canonical(project.path()).display().to_string();
        std::fs::write(
            agent.path().join(TRUST_FILE),
            serde_json::json!({ key: false }).to_string(),
        )
        .unwrap();
        assert_eq!(trusted(), Ok(false));
    }
}
