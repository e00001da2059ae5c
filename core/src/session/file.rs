//! Reading a session file's text (and writing its lines): Pi's line rules, the v1 -> v2 -> v3
//! migrations, and a report of every line that had to be skipped.

use serde_json::{Map, Value};

use super::entry::{SessionEntry, SessionHeader, SessionLine, CURRENT_SESSION_VERSION};
use super::ids::IdGenerator;

/// A line that was not taken as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineProblem {
    /// 1-based line number in the file.
    pub line: usize,
    pub message: String,
}

/// A session file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedSession {
    pub header: SessionHeader,
    pub entries: Vec<SessionEntry>,
    /// Unparsable lines (skipped, as Pi skips them) and entries kept only as raw JSON.
    pub problems: Vec<LineProblem>,
    /// The file was an older version and was migrated in memory; the caller rewrites it.
    pub migrated: bool,
}

/// Why a file is not a session.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionFileError {
    #[error("the file has no session lines")]
    Empty,
    #[error(
        "line {line}: the first line is not a session header (type \"session\" with a string id)"
    )]
    NoHeader { line: usize },
}

/// One entry line, read.
#[derive(Clone, Debug, PartialEq)]
pub enum ParsedLine {
    Entry(SessionEntry),
    /// A repeated header line (Pi skips them when indexing).
    Header,
    /// A known entry type that does not match Pi's schema, kept as raw JSON, with the reason.
    Raw(SessionEntry, String),
    /// Not JSON: skipped, with the reason.
    Unparsable(String),
}

/// Reads one entry line (not the first line of the file).
pub fn parse_line(text: &str) -> ParsedLine {
    parse_line_bytes(text.as_bytes())
}

/// [`parse_line`] for raw bytes: UTF-8 is checked while parsing; invalid UTF-8 is read with
/// replacement characters, as Pi reads files.
pub fn parse_line_bytes(bytes: &[u8]) -> ParsedLine {
    match serde_json::from_slice::<SessionLine>(bytes) {
        Ok(SessionLine::Entry(entry)) => ParsedLine::Entry(entry),
        Ok(SessionLine::Header(_)) => ParsedLine::Header,
        Err(error) => {
            if std::str::from_utf8(bytes).is_err() {
                return parse_line_bytes(String::from_utf8_lossy(bytes).as_bytes());
            }
            match serde_json::from_slice::<Map<String, Value>>(bytes) {
                Ok(raw) => ParsedLine::Raw(
                    SessionEntry::Other(raw),
                    format!("kept as raw JSON: {error}"),
                ),
                Err(error) => ParsedLine::Unparsable(format!("skipped: {error}")),
            }
        }
    }
}

/// Reads the first line; `Ok(None)` when it is a header of a version older than 3 (the whole
/// file then goes through [`parse_session`], which migrates it).
pub fn parse_header_line(
    text: &str,
    line: usize,
) -> Result<Option<SessionHeader>, SessionFileError> {
    let header = serde_json::from_str::<SessionHeader>(text)
        .map_err(|_| SessionFileError::NoHeader { line })?;
    Ok((header.version.unwrap_or(1) >= CURRENT_SESSION_VERSION).then_some(header))
}

/// Non-blank lines of `text` with their 1-based numbers (Pi trims the text and splits on `\n`).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let leading = text.len() - text.trim_start().len();
    let first_line = text[..leading].matches('\n').count();
    text.trim()
        .split('\n')
        .enumerate()
        .map(move |(i, l)| (first_line + i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// Parses a session file. Unparsable lines are skipped and reported; a known entry type that
/// does not match Pi's schema is kept as raw JSON and reported; pre-v3 files are migrated.
pub fn parse_session(text: &str, ids: &mut IdGenerator) -> Result<ParsedSession, SessionFileError> {
    let mut problems = Vec::new();
    let mut numbered = lines(text).peekable();
    let Some(&(first, header_line)) = numbered.peek() else {
        return Err(SessionFileError::Empty);
    };
    let header = match serde_json::from_str::<SessionHeader>(header_line) {
        Ok(header) => header,
        Err(_) => return Err(SessionFileError::NoHeader { line: first }),
    };
    numbered.next();
    if header.version.unwrap_or(1) < CURRENT_SESSION_VERSION {
        return parse_old(header_line, numbered, ids, problems);
    }
    let mut entries = Vec::new();
    for (line, text) in numbered {
        match parse_line(text) {
            ParsedLine::Entry(entry) => entries.push(entry),
            ParsedLine::Header => {}
            ParsedLine::Raw(entry, message) => {
                problems.push(LineProblem { line, message });
                entries.push(entry);
            }
            ParsedLine::Unparsable(message) => problems.push(LineProblem { line, message }),
        }
    }
    Ok(ParsedSession {
        header,
        entries,
        problems,
        migrated: false,
    })
}

fn parse_old<'a>(
    header_line: &str,
    rest: impl Iterator<Item = (usize, &'a str)>,
    ids: &mut IdGenerator,
    mut problems: Vec<LineProblem>,
) -> Result<ParsedSession, SessionFileError> {
    let mut raw: Vec<Map<String, Value>> = Vec::new();
    let mut numbers = Vec::new();
    if let Ok(header) = serde_json::from_str(header_line) {
        raw.push(header);
        numbers.push(0);
    }
    for (line, text) in rest {
        match serde_json::from_str(text) {
            Ok(map) => {
                raw.push(map);
                numbers.push(line);
            }
            Err(error) => problems.push(LineProblem {
                line,
                message: format!("skipped: {error}"),
            }),
        }
    }
    migrate(&mut raw, ids);
    let mut lines = raw.into_iter().zip(numbers);
    let header = lines
        .next()
        .and_then(|(h, _)| serde_json::from_value::<SessionHeader>(Value::Object(h)).ok())
        .ok_or(SessionFileError::NoHeader { line: 1 })?;
    let mut entries = Vec::new();
    for (map, line) in lines {
        match serde_json::from_value::<SessionLine>(Value::Object(map.clone())) {
            Ok(SessionLine::Entry(entry)) => entries.push(entry),
            Ok(SessionLine::Header(_)) => {}
            Err(error) => {
                problems.push(LineProblem {
                    line,
                    message: format!("kept as raw JSON: {error}"),
                });
                entries.push(SessionEntry::Other(map));
            }
        }
    }
    Ok(ParsedSession {
        header,
        entries,
        problems,
        migrated: true,
    })
}

/// Brings raw lines (header first) to the current version in place, as Pi's migrations do.
/// Returns whether anything changed.
pub fn migrate(lines: &mut [Map<String, Value>], ids: &mut IdGenerator) -> bool {
    let version = lines
        .iter()
        .find(|l| l.get("type").and_then(Value::as_str) == Some("session"))
        .and_then(|h| h.get("version"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if version >= u64::from(CURRENT_SESSION_VERSION) {
        return false;
    }
    if version < 2 {
        v1_to_v2(lines, ids);
    }
    v2_to_v3(lines);
    true
}

fn is_header(line: &Map<String, Value>) -> bool {
    line.get("type").and_then(Value::as_str) == Some("session")
}

/// v1 had no tree: every entry gets an id and its predecessor as parent; compactions point at
/// their first kept entry by id instead of by index.
fn v1_to_v2(lines: &mut [Map<String, Value>], ids: &mut IdGenerator) {
    let mut taken = std::collections::BTreeSet::new();
    let mut previous: Option<String> = None;
    // The id each line got so far (None for headers and lines not reached yet).
    let mut assigned: Vec<Option<String>> = vec![None; lines.len()];
    for i in 0..lines.len() {
        let line = &mut lines[i];
        if is_header(line) {
            line.insert("version".into(), Value::from(2));
            continue;
        }
        let id = ids.entry_id(|id| taken.contains(id));
        taken.insert(id.clone());
        line.insert("id".into(), Value::String(id.clone()));
        line.insert(
            "parentId".into(),
            previous.clone().map_or(Value::Null, Value::String),
        );
        previous = Some(id.clone());
        assigned[i] = Some(id);
        if line.get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        if let Some(index) = line.get("firstKeptEntryIndex").and_then(Value::as_u64) {
            if let Some(Some(target)) = assigned.get(index as usize) {
                line.insert("firstKeptEntryId".into(), Value::String(target.clone()));
            }
            line.shift_remove("firstKeptEntryIndex");
        }
    }
}

/// v3 renamed the `hookMessage` role to `custom`.
fn v2_to_v3(lines: &mut [Map<String, Value>]) {
    for line in lines.iter_mut() {
        if is_header(line) {
            line.insert("version".into(), Value::from(3));
            continue;
        }
        if line.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(Value::Object(message)) = line.get_mut("message") {
            if message.get("role").and_then(Value::as_str) == Some("hookMessage") {
                message.insert("role".into(), Value::String("custom".into()));
            }
        }
    }
}

/// One line of a session file as Pi writes it: compact JSON and `\n`.
pub fn line<T: serde::Serialize>(value: &T) -> String {
    let mut text = crate::json::to_string(value).unwrap_or_default();
    text.push('\n');
    text
}

/// The whole file for a session: header and entries.
pub fn whole_file(header: &SessionHeader, entries: &[SessionEntry]) -> String {
    let mut out = line(header);
    for entry in entries {
        out.push_str(&line(entry));
    }
    out
}
