//! Listing sessions with the summary Pi shows when picking one (`SessionManager.list` /
//! `listAll`).

use std::fs;
use std::path::{Path, PathBuf};
use std::thread;

use pi_core::session::time::ms_from_iso;
use serde_json::Value;

use super::paths::sessions_root;

/// What a session picker shows about one session file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    /// The header's cwd (`""` when missing).
    pub cwd: String,
    /// The latest `session_info` name, trimmed (an empty one clears it).
    pub name: Option<String>,
    pub parent_session_path: Option<String>,
    /// The header timestamp, ms since the epoch (`None` when it does not parse).
    pub created: Option<i64>,
    /// The last user or assistant message's time, else the header's, else the file's mtime.
    pub modified: i64,
    /// Number of `message` entries (every role).
    pub message_count: usize,
    /// The first user message's text, or `(no messages)`.
    pub first_message: String,
    /// Every user and assistant text, joined with spaces.
    pub all_messages_text: String,
}

fn message_text(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The summary of one file; `None` if it is not a session (first parsable line not a header).
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let text = fs::read_to_string(path).ok()?;
    let mut lines = text
        .trim()
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok());
    let header = lines.next()?;
    if header.get("type").and_then(Value::as_str) != Some("session") {
        return None;
    }
    let mut info = SessionInfo {
        path: path.to_path_buf(),
        id: header
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        cwd: header
            .get("cwd")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        name: None,
        parent_session_path: header
            .get("parentSession")
            .and_then(Value::as_str)
            .map(str::to_owned),
        created: header
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(ms_from_iso),
        modified: 0,
        message_count: 0,
        first_message: String::new(),
        all_messages_text: String::new(),
    };
    let mut texts = Vec::new();
    let mut last_activity: Option<i64> = None;
    for entry in lines {
        let kind = entry.get("type").and_then(Value::as_str);
        if kind == Some("session_info") {
            info.name = entry
                .get("name")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned);
        }
        if kind != Some("message") {
            continue;
        }
        info.message_count += 1;
        let Some(message) = entry.get("message") else {
            continue;
        };
        let role = message.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "assistant")) || message.get("content").is_none() {
            continue;
        }
        let time = match message.get("timestamp") {
            Some(Value::Number(n)) => n.as_f64().map(|t| t as i64),
            _ => entry
                .get("timestamp")
                .and_then(Value::as_str)
                .and_then(ms_from_iso),
        };
        if let Some(t) = time {
            last_activity = Some(last_activity.map_or(t, |l| l.max(t)));
        }
        let Some(text) = message_text(message).filter(|t| !t.is_empty()) else {
            continue;
        };
        if info.first_message.is_empty() && role == Some("user") {
            info.first_message = text.clone();
        }
        texts.push(text);
    }
    info.all_messages_text = texts.join(" ");
    if info.first_message.is_empty() {
        info.first_message = "(no messages)".into();
    }
    let mtime = || {
        fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    };
    info.modified = match last_activity.filter(|t| *t > 0) {
        Some(t) => t,
        None => info.created.unwrap_or_else(mtime),
    };
    Some(info)
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

/// Summaries of `files`, read on all cores, newest first.
fn summarize(files: Vec<PathBuf>) -> Vec<SessionInfo> {
    let workers = thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let chunk = files.len().div_ceil(workers).max(1);
    let mut infos: Vec<SessionInfo> = thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .filter_map(|p| session_info(p))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    // Equal times are ordered by path, so a listing never depends on the order a directory was read in.
    infos.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
    infos
}

/// The sessions of one directory, most recently active first.
pub fn list_sessions(dir: &Path) -> Vec<SessionInfo> {
    summarize(jsonl_files(dir))
}

/// The sessions of every project under the agent directory, most recently active first.
pub fn list_all_sessions(agent_dir: &Path) -> Vec<SessionInfo> {
    let Ok(dirs) = fs::read_dir(sessions_root(agent_dir)) else {
        return Vec::new();
    };
    let files = dirs
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .flat_map(|d| jsonl_files(&d))
        .collect();
    summarize(files)
}
