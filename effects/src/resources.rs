//! Finding the skills and prompt templates a run loads, where Pi 1.5.2 finds them (its package
//! manager's auto-discovery and `loadSkills` / `loadPromptTemplates`): when the project is
//! trusted, the paths its `.pi/settings.json` lists under `skills` and its `.pi/skills` and
//! `.agents/skills` folders (from `cwd` up to the git root), then the paths the agent dir's
//! settings list, `<agent dir>/skills` and `~/.agents/skills`, then what the settings'
//! `packages` give, then each `--skill` path; for templates likewise with `prompts` entries and
//! the `.pi/prompts` and `<agent dir>/prompts` folders, then each `--prompt-template` path. A
//! settings entry is relative to its file's folder; its pattern entries (`!`, `+`, `-`, globs)
//! turn off or back on what the others and the folders give, as Pi 1.5.2 applies them
//! ([`crate::packages::patterns`]). `--no-skills` and `--no-prompt-templates` keep only the paths
//! given. A skill folder's `.gitignore`, `.ignore` and `.fdignore` leave out what they name
//! below it. The first skill or template of a name wins. Reading and checking a file is the
//! core's ([`pi_core::resources`]); Pi shows the warnings only in its interactive mode, so
//! print and RPC runs drop them as it does.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pi_core::agent::hooks::DiscoveredResources;
use pi_core::resources::skills::{load_skill, LoadedSkill};
use pi_core::resources::templates::{load_template, PromptTemplate};
use pi_core::resources::Resources;
use serde_json::Value;

use crate::packages::collect::Kind;
use crate::packages::{top_level, Accumulator, Meta};
use crate::resource_files::{collect_skills_under, entries, resolve, IgnoreRules};
use crate::settings::Listed;

/// Where to look: the binary's command line (`--skill`, `--no-skills`, ...) or an SDK
/// program's builder.
#[derive(Debug)]
pub struct Wanted<'a> {
    /// Pi's agent directory (`skills/`, `prompts/` under it).
    pub agent_dir: &'a Path,
    /// Where the project's `.pi/` and `.agents/` folders are looked for, up to the git root.
    pub cwd: &'a Path,
    /// The home directory (`~/.agents/skills`, `~` in given paths).
    pub home: &'a Path,
    /// Whether the project's own folders are read (an untrusted project's are not).
    pub project_trusted: bool,
    /// Only the skills of `skill_paths` (`--no-skills`).
    pub no_skills: bool,
    /// Skill files or folders given explicitly (`--skill`).
    pub skill_paths: &'a [String],
    /// Only the templates of `prompt_template_paths` (`--no-prompt-templates`).
    pub no_prompt_templates: bool,
    /// Template files or folders given explicitly (`--prompt-template`).
    pub prompt_template_paths: &'a [String],
    /// The settings files' `skills` and `prompts` entries (the project's read only when
    /// `project_trusted`).
    pub listed: &'a [Listed],
    /// What the settings' `packages` give ([`crate::packages::resolve`]).
    pub packages: &'a Accumulator,
}

pub(crate) fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The skills and templates `wanted` names.
pub fn discover(wanted: &Wanted) -> Resources {
    Resources {
        skills: skills(wanted),
        templates: templates(wanted),
        ..Resources::default()
    }
}

/// `.agents/skills` in `cwd` and each parent up to the git repository's root (else the
/// filesystem's root), the user's own aside.
fn ancestor_agents_dirs(cwd: &Path, home: &Path) -> Vec<PathBuf> {
    let users = home.join(".agents").join("skills");
    let git_root = cwd.ancestors().find(|dir| dir.join(".git").exists());
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.join(".agents").join("skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    dirs.retain(|dir| dir != &users);
    dirs
}

/// What loading skills gathers: the skills by name, and the files already loaded.
#[derive(Default)]
struct Skills {
    list: Vec<LoadedSkill>,
    files: BTreeSet<PathBuf>,
}

impl Skills {
    /// Reads `path` as a skill; the first of a name wins, a file seen before (through a link)
    /// is skipped.
    fn add_file(&mut self, path: &Path, info: &dyn Fn(&str, &Path) -> Value) {
        let Ok(content) = std::fs::read_to_string(path) else {
            return;
        };
        let path_text = text(path);
        let (Some(mut skill), _) = load_skill(&path_text, &content) else {
            return;
        };
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if self.files.contains(&real) || self.list.iter().any(|s| s.skill.name == skill.skill.name)
        {
            return;
        }
        self.files.insert(real);
        skill.source_info = info(&path_text, Path::new(&skill.base_dir));
        self.list.push(skill);
    }

    /// Pi's `loadSkillsFromDirInternal`: the folder's `SKILL.md` alone, else its `.md` files
    /// (at the root only) and its sub-folders', what the ignore files name aside.
    fn add_dir(
        &mut self,
        dir: &Path,
        rules: &mut IgnoreRules,
        info: &dyn Fn(&str, &Path) -> Value,
    ) {
        rules.add_dir(dir);
        let root = rules.is_root(dir);
        let list = entries(dir);
        if let Some((_, path, _, _)) = list.iter().find(|(name, path, _, file)| {
            name == "SKILL.md" && *file && !rules.ignores(path, false)
        }) {
            self.add_file(path, info);
            return;
        }
        for (name, path, is_dir, is_file) in list {
            if name.starts_with('.') || name == "node_modules" || rules.ignores(&path, is_dir) {
                continue;
            }
            if is_dir {
                self.add_dir(&path, rules, info);
            } else if is_file && root && name.ends_with(".md") {
                self.add_file(&path, info);
            }
        }
    }
}

/// The settings files of `scope` that `wanted` reads.
fn listed<'a>(wanted: &'a Wanted, scope: &str) -> impl Iterator<Item = &'a Listed> + 'a {
    let read = scope == "user" || wanted.project_trusted;
    let scope = scope.to_owned();
    wanted
        .listed
        .iter()
        .filter(move |listed| read && listed.scope == scope)
}

/// Adds the auto-discovered `files` of `scope` (see [`top_level::add_auto`]).
fn add_auto(
    wanted: &Wanted,
    kind: Kind,
    scope: &'static str,
    files: Vec<PathBuf>,
    base: &Path,
    acc: &mut Accumulator,
) {
    let overrides: Vec<String> = listed(wanted, scope)
        .flat_map(|l| top_level::entries(l, kind).iter().cloned())
        .collect();
    top_level::add_auto(acc, kind, (scope, &overrides), files, base, wanted.home);
}

/// The resources of `kind` Pi's package manager resolves, on, in its order: the packages'
/// added first (a path they give keeps their state), then the settings entries, then the
/// folders (`auto`); sorted by precedence.
fn resolved(
    wanted: &Wanted,
    kind: Kind,
    auto: impl FnOnce(&mut Accumulator),
) -> Vec<(PathBuf, Value)> {
    let mut acc = top_level::seeded(wanted.packages, kind);
    for scope in ["project", "user"] {
        for file in listed(wanted, scope) {
            top_level::add_listed(&mut acc, kind, file, wanted.home);
        }
    }
    auto(&mut acc);
    acc.enabled(kind)
        .into_iter()
        .map(|r| {
            let info = r.meta.info(&text(&r.path));
            (r.path, info)
        })
        .collect()
}

/// Skills in Pi 1.5.2's order: the project's settings entries and folders (when trusted), the
/// user's settings entries and folders, the packages', then `--skill` paths; the first of a
/// name wins.
fn skills(wanted: &Wanted) -> Vec<LoadedSkill> {
    let mut found: Vec<(PathBuf, Value)> = Vec::new();
    if !wanted.no_skills {
        found = resolved(wanted, Kind::Skills, |acc| {
            if wanted.project_trusted {
                let project = wanted.cwd.join(".pi");
                let files = collect_skills_under(&project.join("skills"), false);
                add_auto(wanted, Kind::Skills, "project", files, &project, acc);
                for dir in ancestor_agents_dirs(wanted.cwd, wanted.home) {
                    let files = collect_skills_under(&dir, true);
                    let base = dir.parent().map(Path::to_path_buf).unwrap_or_default();
                    add_auto(wanted, Kind::Skills, "project", files, &base, acc);
                }
            }
            let files = collect_skills_under(&wanted.agent_dir.join("skills"), false);
            add_auto(wanted, Kind::Skills, "user", files, wanted.agent_dir, acc);
            let users = wanted.home.join(".agents");
            let files = collect_skills_under(&users.join("skills"), true);
            add_auto(wanted, Kind::Skills, "user", files, &users, acc);
        });
    }
    let mut skills = Skills::default();
    for (file, info) in &found {
        skills.add_file(file, &|_, _| info.clone());
    }
    let user_dir = wanted.agent_dir.join("skills");
    let project_dir = wanted.cwd.join(".pi").join("skills");
    for value in wanted.skill_paths {
        let path = resolve(wanted.cwd, wanted.home, value);
        let scope = if path.starts_with(&user_dir) {
            "user"
        } else if path.starts_with(&project_dir) {
            "project"
        } else {
            "temporary"
        };
        let info = |file: &str, base: &Path| {
            Meta::top_level("local", scope, Some(base.to_path_buf())).info(file)
        };
        skills.add_given(&path, &info);
    }
    skills.list
}

impl Skills {
    /// A path given explicitly (`--skill`, an extension's): a folder as Pi's
    /// `loadSkillsFromDir` reads it, else a markdown file.
    fn add_given(&mut self, path: &Path, info: &dyn Fn(&str, &Path) -> Value) {
        if path.is_dir() {
            self.add_dir(path, &mut IgnoreRules::new(path), info);
        } else if path.is_file() && text(path).ends_with(".md") {
            self.add_file(path, info);
        }
    }
}

/// A folder's `.md` files, or the file itself when it is one (`--prompt-template` and an
/// extension's prompt paths).
fn given_templates(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        entries(path)
            .into_iter()
            .filter(|(name, _, _, is_file)| *is_file && name.ends_with(".md"))
            .map(|(_, file, _, _)| file)
            .collect()
    } else if path.is_file() && text(path).ends_with(".md") {
        vec![path.to_path_buf()]
    } else {
        Vec::new()
    }
}

/// Pi's `getExtensionSourceLabel` and the base folder of what `extension` (its path) gives:
/// `extension:<file stem>` and the extension's folder, or for a name that is no path (`<...>`,
/// a Rust extension's) the name without angle brackets and no folder.
fn extension_meta(extension: &str) -> Meta {
    let synthetic = extension.starts_with('<') || extension.starts_with("builtin:");
    let path = Path::new(extension);
    if synthetic || !path.is_absolute() {
        let name = extension.replace(['<', '>'], "");
        return Meta::top_level(&format!("extension:{name}"), "temporary", None);
    }
    let base = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let base = base.unwrap_or_default();
    let stem = base
        .strip_suffix(".ts")
        .or_else(|| base.strip_suffix(".js"))
        .unwrap_or(&base);
    Meta::top_level(
        &format!("extension:{stem}"),
        "temporary",
        path.parent().map(Path::to_path_buf),
    )
}

/// Loads what the `resources_discover` handlers named (Pi's `extendResources`): each path
/// resolved from `cwd`, read as `--skill` and `--prompt-template` paths are, each skill and
/// template with its extension's `sourceInfo`. The first of a name among these wins; the
/// session puts them after its own, whose names win.
pub fn load_discovered(cwd: &Path, home: &Path, found: &mut DiscoveredResources) {
    let mut skills = Skills::default();
    for given in &found.skill_paths {
        let meta = extension_meta(&given.extension);
        let info = |file: &str, _: &Path| meta.info(file);
        skills.add_given(&resolve(cwd, home, &given.path), &info);
    }
    found.skills = skills.list;
    let mut templates: Vec<PromptTemplate> = Vec::new();
    for given in &found.prompt_paths {
        let meta = extension_meta(&given.extension);
        for file in given_templates(&resolve(cwd, home, &given.path)) {
            let Ok(content) = std::fs::read_to_string(&file) else {
                continue;
            };
            let Ok(mut template) = load_template(&text(&file), &content) else {
                continue;
            };
            if templates.iter().any(|t| t.name == template.name) {
                continue;
            }
            template.source_info = meta.info(&text(&file));
            templates.push(template);
        }
    }
    found.templates = templates;
}

/// Pi's `collectAutoPromptEntries`: a folder's `.md` files, hidden ones and `node_modules`
/// aside.
fn prompt_entries(dir: &Path) -> Vec<PathBuf> {
    entries(dir)
        .into_iter()
        .filter(|(name, _, _, file)| *file && !name.starts_with('.') && name.ends_with(".md"))
        .map(|(_, path, _, _)| path)
        .collect()
}

/// Templates in Pi 1.5.2's order: the project's settings entries and folder (when trusted),
/// the user's settings entries and folder, the packages', then `--prompt-template` paths; the
/// first of a name wins.
fn templates(wanted: &Wanted) -> Vec<PromptTemplate> {
    let mut found: Vec<(PathBuf, Value)> = Vec::new();
    let project = wanted.cwd.join(".pi");
    if !wanted.no_prompt_templates {
        found = resolved(wanted, Kind::Prompts, |acc| {
            if wanted.project_trusted {
                let files = prompt_entries(&project.join("prompts"));
                add_auto(wanted, Kind::Prompts, "project", files, &project, acc);
            }
            let files = prompt_entries(&wanted.agent_dir.join("prompts"));
            add_auto(wanted, Kind::Prompts, "user", files, wanted.agent_dir, acc);
        });
    }
    let global_dir = wanted.agent_dir.join("prompts");
    let project_dir = project.join("prompts");
    let local = |file: &Path, base: PathBuf| {
        let (scope, base) = if file.starts_with(&global_dir) {
            ("user", global_dir.clone())
        } else if file.starts_with(&project_dir) {
            ("project", project_dir.clone())
        } else {
            ("temporary", base)
        };
        Meta::top_level("local", scope, Some(base)).info(&text(file))
    };
    for value in wanted.prompt_template_paths {
        let path = resolve(wanted.cwd, wanted.home, value);
        let base = match path.is_dir() {
            true => path.clone(),
            false => path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        for file in given_templates(&path) {
            let info = local(&file, base.clone());
            found.push((file, info));
        }
    }
    let mut templates: Vec<PromptTemplate> = Vec::new();
    for (file, info) in found {
        let Ok(content) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(mut template) = load_template(&text(&file), &content) else {
            continue;
        };
        if templates.iter().any(|t| t.name == template.name) {
            continue;
        }
        template.source_info = info;
        templates.push(template);
    }
    templates
}
