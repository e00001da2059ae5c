//! The pattern entries of Pi 1.5.2's resource lists (settings `skills`/`prompts`/`extensions`,
//! a package filter's lists, a package manifest's lists): a plain glob includes, `!pattern`
//! excludes, `+path` includes an exact path back, `-path` leaves an exact path out, in that order
//! of strength. A pattern matches a file by its path relative to the base folder, its name or
//! its whole path; a `SKILL.md` also by its folder's. Globs are matched as minimatch matches
//! them (`*` stays within one path part, `**` crosses them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;

/// Pi's `isPattern`: an entry that filters rather than names a path.
pub fn is_pattern(entry: &str) -> bool {
    is_override(entry) || has_glob(entry)
}

/// Pi's `isOverridePattern`: `!`, `+` or `-` first.
pub fn is_override(entry: &str) -> bool {
    entry.starts_with(['!', '+', '-'])
}

/// Pi's `hasGlobPattern`.
pub fn has_glob(entry: &str) -> bool {
    entry.contains(['*', '?'])
}

/// A path with `/` between its parts.
fn posix(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Node's `path.relative` for paths that are both absolute: `..` parts up to the common
/// folder, then down.
pub fn relative(base: &Path, path: &Path) -> String {
    let base: Vec<_> = base.components().collect();
    let path: Vec<_> = path.components().collect();
    let common = base.iter().zip(&path).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); base.len() - common];
    parts.extend(
        path[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// Node's `path.normalize` of a pattern (`.` parts dropped, `a/..` folded), `~` expanded as
/// Pi's `normalizePath` expands it.
fn normalize(pattern: &str, home: &Path) -> String {
    let expanded = if pattern == "~" {
        posix(home)
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        posix(&home.join(rest))
    } else {
        pattern.to_owned()
    };
    let absolute = expanded.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in expanded.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    let trailing = expanded.len() > 1 && expanded.ends_with('/');
    let mut out = match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    };
    if trailing && !out.ends_with('/') {
        out.push('/');
    }
    out
}

/// minimatch's test of `text` against `pattern` (a glob that does not read is matched as text).
fn glob_match(text: &str, pattern: &str) -> bool {
    if !has_glob(pattern) && !pattern.contains(['[', '{']) {
        return text == pattern;
    }
    match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(glob) => glob.compile_matcher().is_match(text),
        Err(_) => text == pattern,
    }
}

/// The texts a file is matched by: relative to `base`, its name, its whole path; for a
/// `SKILL.md`, its folder's three too.
fn candidates(file: &Path, base: &Path) -> (Vec<String>, Vec<String>) {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let own = vec![relative(base, file), name.clone(), posix(file)];
    let folder = match file.parent() {
        Some(dir) if name == "SKILL.md" => vec![
            relative(base, dir),
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            posix(dir),
        ],
        _ => Vec::new(),
    };
    (own, folder)
}

/// Pi's `matchesAnyPattern`.
fn matches_any(file: &Path, patterns: &[&str], base: &Path, home: &Path) -> bool {
    let (own, folder) = candidates(file, base);
    patterns.iter().any(|pattern| {
        let pattern = normalize(pattern, home);
        own.iter().chain(&folder).any(|t| glob_match(t, &pattern))
    })
}

/// Pi's `matchesAnyExactPattern`: the relative or whole path (a `SKILL.md`'s folder's too)
/// equal to the pattern, a leading `./` aside.
fn matches_any_exact(file: &Path, patterns: &[&str], base: &Path, home: &Path) -> bool {
    let (own, folder) = candidates(file, base);
    patterns.iter().any(|pattern| {
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let pattern = normalize(trimmed, home);
        [&own[0], &own[2]]
            .into_iter()
            .chain(folder.first())
            .chain(folder.get(2))
            .any(|t| *t == pattern)
    })
}

/// The entries of `patterns` behind the marker `mark`, marker taken off.
fn marked(patterns: &[String], mark: char) -> Vec<&str> {
    patterns
        .iter()
        .filter_map(|p| p.strip_prefix(mark))
        .collect()
}

/// Pi's `applyPatterns`: which of `all` the patterns enable, in `all`'s order with the
/// force-included after.
pub fn apply(all: &[PathBuf], patterns: &[String], base: &Path, home: &Path) -> Vec<PathBuf> {
    let includes: Vec<&str> = patterns
        .iter()
        .filter(|p| !is_override(p))
        .map(String::as_str)
        .collect();
    let excludes = marked(patterns, '!');
    let force_in = marked(patterns, '+');
    let force_out = marked(patterns, '-');
    let mut result: Vec<PathBuf> = all
        .iter()
        .filter(|f| includes.is_empty() || matches_any(f, &includes, base, home))
        .filter(|f| excludes.is_empty() || !matches_any(f, &excludes, base, home))
        .cloned()
        .collect();
    if !force_in.is_empty() {
        for file in all {
            if !result.contains(file) && matches_any_exact(file, &force_in, base, home) {
                result.push(file.clone());
            }
        }
    }
    if !force_out.is_empty() {
        result.retain(|f| !matches_any_exact(f, &force_out, base, home));
    }
    result
}

/// Pi's `isEnabledByOverrides`: whether the `!`, `+`, `-` entries of `patterns` leave an
/// auto-discovered `file` enabled.
pub fn enabled_by_overrides(file: &Path, patterns: &[String], base: &Path, home: &Path) -> bool {
    let mut enabled = true;
    let excludes = marked(patterns, '!');
    if !excludes.is_empty() && matches_any(file, &excludes, base, home) {
        enabled = false;
    }
    let force_in = marked(patterns, '+');
    if !force_in.is_empty() && matches_any_exact(file, &force_in, base, home) {
        enabled = true;
    }
    let force_out = marked(patterns, '-');
    if !force_out.is_empty() && matches_any_exact(file, &force_out, base, home) {
        enabled = false;
    }
    enabled
}

/// Pi's `applyAutoloadDisabledPatterns`: for a package entry with `autoload: false`, the files
/// its patterns name, each with the state the last pattern naming it gives, in the order first
/// named.
pub fn autoload_delta(
    all: &[PathBuf],
    patterns: &[String],
    base: &Path,
    home: &Path,
) -> Vec<(PathBuf, bool)> {
    let mut order: Vec<PathBuf> = Vec::new();
    let mut states: BTreeMap<PathBuf, bool> = BTreeMap::new();
    for pattern in patterns {
        let target = pattern.strip_prefix(['+', '-', '!']).unwrap_or(pattern);
        let enabled = !pattern.starts_with(['-', '!']);
        let exact = pattern.starts_with(['+', '-']);
        for file in all {
            let hit = if exact {
                matches_any_exact(file, &[target], base, home)
            } else {
                matches_any(file, &[target], base, home)
            };
            if hit {
                if !states.contains_key(file) {
                    order.push(file.clone());
                }
                states.insert(file.clone(), enabled);
            }
        }
    }
    order
        .into_iter()
        .map(|f| {
            let enabled = states.get(&f).copied().unwrap_or(true);
            (f, enabled)
        })
        .collect()
}

/// Pi's `expandPackageGlob`: the paths under `root` a manifest glob names, none inside a
/// hidden folder, sorted.
pub fn expand_glob(pattern: &str, root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(root, root, pattern, 0, &mut found);
    found.sort();
    found
}

/// How deep [`expand_glob`] looks: far below any package's layout, and a bound on a tree
/// that loops.
const GLOB_DEPTH: usize = 16;

fn walk(root: &Path, dir: &Path, pattern: &str, depth: usize, found: &mut Vec<PathBuf>) {
    if depth > GLOB_DEPTH {
        return;
    }
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if glob_match(&relative(root, &path), pattern) {
            found.push(path.clone());
        }
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            walk(root, &path, pattern, depth + 1, found);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn patterns_apply_in_pis_order_of_strength() {
        let base = Path::new("/p");
        let home = Path::new("/h");
        let all = paths(&["/p/a/one.md", "/p/a/two.md", "/p/b/SKILL.md", "/p/c.md"]);
        // Includes by glob, then excludes by name, then an exact path forced back.
        assert_eq!(
            apply(
                &all,
                &strings(&["a/*.md", "!two.md", "+a/two.md"]),
                base,
                home
            ),
            paths(&["/p/a/one.md", "/p/a/two.md"])
        );
        // `*` stays in one part; a skill matches by its folder's name.
        assert_eq!(
            apply(&all, &strings(&["*.md"]), base, home),
            paths(&["/p/a/one.md", "/p/a/two.md", "/p/b/SKILL.md", "/p/c.md"])
        );
        assert_eq!(
            apply(&all, &strings(&["!b", "-./c.md"]), base, home),
            paths(&["/p/a/one.md", "/p/a/two.md"])
        );
        // A forced exclusion beats a forced inclusion.
        assert_eq!(
            apply(&all, &strings(&["!*", "+c.md", "-c.md"]), base, home),
            Vec::<PathBuf>::new()
        );
        assert!(!enabled_by_overrides(
            Path::new("/p/b/SKILL.md"),
            &strings(&["!b"]),
            base,
            home
        ));
        assert!(enabled_by_overrides(
            Path::new("/p/b/SKILL.md"),
            &strings(&["!b", "+b"]),
            base,
            home
        ));
        assert!(enabled_by_overrides(
            Path::new("/p/c.md"),
            &strings(&["*.md"]),
            base,
            home
        ));
        assert_eq!(
            autoload_delta(&all, &strings(&["c.md", "-c.md", "+a/one.md"]), base, home),
            vec![
                (PathBuf::from("/p/c.md"), false),
                (PathBuf::from("/p/a/one.md"), true)
            ]
        );
    }

    #[test]
    fn relative_paths_are_nodes() {
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/c/d")), "../c/d");
        assert_eq!(normalize("./x/../y/*.md", Path::new("/h")), "y/*.md");
        assert_eq!(normalize("~/s", Path::new("/h")), "/h/s");
    }
}
