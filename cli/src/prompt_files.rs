//! The system prompt's replacement and addendum as Pi 1.5.2's resource loader finds them: the
//! `--system-prompt` value, else a `SYSTEM.md` (the project's `.pi/SYSTEM.md` when the project
//! is trusted, else the agent directory's); the `--append-system-prompt` values, else an
//! `APPEND_SYSTEM.md` found the same way. A value naming a file that exists is that file's text
//! (a leading byte order mark dropped); one that cannot be read is kept as text, with Pi's
//! warning. What this gives reaches the system prompt's sections, which a recording's header
//! holds, so a replay needs none of these files.

use std::path::Path;

/// The project's configuration folder, where a trusted project's prompt files are.
const CONFIG_DIR: &str = ".pi";

/// What the prompt files and flags give the system prompt.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PromptFiles {
    /// The preamble's replacement (`customPrompt`); empty or absent keeps Pi's own.
    pub system_prompt: Option<String>,
    /// The addendum, the appended texts joined by a blank line; absent when there are none.
    pub append_system_prompt: Option<String>,
    /// Pi's warnings about files it could not read, without the `Warning: ` prefix.
    pub warnings: Vec<String>,
}

/// Where the run looks for its prompt files.
pub(crate) struct Wanted<'a> {
    pub system_prompt: Option<&'a str>,
    /// The `--append-system-prompt` values; `None` when the flag was not given at all.
    pub append_system_prompt: Option<&'a [String]>,
    pub cwd: &'a Path,
    pub agent_dir: &'a Path,
    pub project_trusted: bool,
}

/// Reads the prompt files as Pi's `DefaultResourceLoader.reload` does. A flag given (even an
/// empty one) stops the discovery of its file; an empty flag value adds nothing.
pub(crate) fn read(wanted: &Wanted) -> PromptFiles {
    let mut warnings = Vec::new();
    let system_source = match wanted.system_prompt {
        Some(value) => Some(value.to_owned()),
        None => discover(wanted, "SYSTEM.md"),
    };
    let system_prompt = system_source
        .as_deref()
        .and_then(|s| resolve(wanted.cwd, s, "system prompt", &mut warnings));
    let append_sources = match wanted.append_system_prompt {
        Some(values) => values.to_vec(),
        None => discover(wanted, "APPEND_SYSTEM.md").into_iter().collect(),
    };
    let appended: Vec<String> = append_sources
        .iter()
        .filter_map(|s| resolve(wanted.cwd, s, "append system prompt", &mut warnings))
        .collect();
    PromptFiles {
        system_prompt,
        append_system_prompt: (!appended.is_empty()).then(|| appended.join("\n\n")),
        warnings,
    }
}

/// The project's file when the project is trusted and has it, else the agent directory's.
fn discover(wanted: &Wanted, name: &str) -> Option<String> {
    let project = wanted.cwd.join(CONFIG_DIR).join(name);
    let global = wanted.agent_dir.join(name);
    [(wanted.project_trusted, project), (true, global)]
        .into_iter()
        .find(|(allowed, path)| *allowed && exists(path))
        .map(|(_, path)| path.to_string_lossy().into_owned())
}

/// Pi's `resolvePromptInput`: nothing for an empty value, a file's text when the value names
/// one that exists (relative to `cwd`), else the value itself.
fn resolve(cwd: &Path, value: &str, what: &str, warnings: &mut Vec<String>) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    let path = cwd.join(value);
    if !exists(&path) {
        return Some(value.to_owned());
    }
    match std::fs::read(&path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            Some(text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned())
        }
        Err(error) => {
            warnings.push(format!(
                "Could not read {what} file {value}: Error: {}",
                crate::files::node_message(&error, &path)
            ));
            Some(value.to_owned())
        }
    }
}

/// Node's `existsSync`: anything there, a folder included, a broken link not.
fn exists(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn wanted<'a>(dir: &'a Path, agent: &'a Path, trusted: bool) -> Wanted<'a> {
        Wanted {
            system_prompt: None,
            append_system_prompt: None,
            cwd: dir,
            agent_dir: agent,
            project_trusted: trusted,
        }
    }

    #[test]
    fn the_project_files_win_only_when_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".pi")).unwrap();
        std::fs::write(dir.path().join(".pi/SYSTEM.md"), "project").unwrap();
        std::fs::write(dir.path().join(".pi/APPEND_SYSTEM.md"), "project add").unwrap();
        std::fs::write(agent.path().join("SYSTEM.md"), "\u{feff}global\n").unwrap();
        let trusted = read(&wanted(dir.path(), agent.path(), true));
        assert_eq!(trusted.system_prompt.as_deref(), Some("project"));
        assert_eq!(trusted.append_system_prompt.as_deref(), Some("project add"));
        let untrusted = read(&wanted(dir.path(), agent.path(), false));
        assert_eq!(untrusted.system_prompt.as_deref(), Some("global\n"));
        assert_eq!(untrusted.append_system_prompt, None);
    }

    #[test]
    fn a_flag_given_stops_the_discovery_and_empty_values_add_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        std::fs::write(agent.path().join("SYSTEM.md"), "global").unwrap();
        std::fs::write(agent.path().join("APPEND_SYSTEM.md"), "global add").unwrap();
        std::fs::write(dir.path().join("extra.md"), "from a file").unwrap();
        let values = vec![String::new(), "text".to_owned(), "extra.md".to_owned()];
        let files = read(&Wanted {
            system_prompt: Some(""),
            append_system_prompt: Some(&values),
            ..wanted(dir.path(), agent.path(), false)
        });
        assert_eq!(files.system_prompt, None);
        assert_eq!(
            files.append_system_prompt.as_deref(),
            Some("text\n\nfrom a file")
        );
    }

    #[test]
    fn a_folder_named_is_kept_as_text_with_pis_warning() {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        std::fs::create_dir(agent.path().join("SYSTEM.md")).unwrap();
        let files = read(&wanted(dir.path(), agent.path(), false));
        let path = agent
            .path()
            .join("SYSTEM.md")
            .to_string_lossy()
            .into_owned();
        assert_eq!(files.system_prompt.as_deref(), Some(path.as_str()));
        assert_eq!(
            files.warnings,
            [format!(
                "Could not read system prompt file {path}: Error: EISDIR: illegal operation on a directory, read"
            )]
        );
    }
}
