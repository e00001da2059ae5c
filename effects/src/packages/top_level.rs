//! What the settings files' own `extensions`, `skills` and `prompts` lists and the
//! conventional folders give, added to Pi 1.5.2's accumulator after the packages' (its
//! `resolveLocalEntries` and `addAutoDiscoveredResources`): a list's plain entries are paths
//! relative to its file's folder, its pattern entries turn off and back on what the others
//! give, and its `!`, `+`, `-` entries what the folders of its scope give.

use std::path::{Path, PathBuf};

use super::collect::{files_from_paths, Kind};
use super::patterns::{apply, enabled_by_overrides, is_pattern};
use super::{Accumulator, Meta};
use crate::settings::Listed;

/// A settings file's list of `kind`.
pub fn entries(listed: &Listed, kind: Kind) -> &[String] {
    match kind {
        Kind::Extensions => &listed.extensions,
        Kind::Skills => &listed.skills,
        Kind::Prompts => &listed.prompts,
    }
}

/// An accumulator holding the packages' resources of `kind` (Pi adds them first).
pub fn seeded(packages: &Accumulator, kind: Kind) -> Accumulator {
    let mut acc = Accumulator::default();
    for resource in packages.all(kind) {
        acc.add(
            kind,
            resource.path.clone(),
            &resource.meta,
            resource.enabled,
        );
    }
    acc
}

/// Pi's `resolveLocalEntries`: the files a settings file's plain entries give (a folder's, a
/// file itself), each on or off as the file's pattern entries say.
pub fn add_listed(acc: &mut Accumulator, kind: Kind, listed: &Listed, home: &Path) {
    let list = entries(listed, kind);
    if list.is_empty() {
        return;
    }
    let (patterns, plain): (Vec<String>, Vec<String>) =
        list.iter().cloned().partition(|e| is_pattern(e));
    let paths: Vec<PathBuf> = plain
        .iter()
        .map(|p| crate::resource_files::resolve(&listed.base_dir, home, p))
        .collect();
    let all = files_from_paths(&paths, kind);
    let enabled = apply(&all, &patterns, &listed.base_dir, home);
    let meta = Meta::top_level("local", listed.scope, None);
    for file in all {
        let on = enabled.contains(&file);
        acc.add(kind, file, &meta, on);
    }
}

/// Adds the auto-discovered `files` of `scope`, each on unless the `!`, `+`, `-` entries of
/// `overrides` (that scope's list of `kind`) turn it off (Pi's `isEnabledByOverrides`,
/// relative to `base`).
pub fn add_auto(
    acc: &mut Accumulator,
    kind: Kind,
    (scope, overrides): (&'static str, &[String]),
    files: Vec<PathBuf>,
    base: &Path,
    home: &Path,
) {
    let meta = Meta::top_level("auto", scope, Some(base.to_path_buf()));
    for file in files {
        let on = enabled_by_overrides(&file, overrides, base, home);
        acc.add(kind, file, &meta, on);
    }
}
