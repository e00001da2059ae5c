//! What a folder holds as Pi 1.5.2 reads it, for every kind of resource: a folder's entries in
//! Node's order, the ignore files a scan honours, the skill, template and extension entry files
//! found under a folder, and a configured path resolved as Pi and Node resolve it. The resource
//! discovery (`resources`), the extension discovery (`extension`) and the settings' packages
//! (`packages`) all read folders through it, so none of them reaches into another.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// A folder's entries sorted by name, as Node's `readdirSync` lists them; symbolic links
/// followed (a broken one left out).
pub(crate) fn entries(dir: &Path) -> Vec<(String, PathBuf, bool, bool)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut list: Vec<_> = read
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let meta = std::fs::metadata(&path).ok()?;
            Some((name, path, meta.is_dir(), meta.is_file()))
        })
        .collect();
    list.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    list
}

/// The ignore files a skill scan honours in each folder it enters (Pi's `IGNORE_FILE_NAMES`).
const IGNORE_FILE_NAMES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// Pi's ignore matcher of one skill scan: the rules of the ignore files of each folder entered,
/// each written relative to the scan's root (Pi's `prefixIgnorePattern`: the folder's path put
/// before the pattern, a leading `/` dropped), matched as gitignore patterns.
pub(crate) struct IgnoreRules {
    root: PathBuf,
    lines: Vec<String>,
    matcher: Gitignore,
}

impl IgnoreRules {
    /// Whether `dir` is the folder the scan started at.
    pub(crate) fn is_root(&self, dir: &Path) -> bool {
        dir == self.root
    }

    pub(crate) fn new(root: &Path) -> IgnoreRules {
        IgnoreRules {
            root: root.to_path_buf(),
            lines: Vec::new(),
            matcher: Gitignore::empty(),
        }
    }

    /// Adds the rules of `dir`'s ignore files (Pi's `addIgnoreRules`).
    pub(crate) fn add_dir(&mut self, dir: &Path) {
        let prefix = match dir.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() => format!("{}/", posix(rel)),
            _ => String::new(),
        };
        let before = self.lines.len();
        for name in IGNORE_FILE_NAMES {
            let Ok(content) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            for line in content.split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if let Some(pattern) = prefixed_pattern(line, &prefix) {
                    self.lines.push(pattern);
                }
            }
        }
        if self.lines.len() > before {
            let mut builder = GitignoreBuilder::new(&self.root);
            for line in &self.lines {
                // A line the matcher cannot read is left out, as Pi's `ignore` skips it.
                let _ = builder.add_line(None, line);
            }
            self.matcher = builder.build().unwrap_or_else(|_| Gitignore::empty());
        }
    }

    /// Whether `path` (a folder when `is_dir`) is ignored.
    pub(crate) fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        self.matcher.matched(rel, is_dir).is_ignore()
    }
}

/// A path with `/` between its parts.
fn posix(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Pi's `prefixIgnorePattern`: `None` for a blank or comment line.
fn prefixed_pattern(line: &str, prefix: &str) -> Option<String> {
    let trimmed = line.trim();
    if trimmed.is_empty() || (trimmed.starts_with('#') && !trimmed.starts_with("\\#")) {
        return None;
    }
    let (negated, pattern) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (
            false,
            line.strip_prefix('\\')
                .filter(|r| r.starts_with('!'))
                .unwrap_or(line),
        ),
    };
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let bang = if negated { "!" } else { "" };
    Some(format!("{bang}{prefix}{pattern}"))
}

/// Pi's `collectSkillEntries`: a folder holding `SKILL.md` is that one skill; otherwise its
/// `.md` files (at the root for `.pi` folders, below it for `.agents` folders) and what its
/// sub-folders hold, hidden entries, `node_modules` and what the ignore files name aside.
fn collect_skill_entries(
    dir: &Path,
    agents_mode: bool,
    rules: &mut IgnoreRules,
    out: &mut Vec<PathBuf>,
) {
    rules.add_dir(dir);
    let root = rules.is_root(dir);
    let list = entries(dir);
    if let Some((_, path, _, _)) = list
        .iter()
        .find(|(name, path, _, file)| name == "SKILL.md" && *file && !rules.ignores(path, false))
    {
        out.push(path.clone());
        return;
    }
    for (name, path, is_dir, is_file) in list {
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if is_file && name.ends_with(".md") && (root != agents_mode) {
            if !rules.ignores(&path, false) {
                out.push(path);
            }
        } else if is_dir && !rules.ignores(&path, true) {
            collect_skill_entries(&path, agents_mode, rules, out);
        }
    }
}

/// [`collect_skill_entries`] from the root `dir`.
pub(crate) fn collect_skills_under(dir: &Path, agents_mode: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect_skill_entries(dir, agents_mode, &mut IgnoreRules::new(dir), &mut files);
    files
}

/// A `--skill` / `--prompt-template` value (or a settings entry) as a path: `~` expanded,
/// relative to `cwd` (the settings file's folder), `.` and `..` resolved as Node resolves them.
pub(crate) fn resolve(cwd: &Path, home: &Path, value: &str) -> PathBuf {
    let value = value.trim();
    let expanded = if value == "~" {
        home.to_path_buf()
    } else if let Some(rest) = value.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(value)
    };
    node_resolve(cwd, &expanded)
}

/// Node's `path.resolve(base, path)`: `path` joined to `base` (unless absolute), `.` and `..`
/// taken away by the text, links aside.
pub(crate) fn node_resolve(base: &Path, path: &Path) -> PathBuf {
    let joined = base.join(path);
    let absolute = std::path::absolute(&joined).unwrap_or(joined);
    let mut resolved = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    resolved
}

/// Pi's `collectFiles` for templates: a folder's `.md` files, below it too, hidden entries,
/// `node_modules` and what the ignore files name aside.
pub(crate) fn collect_templates(dir: &Path, rules: &mut IgnoreRules, out: &mut Vec<PathBuf>) {
    rules.add_dir(dir);
    for (name, path, is_dir, is_file) in entries(dir) {
        if name.starts_with('.') || name == "node_modules" || rules.ignores(&path, is_dir) {
            continue;
        }
        if is_dir {
            collect_templates(&path, rules, out);
        } else if is_file && name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// Pi's `resolveExtensionEntries`: a folder's `package.json` `pi.extensions` that exist, else
/// its `index.ts`, else its `index.js`.
pub(crate) fn extension_entries(dir: &Path) -> Option<Vec<PathBuf>> {
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
