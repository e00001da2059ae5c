//! Loading a cassette: every line checked (UTF-8, size, JSON, fields, order) before anything
//! runs, with errors naming the file, the line and the field. Loading reads data and nothing
//! else: no command in a cassette is run, no text in it is evaluated.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::format::{
    AnswerLine, CallLine, ChunkLine, EventLine, Header, Line, RecordedEffect, ReplacedSession,
    RequestLine, ResponseLine, SessionLeft,
};
use crate::version::{check_header, Unreadable, FORMAT_VERSION, KNOWN_FEATURES};

/// How this build writes a request line: read straight into [`RequestLine`].
const REQUEST_PREFIX: &str = "{\"type\":\"request\",";
const EVENT_PREFIX: &str = "{\"type\":\"event\",";
const CHUNK_PREFIX: &str = "{\"type\":\"chunk\",";
const ANSWER_PREFIX: &str = "{\"type\":\"answer\",";
const CALL_PREFIX: &str = "{\"type\":\"call\",";
const RESPONSE_PREFIX: &str = "{\"type\":\"response\",";

/// The longest line read (a request with a large conversation, a big tool result).
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// A cassette in memory, checked.
#[derive(Clone, Debug)]
pub struct CheckedCassette {
    /// Where it was read from.
    pub path: PathBuf,
    pub header: Header,
    /// Every line after the header with its line number (1-based).
    pub lines: Vec<(usize, Line)>,
    /// The last line was cut off (the recording was killed while writing it); what came before
    /// it is kept.
    pub torn_tail: bool,
    /// The outcome line, when the run ended while recording (kept apart from `lines`, which a
    /// replay takes).
    outcome: Option<crate::format::RecordedOutcome>,
    /// For one of a run's [`sessions`](Self::sessions) that was replaced: why, and its file as
    /// the run left it (its `replaced` line's).
    left: Option<Left>,
    /// The number of the last line read.
    last_line: usize,
    /// The number of the line this cassette's header is from: 1, or for a later one of a
    /// run's [`sessions`](Self::sessions), its `replaced` line's.
    header_line: usize,
}

/// How a run left one of its sessions (its `replaced` line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Left {
    /// Why, as the extensions heard it (`new`, `resume`, `fork`).
    pub reason: String,
    /// Its file as it was left.
    pub file: SessionLeft,
}

/// Why a cassette cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {kind}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct LoadError {
    pub path: PathBuf,
    /// The line at fault (1-based), when one is.
    pub line: Option<usize>,
    pub kind: LoadErrorKind,
}

/// What is wrong with a cassette.
#[derive(Debug, thiserror::Error)]
pub enum LoadErrorKind {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("empty file: no cassette header")]
    Empty,
    #[error("not UTF-8 (byte {0} of the line)")]
    NotUtf8(usize),
    #[error("line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("not a JSON object: {0}")]
    Json(String),
    #[error("{0}")]
    Field(String),
    #[error("the first line is not a cassette header (`\"type\":\"cassette\"`)")]
    NoHeader,
    #[error("a proxy cassette (recorded by `pi proxy --record`), not a run: serve its folder with `pi proxy --replay DIR`")]
    ProxyCassette,
    #[error("a run cassette (recorded by `pi --record`), not a proxy cassette: replay it with `pi replay`")]
    RunCassette,
    #[error("{0}")]
    Proxy(String),
    /// A newer major format, a feature this build does not know, or a malformed `format`.
    #[error(transparent)]
    Version(#[from] Unreadable),
    #[error("out of order: {0}")]
    Order(String),
    /// Made with another Pi edition than the one the reading build reproduces. The format
    /// reads every edition; a harness that replays refuses this (see the header's `pi`).
    #[error(
        "made with Pi {recorded}, and this build reproduces Pi {build}: its replay would say nothing about this build. Record it again with this build: `pi replay --rerecord {}` (one made against a real model: `pi --record` its run again)",
        rerecord.display()
    )]
    OtherEdition {
        recorded: String,
        build: String,
        /// The cassette, as the command that records it again names it.
        rerecord: PathBuf,
    },
}

impl CheckedCassette {
    /// Reads and checks the cassette at `path`.
    pub fn load(path: &Path) -> Result<CheckedCassette, LoadError> {
        let bytes = std::fs::read(path).map_err(|e| LoadError {
            path: path.to_path_buf(),
            line: None,
            kind: e.into(),
        })?;
        CheckedCassette::parse(path, &bytes)
    }

    /// Checks a cassette's bytes (`path` names it in errors).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<CheckedCassette, LoadError> {
        let error = |line: Option<usize>, kind: LoadErrorKind| LoadError {
            path: path.to_path_buf(),
            line,
            kind,
        };
        let mut pieces: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        // The piece after the last newline: empty for a whole file, a torn line otherwise.
        let tail = pieces.pop().unwrap_or_default();
        let torn_tail = !tail.is_empty();
        if pieces.is_empty() {
            let kind = if torn_tail {
                LoadErrorKind::Order(
                    "the file ends inside its header line (cut off while recording)".into(),
                )
            } else {
                LoadErrorKind::Empty
            };
            return Err(error(Some(1), kind));
        }
        let mut header = None;
        let mut lines = Vec::with_capacity(pieces.len());
        for (index, piece) in pieces.into_iter().enumerate() {
            let number = index + 1;
            let line = parse_line(piece, number == 1).map_err(|kind| error(Some(number), kind))?;
            match (number, line) {
                (1, Line::Cassette(h)) => header = Some(*h),
                (1, _) => return Err(error(Some(1), LoadErrorKind::NoHeader)),
                (_, Line::Cassette(_) | Line::Proxy(_)) => {
                    return Err(error(
                        Some(number),
                        LoadErrorKind::Order("a second cassette header".into()),
                    ))
                }
                (_, line) => lines.push((number, line)),
            }
        }
        let header = header.ok_or_else(|| error(Some(1), LoadErrorKind::NoHeader))?;
        check_order(&lines)
            .map_err(|(line, what)| error(Some(line), LoadErrorKind::Order(what)))?;
        let outcome = match lines.last() {
            Some((_, Line::Outcome(outcome))) => Some(outcome.clone()),
            _ => None,
        };
        let last_line = lines.last().map_or(1, |(n, _)| *n);
        Ok(CheckedCassette {
            path: path.to_path_buf(),
            header,
            lines,
            torn_tail,
            outcome,
            left: None,
            last_line,
            header_line: 1,
        })
    }

    /// Whether the run ran to its end while recording (its `outcome` line is there); for one
    /// of its [`sessions`](Self::sessions) that was replaced, whether its `replaced` line is.
    pub fn is_complete(&self) -> bool {
        self.outcome.is_some() || self.left.is_some()
    }

    /// How the run left this session, when it is one of its [`sessions`](Self::sessions)
    /// that was replaced.
    pub fn left(&self) -> Option<&Left> {
        self.left.as_ref()
    }

    /// The run's sessions, one cassette each, in order: the first under the header, each
    /// later one under the header with its `replaced` line's `config` and `session`. Each holds
    /// its own lines (numbered as in the file) and the run's outcome; each but the last says
    /// how it was left. A run that never replaced its session is one.
    pub fn sessions(self) -> Vec<CheckedCassette> {
        let CheckedCassette {
            path,
            header,
            lines,
            torn_tail,
            outcome,
            left: _,
            last_line,
            header_line: _,
        } = self;
        let mut sessions = Vec::new();
        let mut current = CheckedCassette {
            path: path.clone(),
            header: header.clone(),
            lines: Vec::new(),
            torn_tail: false,
            outcome: outcome.clone(),
            left: None,
            last_line: 1,
            header_line: 1,
        };
        for (number, line) in lines {
            let Line::Replaced(replaced) = line else {
                current.last_line = number;
                current.lines.push((number, line));
                continue;
            };
            let ReplacedSession {
                reason,
                left,
                config,
                session,
            } = *replaced;
            let next = CheckedCassette {
                path: path.clone(),
                header: Header {
                    config,
                    session,
                    ..header.clone()
                },
                lines: Vec::new(),
                torn_tail: false,
                outcome: outcome.clone(),
                left: None,
                last_line: number,
                header_line: number,
            };
            current.left = Some(Left { reason, file: left });
            current.last_line = number;
            sessions.push(std::mem::replace(&mut current, next));
        }
        current.torn_tail = torn_tail;
        current.last_line = last_line;
        sessions.push(current);
        sessions
    }

    /// Whether the run replaced its session (its lines hold more than one of
    /// [`sessions`](Self::sessions)).
    pub fn replaces_session(&self) -> bool {
        self.lines
            .iter()
            .any(|(_, line)| matches!(line, Line::Replaced(_)))
    }

    /// The outcome line, if the run ran to its end while recording.
    pub fn outcome(&self) -> Option<&crate::format::RecordedOutcome> {
        self.outcome.as_ref()
    }

    /// The text of the session the run started in (`open` sessions): in the header, or in
    /// its side file beside the cassette, checked against the digest it is named by.
    pub fn session_content(&self) -> Result<Option<String>, String> {
        let session = &self.header.session;
        let Some(name) = &session.content_file else {
            return Ok(session.content.clone());
        };
        let digest = name
            .strip_prefix("blobs/")
            .and_then(|n| n.strip_suffix(".jsonl"))
            .filter(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                format!("field `session.contentFile`: {name:?} is not blobs/<sha256>.jsonl")
            })?;
        let file = self.path.parent().unwrap_or(Path::new(".")).join(name);
        let content = std::fs::read_to_string(&file)
            .map_err(|e| format!("the session file {} of this cassette: {e}", file.display()))?;
        if crate::sha256_hex(content.as_bytes()) != digest {
            return Err(format!(
                "the session file {} does not have the content it is named by",
                file.display()
            ));
        }
        Ok(Some(content))
    }

    /// The number of the last line read.
    pub fn last_line(&self) -> usize {
        self.last_line
    }

    /// The number of the line the header is from (a later session's `replaced` line).
    pub fn header_line(&self) -> usize {
        self.header_line
    }
}

/// A line checked for size, UTF-8, JSON and its fields; `first` for a run cassette's header.
pub fn parse_line(piece: &[u8], first: bool) -> Result<Line, LoadErrorKind> {
    if piece.len() > MAX_LINE_BYTES {
        return Err(LoadErrorKind::TooLong);
    }
    let text = std::str::from_utf8(piece).map_err(|e| LoadErrorKind::NotUtf8(e.valid_up_to()))?;
    if !first {
        // The common case straight into its type; only a line that does not fit is read again
        // as JSON, for an error that names its kind and field.
        let parsed = if text.starts_with(EVENT_PREFIX) {
            serde_json::from_str::<EventLine>(text).map(Line::from)
        } else if text.starts_with(CHUNK_PREFIX) {
            serde_json::from_str::<ChunkLine>(text).map(Line::from)
        } else if text.starts_with(REQUEST_PREFIX) {
            serde_json::from_str::<RequestLine>(text).map(Line::from)
        } else if text.starts_with(ANSWER_PREFIX) {
            serde_json::from_str::<AnswerLine>(text).map(Line::from)
        } else if text.starts_with(CALL_PREFIX) {
            serde_json::from_str::<CallLine>(text).map(Line::from)
        } else if text.starts_with(RESPONSE_PREFIX) {
            serde_json::from_str::<ResponseLine>(text).map(Line::from)
        } else {
            serde_json::from_str::<Line>(text)
        };
        if let Ok(line) = parsed {
            return Ok(line);
        }
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| LoadErrorKind::Json(e.to_string()))?;
    if first {
        match value.get("type").and_then(Value::as_str) {
            Some("cassette") => {}
            Some("proxy") => return Err(LoadErrorKind::ProxyCassette),
            _ => return Err(LoadErrorKind::NoHeader),
        }
        check_header(&value, "cassette", FORMAT_VERSION, KNOWN_FEATURES)?;
    }
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    let field = |e: serde_json::Error| LoadErrorKind::Field(format!("`{kind}` line: {e}"));
    if kind == "request" {
        // Its body is read as text, which only JSON text can give.
        return serde_json::from_str::<RequestLine>(&value.to_string())
            .map(Line::from)
            .map_err(field);
    }
    serde_json::from_value(value).map_err(field)
}

/// The order rules: a call's lines come after its effect and its `call` line, a response after
/// a request, body lines after a response, nothing after the outcome. Each session of a run
/// numbers its calls anew: a `replaced` line starts over.
fn check_order(lines: &[(usize, Line)]) -> Result<(), (usize, String)> {
    let mut effects: BTreeSet<u64> = BTreeSet::new();
    let mut calls: BTreeSet<u64> = BTreeSet::new();
    // Per call: whether the current exchange has a response and has ended.
    let mut exchange: BTreeMap<u64, (bool, bool)> = BTreeMap::new();
    let mut ended = false;
    // Whether a request came before (a `delta` changes the last one).
    let mut requested = false;
    for (number, line) in lines {
        let number = *number;
        if ended {
            return Err((number, "a line after the outcome".into()));
        }
        match line {
            Line::Effect {
                effect:
                    RecordedEffect::CallModel { call, .. } | RecordedEffect::RunTool { call, .. },
            } if !effects.insert(*call) => {
                return Err((number, format!("call {call} is started twice")));
            }
            Line::Call { call, .. } => {
                if !effects.contains(call) {
                    return Err((
                        number,
                        format!("field `call`: call {call} has no effect before it"),
                    ));
                }
                calls.insert(*call);
            }
            Line::Request {
                call, body, delta, ..
            } => {
                if !calls.contains(call) {
                    return Err((
                        number,
                        format!("field `call`: call {call} has no `call` line before it"),
                    ));
                }
                if body.is_some() == delta.is_some() {
                    return Err((
                        number,
                        "a request needs exactly one of `body` and `delta`".into(),
                    ));
                }
                if delta.is_some() && !requested {
                    return Err((
                        number,
                        "field `delta`: no request before it to change".into(),
                    ));
                }
                requested = true;
                exchange.insert(*call, (false, false));
            }
            Line::Response { call, .. } => match exchange.get_mut(call) {
                Some((response @ false, false)) => *response = true,
                _ => {
                    return Err((
                        number,
                        format!("field `call`: a response of call {call} without a request"),
                    ))
                }
            },
            Line::Chunk {
                call, text, base64, ..
            } => {
                if !matches!(exchange.get(call), Some((true, false))) {
                    return Err((
                        number,
                        format!("field `call`: body bytes of call {call} outside a response"),
                    ));
                }
                if text.is_some() == base64.is_some() {
                    return Err((
                        number,
                        "a chunk needs exactly one of `text` and `base64`".into(),
                    ));
                }
            }
            Line::End { call, .. } => match exchange.get_mut(call) {
                Some((_, done @ false)) => *done = true,
                _ => {
                    return Err((
                        number,
                        format!("field `call`: call {call} ends without a request"),
                    ))
                }
            },
            Line::Event { call, .. } if !effects.contains(call) => {
                return Err((
                    number,
                    format!("field `call`: an event of call {call}, which was never started"),
                ));
            }
            Line::Outcome(_) => ended = true,
            Line::Replaced(_) => {
                effects.clear();
                calls.clear();
                exchange.clear();
                requested = false;
            }
            _ => {}
        }
    }
    Ok(())
}
