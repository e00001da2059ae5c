//! Where Pi keeps sessions: `<agent dir>/sessions/--<cwd with separators as dashes>--/`, one file
//! per session named `<header timestamp with : and . as ->_<session id>.jsonl`.

use std::path::{Path, PathBuf};

use pi_core::session::entry::SessionHeader;

/// Overrides the agent directory (`~/.pi/agent`).
pub const AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";
/// Overrides the session directory (below `--session-dir`, above settings).
pub const SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// `~` and `~/…` expanded against `home`, as Pi's `expandTildePath`.
pub fn expand_tilde(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        return home.to_path_buf();
    }
    match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(path),
    }
}

/// The agent directory given the value of `PI_CODING_AGENT_DIR` and the home directory.
pub fn agent_dir_from(env_value: Option<&str>, home: &Path) -> PathBuf {
    match env_value.filter(|v| !v.is_empty()) {
        Some(dir) => expand_tilde(dir, home),
        None => home.join(".pi").join("agent"),
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// The agent directory of this process (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
pub fn agent_dir() -> PathBuf {
    agent_dir_from(std::env::var(AGENT_DIR_ENV).ok().as_deref(), &home())
}

/// `<agent dir>/sessions`.
pub fn sessions_root(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions")
}

/// The directory name for a cwd: one leading separator dropped, `/`, `\` and `:` turned into
/// `-`, wrapped in `--`: `/home/u/proj` -> `--home-u-proj--`.
pub fn session_dir_name(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let safe: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{safe}--")
}

/// The per-cwd session directory, created if missing.
pub fn default_session_dir(agent_dir: &Path, cwd: &str) -> std::io::Result<PathBuf> {
    let dir = sessions_root(agent_dir).join(session_dir_name(cwd));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The session directory chosen by `--session-dir`, else `PI_CODING_AGENT_SESSION_DIR`, else the
/// settings' `sessionDir`; `None` means the per-cwd default.
pub fn resolve_session_dir(
    flag: Option<&str>,
    env_value: Option<&str>,
    settings: Option<&str>,
    home: &Path,
) -> Option<PathBuf> {
    flag.map(PathBuf::from)
        .or_else(|| {
            env_value
                .filter(|v| !v.is_empty())
                .map(|v| expand_tilde(v, home))
        })
        .or_else(|| settings.map(PathBuf::from))
}

/// The file name of a session: its header timestamp with `:` and `.` replaced by `-`, then `_`
/// and the session id.
pub fn file_name(header: &SessionHeader) -> String {
    let stamp: String = header
        .timestamp
        .chars()
        .map(|c| if c == ':' || c == '.' { '-' } else { c })
        .collect();
    format!("{stamp}_{}.jsonl", header.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pi() {
        assert_eq!(session_dir_name("/home/u/proj"), "--home-u-proj--");
        assert_eq!(session_dir_name("C:\\work\\x"), "--C--work-x--");
        let home = Path::new("/home/u");
        assert_eq!(agent_dir_from(None, home), Path::new("/home/u/.pi/agent"));
        assert_eq!(
            agent_dir_from(Some("~/alt"), home),
            Path::new("/home/u/alt")
        );
        assert_eq!(agent_dir_from(Some("~"), home), Path::new("/home/u"));
        assert_eq!(agent_dir_from(Some("/abs"), home), Path::new("/abs"));
        assert_eq!(
            resolve_session_dir(None, Some("~/s"), Some("/cfg"), home),
            Some(PathBuf::from("/home/u/s"))
        );
        assert_eq!(
            resolve_session_dir(Some("/flag"), Some("~/s"), None, home),
            Some(PathBuf::from("/flag"))
        );
    }
}
