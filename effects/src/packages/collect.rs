//! A package's resources as Pi 1.5.2's package manager collects them
//! (`collectPackageResources`): the filter of the settings entry when it is an object, else the
//! `pi` manifest of its `package.json` when that lists resources, else its conventional
//! `extensions/`, `skills/`, `prompts/` (and `themes/`) folders.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::patterns::{self, has_glob, is_override};
use super::{Accumulator, Meta};
use crate::resource_files::extension_entries;
use crate::resource_files::{
    collect_skills_under, collect_templates, entries, node_resolve, IgnoreRules,
};

/// The kinds of resource a package gives that this harness loads (themes are only looked at
/// for whether a package lists resources at all); as a number, its place in [`Kind::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Extensions,
    Skills,
    Prompts,
}

impl Kind {
    /// The three, in Pi's order.
    pub const ALL: [Kind; 3] = [Kind::Extensions, Kind::Skills, Kind::Prompts];

    /// The manifest field and conventional folder name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Extensions => "extensions",
            Kind::Skills => "skills",
            Kind::Prompts => "prompts",
        }
    }
}

/// Pi's `collectAutoExtensionEntries`: the folder's own entry (its manifest's extensions, its
/// `index.ts` or `index.js`), else its `.ts`/`.js` files and its sub-folders' entries, hidden
/// ones, `node_modules` and what its ignore files name aside.
pub fn auto_extension_entries(dir: &Path) -> Vec<PathBuf> {
    if !dir.exists() {
        return Vec::new();
    }
    if let Some(own) = extension_entries(dir) {
        return own;
    }
    let mut rules = IgnoreRules::new(dir);
    rules.add_dir(dir);
    let mut found = Vec::new();
    for (name, path, is_dir, is_file) in entries(dir) {
        if name.starts_with('.') || name == "node_modules" || rules.ignores(&path, is_dir) {
            continue;
        }
        if is_file && (name.ends_with(".ts") || name.ends_with(".js")) {
            found.push(path);
        } else if is_dir {
            found.extend(extension_entries(&path).unwrap_or_default());
        }
    }
    found
}

/// Pi's `collectResourceFiles`: what a folder holds of `kind`.
pub fn resource_files(dir: &Path, kind: Kind) -> Vec<PathBuf> {
    match kind {
        Kind::Skills => collect_skills_under(dir, false),
        Kind::Extensions => auto_extension_entries(dir),
        Kind::Prompts => {
            let mut files = Vec::new();
            collect_templates(dir, &mut IgnoreRules::new(dir), &mut files);
            files
        }
    }
}

/// Pi's `collectFilesFromPaths`: a file itself, a folder's files of `kind`; what does not exist
/// is left out.
pub fn files_from_paths(paths: &[PathBuf], kind: Kind) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => files.push(path.clone()),
            Ok(meta) if meta.is_dir() => files.extend(resource_files(path, kind)),
            _ => {}
        }
    }
    files
}

/// Pi's `readPiManifest`: the `pi` object of a `package.json`, its lists that hold only
/// strings.
#[derive(Debug, Default)]
pub struct Manifest {
    extensions: Option<Vec<String>>,
    skills: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    themes: bool,
    changelog: Option<String>,
}

impl Manifest {
    /// The manifest in `root`'s `package.json`, `None` when there is none.
    pub fn read(root: &Path) -> Option<Manifest> {
        let text = std::fs::read_to_string(root.join("package.json")).ok()?;
        let value: Value = serde_json::from_str(text.trim_start_matches('\u{feff}')).ok()?;
        let pi = value.get("pi")?.as_object()?;
        let list = |field: &str| -> Option<Vec<String>> {
            pi.get(field)?
                .as_array()?
                .iter()
                .map(|e| e.as_str().map(str::to_owned))
                .collect()
        };
        Some(Manifest {
            extensions: list("extensions"),
            skills: list("skills"),
            prompts: list("prompts"),
            themes: list("themes").is_some(),
            changelog: pi
                .get("changelogPath")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The list of `kind`, when given.
    pub fn list(&self, kind: Kind) -> Option<&[String]> {
        match kind {
            Kind::Extensions => self.extensions.as_deref(),
            Kind::Skills => self.skills.as_deref(),
            Kind::Prompts => self.prompts.as_deref(),
        }
    }

    /// Pi's `hasManifestResourceFields`: whether it lists any resource (a `pi` object of only
    /// metadata leaves the folders to be found).
    fn lists_resources(&self) -> bool {
        self.themes || Kind::ALL.iter().any(|k| self.list(*k).is_some())
    }
}

/// Pi's `resolvePackageChangelogPath`: the manifest's `changelogPath` (else `CHANGELOG.md`)
/// when it is a file inside the package.
fn changelog(root: &Path, manifest: Option<&Manifest>) -> Option<PathBuf> {
    let named = manifest
        .and_then(|m| m.changelog.as_deref())
        .unwrap_or("CHANGELOG.md");
    if named.is_empty() {
        return None;
    }
    let path = node_resolve(root, Path::new(named));
    let real_root = std::fs::canonicalize(root).ok()?;
    let real = std::fs::canonicalize(&path).ok()?;
    (real != real_root && real.starts_with(&real_root) && real.is_file()).then_some(path)
}

/// A settings entry's object form: the lists given for each kind, and `autoload`.
#[derive(Debug, Default)]
pub struct Filter {
    lists: [Option<Vec<String>>; 3],
    /// `autoload: false`: the lists change the user's entry of the same package.
    pub delta: bool,
}

impl Filter {
    /// The filter of an object entry.
    pub fn of(entry: &serde_json::Map<String, Value>) -> Filter {
        let list = |kind: Kind| -> Option<Vec<String>> {
            entry
                .get(kind.name())?
                .as_array()?
                .iter()
                .map(|e| e.as_str().map(str::to_owned))
                .collect()
        };
        Filter {
            lists: Kind::ALL.map(list),
            delta: entry.get("autoload") == Some(&Value::Bool(false)),
        }
    }

    fn list(&self, kind: Kind) -> Option<&[String]> {
        self.lists[kind as usize].as_deref()
    }
}

/// Pi's `collectPackageResources`: adds what the package at `root` gives to `acc`; whether it
/// gave anything the way a package does (a filter, a manifest or a conventional folder).
pub fn package_resources(
    root: &Path,
    acc: &mut Accumulator,
    filter: Option<&Filter>,
    meta: &mut Meta,
    home: &Path,
) -> bool {
    let manifest = Manifest::read(root);
    meta.changelog = changelog(root, manifest.as_ref());
    if let Some(filter) = filter {
        for kind in Kind::ALL {
            if filter.delta {
                let patterns = filter.list(kind).unwrap_or_default();
                if patterns.is_empty() {
                    continue;
                }
                let all = manifest_files(root, manifest.as_ref(), kind, home);
                for (file, enabled) in patterns::autoload_delta(&all, patterns, root, home) {
                    acc.add(kind, file, meta, enabled);
                }
            } else if let Some(patterns) = filter.list(kind) {
                let all = manifest_files(root, manifest.as_ref(), kind, home);
                // An empty list turns all of the kind off.
                let enabled = if patterns.is_empty() {
                    Vec::new()
                } else {
                    patterns::apply(&all, patterns, root, home)
                };
                for file in all {
                    let on = enabled.contains(&file);
                    acc.add(kind, file, meta, on);
                }
            } else {
                default_resources(root, manifest.as_ref(), kind, acc, meta, home);
            }
        }
        return true;
    }
    if let Some(manifest) = manifest.as_ref().filter(|m| m.lists_resources()) {
        for kind in Kind::ALL {
            if let Some(list) = manifest.list(kind) {
                manifest_entries(list, root, kind, acc, meta, home);
            }
        }
        return true;
    }
    let mut any = false;
    for kind in Kind::ALL {
        let dir = root.join(kind.name());
        if dir.exists() {
            for file in resource_files(&dir, kind) {
                acc.add(kind, file, meta, true);
            }
            any = true;
        }
    }
    any || root.join("themes").exists()
}

/// Pi's `collectDefaultResources`: the manifest's list of `kind`, else its folder.
fn default_resources(
    root: &Path,
    manifest: Option<&Manifest>,
    kind: Kind,
    acc: &mut Accumulator,
    meta: &Meta,
    home: &Path,
) {
    if let Some(list) = manifest.and_then(|m| m.list(kind)) {
        manifest_entries(list, root, kind, acc, meta, home);
        return;
    }
    let dir = root.join(kind.name());
    if dir.exists() {
        for file in resource_files(&dir, kind) {
            acc.add(kind, file, meta, true);
        }
    }
}

/// Pi's `addManifestEntries`: the files a manifest list names that its own patterns leave on.
fn manifest_entries(
    list: &[String],
    root: &Path,
    kind: Kind,
    acc: &mut Accumulator,
    meta: &Meta,
    home: &Path,
) {
    let all = files_of_manifest_list(list, root, kind);
    let overrides: Vec<String> = list.iter().filter(|e| is_override(e)).cloned().collect();
    let enabled = patterns::apply(&all, &overrides, root, home);
    for file in all {
        if enabled.contains(&file) {
            acc.add(kind, file, meta, true);
        }
    }
}

/// Pi's `collectManifestFiles`: the files of `kind` a filter chooses from, the manifest's
/// patterns applied.
fn manifest_files(
    root: &Path,
    manifest: Option<&Manifest>,
    kind: Kind,
    home: &Path,
) -> Vec<PathBuf> {
    match manifest
        .and_then(|m| m.list(kind))
        .filter(|l| !l.is_empty())
    {
        Some(list) => {
            let all = files_of_manifest_list(list, root, kind);
            let overrides: Vec<String> = list.iter().filter(|e| is_override(e)).cloned().collect();
            if overrides.is_empty() {
                all
            } else {
                patterns::apply(&all, &overrides, root, home)
            }
        }
        None => {
            let dir = root.join(kind.name());
            if dir.exists() {
                resource_files(&dir, kind)
            } else {
                Vec::new()
            }
        }
    }
}

/// Pi's `collectFilesFromManifestEntries`: each path the list names (a glob expanded inside
/// the package), as files of `kind`.
fn files_of_manifest_list(list: &[String], root: &Path, kind: Kind) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = list
        .iter()
        .filter(|e| !is_override(e))
        .flat_map(|entry| {
            if has_glob(entry) {
                patterns::expand_glob(entry, root)
            } else {
                vec![node_resolve(root, Path::new(entry))]
            }
        })
        .collect();
    files_from_paths(&paths, kind)
}
