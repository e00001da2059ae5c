//! `pi --resume` without an interactive interface. Pi opens a picker over the sessions of the
//! working directory; this build lists them as plain text instead, newest first, and the user
//! resumes one with `pi --session <id>`:
//!
//! ```text
//! Sessions in /home/me/project (newest first):
//!   2026-05-01T10:00:00.000Z  4 messages  01a20266-3552-70fa-8f8e-976e55132b06  Fix the tests
//!
//! Resume one with: pi --session <id>
//! ```

use pi_core::session::time::iso_from_ms;
use pi_effects::session::SessionInfo;

/// Longest title shown per session (characters); longer ones end in `...`.
const TITLE_CHARS: usize = 80;

/// The listing's lines for the sessions of `cwd`.
pub fn listing(cwd: &str, sessions: &[SessionInfo]) -> Vec<String> {
    if sessions.is_empty() {
        return vec![format!("No sessions found in {cwd}")];
    }
    let mut lines = vec![format!("Sessions in {cwd} (newest first):")];
    let counts: Vec<String> = sessions
        .iter()
        .map(|s| match s.message_count {
            1 => "1 message".to_owned(),
            n => format!("{n} messages"),
        })
        .collect();
    let width = counts.iter().map(String::len).max().unwrap_or(0);
    for (session, count) in sessions.iter().zip(&counts) {
        let modified = iso_from_ms(u64::try_from(session.modified).unwrap_or(0));
        lines.push(format!(
            "  {modified}  {count:<width$}  {}  {}",
            session.id,
            title(session)
        ));
    }
    lines.push(String::new());
    lines.push("Resume one with: pi --session <id>".to_owned());
    lines
}

/// The session's name, else its first message, on one line.
fn title(session: &SessionInfo) -> String {
    let text = session.name.as_deref().unwrap_or(&session.first_message);
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= TITLE_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(TITLE_CHARS - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn info(id: &str, count: usize, first: &str, name: Option<&str>) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(format!("/s/{id}.jsonl")),
            id: id.into(),
            cwd: "/w".into(),
            name: name.map(str::to_owned),
            parent_session_path: None,
            created: Some(0),
            modified: 1_700_000_000_000,
            message_count: count,
            first_message: first.into(),
            all_messages_text: String::new(),
        }
    }

    #[test]
    fn names_win_over_first_messages_and_long_titles_are_cut() {
        let long = "word ".repeat(40);
        let lines = listing(
            "/w",
            &[
                info("a", 1, "Hello\nthere", None),
                info("b", 12, &long, None),
                info("c", 2, "x", Some("Named")),
            ],
        );
        assert_eq!(lines[0], "Sessions in /w (newest first):");
        assert_eq!(
            lines[1],
            "  2023-11-14T22:13:20.000Z  1 message    a  Hello there"
        );
        assert!(lines[2].ends_with("word word wo..."));
        assert_eq!(lines[2].split("  b  ").nth(1).unwrap().chars().count(), 80);
        assert!(lines[3].ends_with("  c  Named"));
        assert_eq!(lines[5], "Resume one with: pi --session <id>");
        assert_eq!(listing("/w", &[]), ["No sessions found in /w"]);
    }
}
