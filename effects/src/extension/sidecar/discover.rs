//! Where Pi 1.5.2 finds extensions (`discoverAndLoadExtensions` and the resource loader): the
//! project's `.pi/extensions` (only when the project is trusted), then the agent directory's
//! `extensions`, then the paths configured (`-e/--extension`, settings `extensions`), then
//! those the settings' `packages` give ([`crate::packages`]), each path once, in that order.

use std::path::{Path, PathBuf};

/// What the discovery reads.
#[derive(Clone, Debug)]
pub struct Wanted<'a> {
    /// The agent directory (`~/.pi/agent`).
    pub agent_dir: &'a Path,
    /// The session's working directory, which relative configured paths are resolved in.
    pub cwd: &'a Path,
    /// Whether the project's own `.pi/extensions` may be loaded.
    pub project_trusted: bool,
    /// `--no-extensions`: only the command line's paths are loaded.
    pub no_extensions: bool,
    /// `-e/--extension` paths.
    pub cli_paths: &'a [String],
    /// The settings' `extensions` paths.
    pub settings_paths: &'a [String],
    /// The extensions the settings' `packages` give, on, in Pi's order (a file, or a local
    /// package folder that is its own extension).
    pub package_paths: &'a [PathBuf],
}

/// The extension entry files to load, in Pi's order, each once.
pub fn discover(wanted: &Wanted<'_>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |paths: Vec<PathBuf>| {
        for path in paths {
            if !found.contains(&path) {
                found.push(path);
            }
        }
    };
    if !wanted.no_extensions {
        if wanted.project_trusted {
            add(in_dir(&wanted.cwd.join(".pi").join("extensions")));
        }
        add(in_dir(&wanted.agent_dir.join("extensions")));
    }
    let (settings, packages): (&[String], &[PathBuf]) = if wanted.no_extensions {
        (&[], &[])
    } else {
        (wanted.settings_paths, wanted.package_paths)
    };
    let configured = wanted
        .cli_paths
        .iter()
        .chain(settings)
        .map(|c| wanted.cwd.join(expand_home(c)));
    for path in configured.chain(packages.iter().cloned()) {
        if path.is_dir() {
            match entries(&path) {
                Some(entries) => add(entries),
                None => add(in_dir(&path)),
            }
        } else {
            add(vec![path]);
        }
    }
    found
}

/// A configured path with a leading `~/` taken as the home folder, as Pi reads it.
pub fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

fn is_extension_file(name: &str) -> bool {
    name.ends_with(".ts") || name.ends_with(".js")
}

/// Pi's `resolveExtensionEntries`: a folder's `package.json` `pi.extensions` that exist, else
/// its `index.ts`, else its `index.js`.
pub(crate) fn entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let manifest = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    if let Some(list) = manifest
        .as_ref()
        .and_then(|m| m["pi"]["extensions"].as_array())
    {
        let declared: Vec<PathBuf> = list
            .iter()
            .filter_map(|p| p.as_str())
            .map(|p| dir.join(p))
            .filter(|p| p.exists())
            .collect();
        if !declared.is_empty() {
            return Some(declared);
        }
    }
    ["index.ts", "index.js"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.exists())
        .map(|p| vec![p])
}

/// Pi's `discoverExtensionsInDir`: the folder's `.ts`/`.js` files and its subfolders' entries,
/// one level deep, in the order the folder lists them.
fn in_dir(dir: &Path) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in listing.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_file() && is_extension_file(&name) {
            found.push(path);
        } else if path.is_dir() {
            found.extend(entries(&path).unwrap_or_default());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_untrusted_projects_extensions_are_not_found() {
        let root = tempfile::tempdir().unwrap();
        let (agent, cwd) = (root.path().join("agent"), root.path().join("cwd"));
        std::fs::create_dir_all(agent.join("extensions/pkg")).unwrap();
        std::fs::create_dir_all(cwd.join(".pi/extensions")).unwrap();
        std::fs::write(agent.join("extensions/a.ts"), "").unwrap();
        std::fs::write(agent.join("extensions/notes.md"), "").unwrap();
        std::fs::write(agent.join("extensions/pkg/index.ts"), "").unwrap();
        std::fs::write(cwd.join(".pi/extensions/local.ts"), "").unwrap();
        std::fs::write(cwd.join("cli.ts"), "").unwrap();
        let cli = vec!["cli.ts".to_owned()];
        let mut wanted = Wanted {
            agent_dir: &agent,
            cwd: &cwd,
            project_trusted: false,
            no_extensions: false,
            cli_paths: &cli,
            settings_paths: &[],
            package_paths: &[],
        };
        let mut untrusted = discover(&wanted);
        untrusted[..2].sort();
        assert_eq!(
            untrusted,
            vec![
                agent.join("extensions/a.ts"),
                agent.join("extensions/pkg/index.ts"),
                cwd.join("cli.ts")
            ]
        );
        wanted.project_trusted = true;
        assert_eq!(discover(&wanted)[0], cwd.join(".pi/extensions/local.ts"));
        wanted.no_extensions = true;
        assert_eq!(discover(&wanted), vec![cwd.join("cli.ts")]);
    }
}
