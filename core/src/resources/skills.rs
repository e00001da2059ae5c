//! Skills as Pi 1.5.2 reads them (`core/skills.js`): a markdown file whose frontmatter names it
//! and says what it is for, checked against the Agent Skills rules with Pi's warnings, and the
//! `/skill:name args` expansion of a prompt (`AgentSession._expandSkillCommand`). Finding the
//! files is the caller's; these functions take what was read.

use super::frontmatter::{js_trim, parse_frontmatter, strip_frontmatter, FrontmatterError};

/// A skill the model may load with the read tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub file_path: String,
    /// Hidden from the prompt (only invocable explicitly).
    pub disable_model_invocation: bool,
}

/// The longest name the rules allow.
const MAX_NAME_LENGTH: usize = 64;
/// The longest description the rules allow.
const MAX_DESCRIPTION_LENGTH: usize = 1024;
/// What a prompt starts with to expand a skill.
pub const SKILL_COMMAND_PREFIX: &str = "/skill:";

/// A skill file read, and where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadedSkill {
    #[serde(flatten)]
    pub skill: Skill,
    /// The folder holding the file, which the skill's relative paths start from.
    pub base_dir: String,
    /// The file as read when the session started, which `/skill:` expands to (Pi reads the
    /// file again at each expansion; a recording holds what was read, so its replay expands
    /// the same text on any machine).
    pub content: String,
    /// Where the skill came from, as Pi's `get_commands` reports it (`sourceInfo`); set by
    /// the caller that found the file.
    #[serde(default)]
    pub source_info: serde_json::Value,
}

/// What loading a skill file had to say (Pi's `{ type: "warning", message, path }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub message: String,
    pub path: String,
}

/// `path`'s last component and the folder before it, for `/`-separated paths.
fn split_path(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => (".", path),
    }
}

/// Pi's `validateName`: each rule the name breaks.
pub fn validate_name(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let length = name.encode_utf16().count();
    if length > MAX_NAME_LENGTH {
        errors.push(format!(
            "name exceeds {MAX_NAME_LENGTH} characters ({length})"
        ));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        errors.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".into(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("name must not start or end with a hyphen".into());
    }
    if name.contains("--") {
        errors.push("name must not contain consecutive hyphens".into());
    }
    errors
}

/// Reads the skill in `content`, the file at `path` (`loadSkillFromFile`): the frontmatter's
/// `name` (else the folder's name), its `description` (required: without one there is no
/// skill), and `disable-model-invocation: true` hiding it from the system prompt. A file not
/// named `SKILL.md` without a description is not a skill and draws no warning, nor does one
/// whose frontmatter is not YAML.
pub fn load_skill(path: &str, content: &str) -> (Option<LoadedSkill>, Vec<Warning>) {
    let (dir, file_name) = split_path(path);
    let declared = file_name == "SKILL.md";
    let warn = |message: String| Warning {
        message,
        path: path.to_owned(),
    };
    let frontmatter = match parse_frontmatter(content) {
        Ok(parsed) => parsed,
        Err(error) if declared => return (None, vec![warn(error.to_string())]),
        Err(_) => return (None, Vec::new()),
    };
    let description = frontmatter.string("description");
    let has_description = description.is_some_and(|d| !js_trim(d).is_empty());
    if !declared && !has_description {
        return (None, Vec::new());
    }
    let mut warnings = Vec::new();
    match description {
        Some(d) if has_description => {
            let length = d.encode_utf16().count();
            if length > MAX_DESCRIPTION_LENGTH {
                warnings.push(warn(format!(
                    "description exceeds {MAX_DESCRIPTION_LENGTH} characters ({length})"
                )));
            }
        }
        _ => warnings.push(warn("description is required".into())),
    }
    let name = match frontmatter.string("name") {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => split_path(dir).1.to_owned(),
    };
    warnings.extend(validate_name(&name).into_iter().map(warn));
    let Some(description) = description.filter(|_| has_description) else {
        return (None, warnings);
    };
    let skill = Skill {
        name,
        description: description.to_owned(),
        file_path: path.to_owned(),
        disable_model_invocation: frontmatter.get("disable-model-invocation")
            == Some(&serde_json::Value::Bool(true)),
    };
    (
        Some(LoadedSkill {
            skill,
            base_dir: dir.to_owned(),
            content: content.to_owned(),
            source_info: serde_json::Value::Null,
        }),
        warnings,
    )
}

/// The skill a `/skill:name args` prompt names, and its arguments (`""` when none); `None`
/// when `text` is not one.
pub fn skill_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(SKILL_COMMAND_PREFIX)?;
    Some(match rest.find(' ') {
        Some(at) => (&rest[..at], js_trim(&rest[at + 1..])),
        None => (rest, ""),
    })
}

/// The prompt a `/skill:` command becomes: the skill file's body in a `<skill>` block, then the
/// arguments. A file whose frontmatter is not YAML leaves the prompt as it was, as in Pi.
pub fn expand_skill(skill: &LoadedSkill, args: &str) -> Result<String, FrontmatterError> {
    let body = strip_frontmatter(&skill.content)?;
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.skill.name,
        skill.skill.file_path,
        skill.base_dir,
        js_trim(&body)
    );
    Ok(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}
