//! Settings `packages` resolved as Pi 1.5.2 resolves what is installed (its package manager's
//! `resolve`): each settings file's entries, the project's first (read only when the project
//! is trusted, as the settings are), one per package identity (`npm:name`, `git:host/path`,
//! a local path), the project's entry winning; a local path is a file (an extension) or a
//! package folder, an npm package is looked for at its managed install path
//! (`<agent dir>/npm/node_modules/<name>`, the project's `.pi/npm/...`), a git package at
//! `<agent dir>/git/<host>/<path>` (the project's `.pi/git/...`). A package gives what its
//! entry's filter, its `pi` manifest or its conventional folders say ([`collect`]).
//!
//! Unlike Pi, nothing is installed here: a package that is not installed is reported (see
//! [`Missing`]) and left out, as Pi's offline mode leaves it out.

pub mod collect;
pub mod patterns;
mod source;
pub mod top_level;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub use collect::Kind;
use collect::{package_resources, Filter};
pub use source::Source;

use crate::settings::Listed;

/// How a resource was found: Pi's resource metadata, reported as its `sourceInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// `auto`, `local`, or the package's source as configured.
    pub source: String,
    /// `project` or `user`.
    pub scope: &'static str,
    /// `top-level` or `package`.
    pub origin: &'static str,
    pub base_dir: Option<PathBuf>,
    /// A package's changelog file.
    pub changelog: Option<PathBuf>,
}

impl Meta {
    /// Metadata of what a settings file or the conventional folders give.
    pub fn top_level(source: &str, scope: &'static str, base_dir: Option<PathBuf>) -> Meta {
        Meta {
            source: source.to_owned(),
            scope,
            origin: "top-level",
            base_dir,
            changelog: None,
        }
    }

    /// Pi's `resourcePrecedenceRank`: the project's settings entries, the project's folders,
    /// the user's entries, the user's folders, then packages.
    pub fn rank(&self) -> u8 {
        if self.origin == "package" {
            return 4;
        }
        let scope = if self.scope == "project" { 0 } else { 2 };
        scope + u8::from(self.source != "local")
    }

    /// Pi's `createSourceInfo` for the file at `path`.
    pub fn info(&self, path: &str) -> Value {
        let mut info = json!({
            "path": path,
            "source": self.source,
            "scope": self.scope,
            "origin": self.origin,
        });
        if let Some(dir) = &self.base_dir {
            info["baseDir"] = json!(dir.to_string_lossy());
        }
        if let Some(log) = &self.changelog {
            info["changelogPath"] = json!(log.to_string_lossy());
        }
        info
    }
}

/// One resource found, with whether the patterns leave it on.
#[derive(Clone, Debug)]
pub struct Resource {
    pub path: PathBuf,
    pub enabled: bool,
    pub meta: Meta,
}

/// Pi's accumulator: each kind's resources by path, the first to add a path deciding its
/// state and metadata.
#[derive(Debug, Default)]
pub struct Accumulator {
    lists: [Vec<Resource>; 3],
}

impl Accumulator {
    /// Adds `path` unless it is there already (Pi's `addResource`).
    pub fn add(&mut self, kind: Kind, path: PathBuf, meta: &Meta, enabled: bool) {
        let list = &mut self.lists[kind as usize];
        if !list.iter().any(|r| r.path == path) {
            list.push(Resource {
                path,
                enabled,
                meta: meta.clone(),
            });
        }
    }

    /// All resources of `kind`, on or off, in the order added.
    pub fn all(&self, kind: Kind) -> &[Resource] {
        &self.lists[kind as usize]
    }

    /// The enabled resources of `kind` in Pi's order (`toResolvedPaths`: by precedence rank,
    /// the order of adding within a rank).
    pub fn enabled(&self, kind: Kind) -> Vec<Resource> {
        let mut list = self.lists[kind as usize].clone();
        list.sort_by_key(|r| r.meta.rank());
        list.retain(|r| r.enabled);
        list
    }
}

/// A configured package that is not installed where Pi would have installed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The source as configured (`npm:name`, `git:host/path`, ...).
    pub source: String,
    /// The settings it is in: `project` or `user`.
    pub scope: &'static str,
    /// Where it was looked for.
    pub looked_at: PathBuf,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.scope == TEMPORARY {
            return write!(
                f,
                "Package \"{}\" (-e) is not installed: looked for it at {}. This harness \
                 installs nothing; run Pi once with `-e {}` to install it. Going on without it.",
                self.source,
                self.looked_at.display(),
                self.source,
            );
        }
        write!(
            f,
            "Package \"{}\" ({} settings) is not installed: looked for it at {}. This harness \
             installs nothing; install it with Pi's `pi install {}`{}. Going on without it.",
            self.source,
            self.scope,
            self.looked_at.display(),
            self.source,
            if self.scope == "project" { " -l" } else { "" },
        )
    }
}

/// What the packages give, and those not installed.
#[derive(Debug, Default)]
pub struct Resolved {
    /// The packages' resources, all kinds, each path once, in the order found.
    pub found: Accumulator,
    pub missing: Vec<Missing>,
}

impl Resolved {
    /// Notes a package not installed at `looked_at`, once however many entries name it.
    fn report(&mut self, source: String, scope: &'static str, looked_at: PathBuf) {
        if !self.missing.iter().any(|m| m.looked_at == looked_at) {
            self.missing.push(Missing {
                source,
                scope,
                looked_at,
            });
        }
    }
}

/// Where to look.
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    pub agent_dir: &'a Path,
    pub cwd: &'a Path,
    pub home: &'a Path,
    /// The settings files read (the project's only when it is trusted), the project's first.
    pub listed: &'a [Listed],
}

/// One package entry of a settings file.
struct Entry {
    source: String,
    filter: Option<Filter>,
    scope: &'static str,
}

impl Entry {
    fn is_delta(&self) -> bool {
        self.filter.as_ref().is_some_and(|f| f.delta)
    }
}

impl<'a> Wanted<'a> {
    /// The folder a scope's relative paths are relative to and its packages are installed
    /// under (Pi's `getBaseDirForScope`, `getNpmInstallRoot`, `getGitInstallRoot`).
    fn base_dir(&self, scope: &str) -> PathBuf {
        if scope == "project" {
            self.cwd.join(".pi")
        } else {
            self.agent_dir.to_path_buf()
        }
    }

    /// Pi's `getPackageIdentity`.
    fn identity(&self, source: &str, scope: &str) -> String {
        match Source::parse(source) {
            Source::Npm { name, .. } => format!("npm:{name}"),
            Source::Git { host, path } => format!("git:{host}/{path}"),
            Source::Local(path) => format!(
                "local:{}",
                crate::resource_files::resolve(&self.base_dir(scope), self.home, &path).display()
            ),
        }
    }

    /// The settings entries, the project's first, one per identity (Pi's `dedupePackages`:
    /// the project's wins; a project entry with `autoload: false` keeps the user's after it).
    fn entries(&self) -> Vec<Entry> {
        let mut all = Vec::new();
        for listed in self.listed {
            for value in &listed.packages {
                let (source, filter) = match value {
                    Value::String(source) => (source.clone(), None),
                    Value::Object(map) => match map.get("source").and_then(Value::as_str) {
                        Some(source) => (source.to_owned(), Some(Filter::of(map))),
                        None => continue,
                    },
                    _ => continue,
                };
                all.push(Entry {
                    source,
                    filter,
                    scope: listed.scope,
                });
            }
        }
        let mut result: Vec<Entry> = Vec::new();
        let mut seen: Vec<(String, usize)> = Vec::new();
        for entry in all {
            let identity = self.identity(&entry.source, entry.scope);
            let Some(&(_, at)) = seen.iter().find(|(id, _)| *id == identity) else {
                seen.push((identity, result.len()));
                result.push(entry);
                continue;
            };
            let existing = &result[at];
            if existing.scope == "project" && entry.scope == "user" {
                if existing.is_delta() {
                    result.push(entry);
                }
            } else if entry.scope == "project" {
                result[at] = entry;
            }
        }
        result
    }

    /// Pi's `findAutoloadDeltaBase`: the user's entry a project's `autoload: false` entry
    /// changes, whose source and scope say where the package is.
    fn delta_base(&self, entry: &Entry, all: &[Entry]) -> Option<(String, &'static str)> {
        if entry.scope != "project" || !entry.is_delta() {
            return None;
        }
        let identity = self.identity(&entry.source, entry.scope);
        all.iter()
            .find(|e| e.scope == "user" && self.identity(&e.source, "user") == identity)
            .map(|e| (e.source.clone(), "user"))
    }
}

/// The resources of the configured packages, in Pi 1.5.2's order.
pub fn resolve(wanted: &Wanted) -> Resolved {
    let mut resolved = Resolved::default();
    let entries = wanted.entries();
    for entry in &entries {
        let (source, scope) = wanted
            .delta_base(entry, &entries)
            .unwrap_or_else(|| (entry.source.clone(), entry.scope));
        let mut meta = Meta {
            source: entry.source.clone(),
            scope: entry.scope,
            origin: "package",
            base_dir: None,
            changelog: None,
        };
        let filter = entry.filter.as_ref();
        let root = match Source::parse(&source) {
            Source::Local(path) => {
                let path =
                    crate::resource_files::resolve(&wanted.base_dir(scope), wanted.home, &path);
                local(&path, &mut resolved.found, filter, &mut meta, wanted.home);
                continue;
            }
            Source::Npm { name, version } => {
                let root = wanted
                    .base_dir(scope)
                    .join("npm")
                    .join("node_modules")
                    .join(&name);
                if !source::npm_installed(&root, version.as_deref()) {
                    resolved.report(source, scope, root);
                    continue;
                }
                root
            }
            Source::Git { host, path } => {
                let root = wanted.base_dir(scope).join("git").join(host).join(path);
                if !root.exists() {
                    resolved.report(source, scope, root);
                    continue;
                }
                root
            }
        };
        meta.base_dir = Some(root.clone());
        package_resources(&root, &mut resolved.found, filter, &mut meta, wanted.home);
    }
    resolved
}

/// The scope of a package named on the command line (`-e npm:...`), which Pi 1.5.2 installs
/// for the run only.
pub const TEMPORARY: &str = "temporary";

/// Where Pi 1.5.2 keeps a `-e` package source for the run (`getTemporaryDir`:
/// `<agent dir>/tmp/extensions`, a folder per kind (and git host) whose name is the first 8 hex
/// digits of a SHA-256 of what it holds); `None` for a local path.
pub fn temporary_install(agent_dir: &Path, source: &str) -> Option<PathBuf> {
    let root = agent_dir.join("tmp").join("extensions");
    let hashed = |key: &str| pi_cassette_format::sha256_hex(key.as_bytes())[..8].to_owned();
    match Source::parse(source) {
        Source::Npm { name, .. } => Some(
            root.join("npm")
                .join(hashed("npm-"))
                .join("node_modules")
                .join(name),
        ),
        Source::Git { host, path } => {
            let prefix = format!("git-{host}");
            let key = match source::git_ref(source.trim()) {
                Some(reference) => format!("{prefix}-{path}@{reference}"),
                None => format!("{prefix}-{path}"),
            };
            Some(root.join(&prefix).join(hashed(&key)).join(path))
        }
        Source::Local(_) => None,
    }
}

/// Pi's `resolveExtensionSources` for one `-e` source naming a package: what its temporary
/// install gives, added to `acc`; `None` for a local path, the package said missing when it is
/// not installed (this harness installs nothing).
pub fn temporary(
    agent_dir: &Path,
    home: &Path,
    source: &str,
    acc: &mut Accumulator,
) -> Option<Result<(), Missing>> {
    let root = temporary_install(agent_dir, source)?;
    let installed = match Source::parse(source) {
        Source::Npm { version, .. } => source::npm_installed(&root, version.as_deref()),
        _ => root.exists(),
    };
    if !installed {
        return Some(Err(Missing {
            source: source.to_owned(),
            scope: TEMPORARY,
            looked_at: root,
        }));
    }
    let mut meta = Meta {
        source: source.to_owned(),
        scope: TEMPORARY,
        origin: "package",
        base_dir: Some(root.clone()),
        changelog: None,
    };
    package_resources(&root, acc, None, &mut meta, home);
    Some(Ok(()))
}

/// Pi's `resolveLocalExtensionSource`: a file is an extension; a folder is a package, or, when
/// it gives nothing as one, an extension folder.
fn local(
    path: &Path,
    acc: &mut Accumulator,
    filter: Option<&Filter>,
    meta: &mut Meta,
    home: &Path,
) {
    match std::fs::metadata(path) {
        Ok(file) if file.is_file() => {
            meta.base_dir = path.parent().map(Path::to_path_buf);
            acc.add(Kind::Extensions, path.to_path_buf(), meta, true);
        }
        Ok(dir) if dir.is_dir() => {
            meta.base_dir = Some(path.to_path_buf());
            if !package_resources(path, acc, filter, meta, home) {
                acc.add(Kind::Extensions, path.to_path_buf(), meta, true);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
