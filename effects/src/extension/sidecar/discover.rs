//! Where Pi 1.5.2 finds extensions (`discoverAndLoadExtensions` and the resource loader): the
//! `-e/--extension` paths first (a package source among them, `-e npm:name` or a git source,
//! giving the extensions of the copy Pi installs for the run, when it is there), then what its package manager resolves, in its order of
//! precedence: the project's settings `extensions` entries and `.pi/extensions` (only when the
//! project is trusted), the user's entries and `<agent dir>/extensions`, then those the
//! settings' `packages` give ([`crate::packages`]); each path once. A settings entry is
//! relative to its file's folder, and its pattern entries (`!`, `+`, `-`, globs) turn off and
//! back on what the others and the folders give.

use std::path::{Path, PathBuf};

use crate::packages::collect::{auto_extension_entries, Kind};
use crate::packages::{temporary, top_level, Accumulator, Missing, Resource};
use crate::resource_files::extension_entries;
use crate::settings::Listed;

/// What the discovery reads.
#[derive(Clone, Debug)]
pub struct Wanted<'a> {
    /// The agent directory (`~/.pi/agent`).
    pub agent_dir: &'a Path,
    /// The session's working directory, which `-e` paths are resolved in.
    pub cwd: &'a Path,
    /// The home folder (`~` in settings entries).
    pub home: &'a Path,
    /// Whether the project's own `.pi/extensions` and settings entries may be loaded.
    pub project_trusted: bool,
    /// `--no-extensions`: only the command line's paths are loaded.
    pub no_extensions: bool,
    /// `-e/--extension` paths.
    pub cli_paths: &'a [String],
    /// The settings files read, with their `extensions` entries.
    pub listed: &'a [Listed],
    /// What the settings' `packages` give ([`crate::packages::resolve`]).
    pub packages: &'a Accumulator,
}

/// The extension entry files to load, in Pi's order, each once.
pub fn discover(wanted: &Wanted<'_>) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut add = |path: &Path| {
        let paths = if path.is_dir() {
            extension_entries(path).unwrap_or_else(|| in_dir(path))
        } else {
            vec![path.to_path_buf()]
        };
        for path in paths {
            if !found.contains(&path) {
                found.push(path);
            }
        }
    };
    for configured in wanted.cli_paths {
        let mut package = Accumulator::default();
        match temporary(wanted.agent_dir, wanted.home, configured, &mut package) {
            None => add(&wanted.cwd.join(expand_home(configured))),
            Some(Ok(())) => {
                for resource in package.enabled(Kind::Extensions) {
                    add(&resource.path);
                }
            }
            // Said by `missing_from_command_line`.
            Some(Err(_)) => {}
        }
    }
    if !wanted.no_extensions {
        for resource in resolved(wanted) {
            add(&resource.path);
        }
    }
    found
}

/// The `-e` package sources whose copy for the run is not installed: left out by
/// [`discover`], each to be said once.
pub fn missing_from_command_line(wanted: &Wanted<'_>) -> Vec<Missing> {
    wanted
        .cli_paths
        .iter()
        .filter_map(|source| {
            temporary(
                wanted.agent_dir,
                wanted.home,
                source,
                &mut Accumulator::default(),
            )
        })
        .filter_map(Result::err)
        .collect()
}

/// What Pi's package manager resolves (all but the `-e` paths), on, in its order, each with
/// where it came from (its commands' `sourceInfo`); none with `--no-extensions`.
pub fn resolved(wanted: &Wanted<'_>) -> Vec<Resource> {
    if wanted.no_extensions {
        return Vec::new();
    }
    let kind = Kind::Extensions;
    let mut acc = top_level::seeded(wanted.packages, kind);
    let read = |scope: &'static str| {
        wanted
            .listed
            .iter()
            .filter(move |l| l.scope == scope && (scope == "user" || wanted.project_trusted))
    };
    for scope in ["project", "user"] {
        for listed in read(scope) {
            top_level::add_listed(&mut acc, kind, listed, wanted.home);
        }
    }
    let overrides = |scope: &'static str| -> Vec<String> {
        read(scope)
            .flat_map(|l| top_level::entries(l, kind).iter().cloned())
            .collect()
    };
    if wanted.project_trusted {
        let project = wanted.cwd.join(".pi");
        let files = auto_extension_entries(&project.join("extensions"));
        let scope = ("project", &overrides("project")[..]);
        top_level::add_auto(&mut acc, kind, scope, files, &project, wanted.home);
    }
    let files = auto_extension_entries(&wanted.agent_dir.join("extensions"));
    let scope = ("user", &overrides("user")[..]);
    top_level::add_auto(&mut acc, kind, scope, files, wanted.agent_dir, wanted.home);
    acc.enabled(kind)
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
            found.extend(extension_entries(&path).unwrap_or_default());
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
        let packages = Accumulator::default();
        let mut wanted = Wanted {
            agent_dir: &agent,
            cwd: &cwd,
            home: root.path(),
            project_trusted: false,
            no_extensions: false,
            cli_paths: &cli,
            listed: &[],
            packages: &packages,
        };
        assert_eq!(
            discover(&wanted),
            vec![
                cwd.join("cli.ts"),
                agent.join("extensions/a.ts"),
                agent.join("extensions/pkg/index.ts"),
            ]
        );
        wanted.project_trusted = true;
        assert_eq!(discover(&wanted)[1], cwd.join(".pi/extensions/local.ts"));
        wanted.no_extensions = true;
        assert_eq!(discover(&wanted), vec![cwd.join("cli.ts")]);
    }
}
