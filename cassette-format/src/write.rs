//! Writing a cassette as the run happens: each line appended and handed to the OS at once, so
//! a run killed at any moment leaves every line it finished; and secrets replaced by
//! placeholders before a line is written. One recorder at a time: the cassette is `flock`ed
//! before it is emptied, for as long as the recorder lives (the kernel drops the lock of a
//! killed process), so a second recorder into the same file is refused and writes nothing.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::flock::LockedFile;
use serde_json::Value;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use pi_credential_names::is_credential_name;

use crate::format::{BodyDelta, Header, Line, ProxyHeader, RawJson, SessionStart};

use crate::redact::{Reach, Rules, Secrets, MIN_SCRUBBED_LEN};

/// Response header names whose values are credentials (a request header is one when its name
/// says so: [`is_credential_name`]).
const SECRET_RESPONSE_HEADERS: [&str; 2] = ["set-cookie", "www-authenticate"];

/// What a `redaction` line says of a value one of the user's rules found.
pub const RULE_SOURCE: &str = "a settings `redact` rule";

/// Query parameters whose values are credentials.
const SECRET_PARAMS: [&str; 4] = ["key", "api_key", "apikey", "token"];

/// A request line's fields besides its body.
#[derive(Debug)]
pub struct RequestParts {
    pub call: u64,
    pub dt: u64,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
}

/// Appends lines to one cassette; cheap to clone and share between the tasks of a run.
#[derive(Clone, Debug)]
pub struct Recorder {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    path: PathBuf,
    /// Locked for as long as the recorder lives.
    file: LockedFile,
    secrets: Secrets,
    /// The user's own rules (settings `redact`), shared so that each use need not copy them
    /// out of the lock.
    rules: Arc<Rules>,
    /// `redaction` lines of values the rules found in the line being written, written after
    /// it (the header stays the first line).
    found: Vec<Line>,
    /// The first write that failed; later lines are not written.
    failed: Option<String>,
    /// The body of the last request line written: the next one is written as a change of it.
    last_body: Option<Value>,
    /// Nothing more is written (see [`Recorder::close`]).
    closed: bool,
}

/// Why a cassette could not be started.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("cannot record to {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another recorder holds the file; it was left as it is.
    #[error("Cassette {} is being recorded by another process; wait for it to finish or record to another file", path.display())]
    Busy { path: PathBuf },
}

impl Recorder {
    /// Starts the cassette at `path` (replacing a file there) with `header`. `secrets` are
    /// values known to be credentials before the run starts, with where each came from: they
    /// are replaced from the header on, as is what `rules` find.
    pub fn create(
        path: &Path,
        header: &Header,
        secrets: &[(String, String)],
        rules: Rules,
    ) -> Result<Self, CreateError> {
        prepare_dir(path)?;
        Recorder::start(
            path,
            Line::Cassette(Box::new(header.clone())),
            secrets,
            rules,
        )
    }

    /// Starts the proxy cassette at `path` (replacing a file there) with `header`: the same
    /// lines, redaction and crash safety as a run's cassette, under another header.
    pub fn create_proxy(
        path: &Path,
        header: &ProxyHeader,
        secrets: &[(String, String)],
    ) -> Result<Self, CreateError> {
        prepare_dir(path)?;
        let rules = Rules::default();
        Recorder::start(path, Line::Proxy(Box::new(header.clone())), secrets, rules)
    }

    fn start(
        path: &Path,
        mut first: Line,
        secrets: &[(String, String)],
        rules: Rules,
    ) -> Result<Self, CreateError> {
        let io_error = |source| CreateError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_error)?;
        let Ok(file) = LockedFile::try_lock(file).map_err(io_error)? else {
            return Err(CreateError::Busy {
                path: path.to_path_buf(),
            });
        };
        file.file().set_len(0).map_err(io_error)?;
        let mut state = State {
            path: path.to_path_buf(),
            file,
            secrets: Secrets::default(),
            rules: Arc::new(rules),
            found: Vec::new(),
            failed: None,
            last_body: None,
            closed: false,
        };
        // Known before the first line: the header (a resumed session, the command line) is
        // scrubbed too; each placeholder's own line follows it.
        let mut placeholders = Vec::new();
        for (value, what) in secrets {
            if let Some(placeholder) = state.secrets.register(value) {
                placeholders.push((placeholder, what.clone()));
            }
        }
        if let Line::Cassette(header) = &mut first {
            move_large_session(&mut state, &mut header.session).map_err(io_error)?;
        }
        write_line(&mut state, &first);
        for (placeholder, what) in placeholders {
            write_line(&mut state, &Line::Redaction { placeholder, what });
        }
        Ok(Recorder {
            state: Arc::new(Mutex::new(state)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file written to.
    pub fn path(&self) -> PathBuf {
        self.lock().path.clone()
    }

    /// Ends the cassette: later lines are not written (the run is over, or the session it
    /// recorded was replaced).
    pub fn close(&self) {
        self.lock().closed = true;
    }

    /// Whether the cassette was ended ([`close`](Self::close)).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The first write that failed, if one did.
    pub fn failure(&self) -> Option<String> {
        self.lock().failed.clone()
    }

    /// Registers `value` as a secret (`what` says which); returns its placeholder. The first
    /// time, a `redaction` line says that the placeholder stands for it.
    pub fn secret(&self, value: &str, what: &str) -> String {
        let mut state = self.lock();
        if let Some(placeholder) = state.secrets.placeholder(value) {
            return placeholder.to_owned();
        }
        let placeholder = state.secrets.add(value);
        let line = Line::Redaction {
            placeholder: placeholder.clone(),
            what: what.to_owned(),
        };
        write_line(&mut state, &line);
        placeholder
    }

    /// Replaces known secrets inside a credential field (any length); a credential that holds
    /// none becomes a secret of its own.
    pub fn redact_credential(&self, value: &str, what: &str) -> String {
        if value.is_empty() || crate::redact::rules::is_placeholder(value) {
            return value.to_owned();
        }
        let replaced = {
            let state = self.lock();
            state.secrets.replace(value, 1)
        };
        if replaced != value {
            return replaced;
        }
        self.secret(value, what)
    }

    /// Redacts the credential headers of a request's `headers` (by name; values of known
    /// secrets are replaced in every header when the line is written).
    pub fn redact_headers(&self, headers: &[(String, String)]) -> Vec<(String, String)> {
        let headers = self.redact_headers_where(headers, is_credential_name);
        self.redact_named_headers(headers)
    }

    /// `headers` with the values of those the user's rules name replaced where they are.
    fn redact_named_headers(&self, headers: Vec<(String, String)>) -> Vec<(String, String)> {
        let mut state = self.lock();
        let rules = Arc::clone(&state.rules);
        headers
            .into_iter()
            .map(|(name, value)| match rules.names_header(&name) {
                true => {
                    let placeholder = rule_secret(&mut state, &value, Reach::Here);
                    (name, placeholder)
                }
                false => (name, value),
            })
            .collect()
    }

    /// `body` with the values at the user's JSON paths replaced, as a request line's body is
    /// (the same value, the same placeholder): for a request body recorded elsewhere first.
    pub fn redact_body(&self, body: &Value) -> Value {
        let mut state = self.lock();
        let mut body = body.clone();
        if state.rules.has_paths() {
            replace_at_paths(&mut state, &mut body);
        }
        body
    }

    /// Redacts the credential headers of a response's `headers` (cookies set, challenges).
    pub fn redact_response_headers(&self, headers: &[(String, String)]) -> Vec<(String, String)> {
        let headers = self.redact_headers_where(headers, |name| {
            SECRET_RESPONSE_HEADERS.contains(&name.to_ascii_lowercase().as_str())
        });
        self.redact_named_headers(headers)
    }

    fn redact_headers_where(
        &self,
        headers: &[(String, String)],
        secret: impl Fn(&str) -> bool,
    ) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(name, value)| {
                let what = format!("header {name}");
                let value = match name.to_ascii_lowercase().as_str() {
                    "cookie" | "set-cookie" => self.redact_cookies(name, value, &what),
                    _ if secret(name) => self.redact_credential(value, &what),
                    _ => value.clone(),
                };
                (name.clone(), value)
            })
            .collect()
    }

    /// A `cookie` or `set-cookie` value with each cookie's value a secret of its own (the
    /// value alone is what a page or a model repeats), names and attributes kept:
    /// `a=<<secret-1>>; b=<<secret-2>>`, `session=<<secret-3>>; Path=/; HttpOnly`.
    fn redact_cookies(&self, name: &str, header: &str, what: &str) -> String {
        let set_cookie = name.eq_ignore_ascii_case("set-cookie");
        header
            .split(';')
            .enumerate()
            .map(|(i, part)| match part.split_once('=') {
                // A `set-cookie`'s attributes (`Path=/`) after its first pair are not secret.
                Some((name, value)) if !(set_cookie && i > 0) => {
                    format!("{name}={}", self.redact_credential(value.trim(), what))
                }
                _ => part.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    /// Redacts the credential query parameters of `url`.
    pub fn redact_url(&self, url: &str) -> String {
        let Some((base, query)) = url.split_once('?') else {
            return url.to_owned();
        };
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((name, value))
                    if SECRET_PARAMS.contains(&name.to_ascii_lowercase().as_str()) =>
                {
                    format!(
                        "{name}={}",
                        self.redact_credential(value, &format!("query parameter {name}"))
                    )
                }
                _ => param.to_owned(),
            })
            .collect();
        format!("{base}?{}", params.join("&"))
    }

    /// `text` with every known secret of at least eight characters replaced, as a line of the
    /// cassette would have it: what a recording digests of its output and session file, so
    /// that a replay (which sees only placeholders) can match it.
    pub fn redact_text(&self, text: &str) -> String {
        self.lock().secrets.replace(text, MIN_SCRUBBED_LEN)
    }

    /// `text` with an end that is the start of a known secret replaced by its placeholder
    /// (see [`Secrets::replace_end`](crate::redact::Secrets::replace_end)), or `None`.
    pub fn redact_end(&self, text: &str) -> Option<String> {
        self.lock().secrets.replace_end(text)
    }

    /// Whether a secret a model streamed over several events was rewritten to its placeholder
    /// in a response's chunk lines: then what the run printed as it streamed held pieces of
    /// it, and an outcome line must not keep that output's text.
    pub fn rewrote_streamed_secret(&self) -> bool {
        self.lock().secrets.rewrote_stream()
    }

    /// Appends `line`, every known secret of at least eight characters replaced anywhere in it;
    /// a response's credential headers replaced; a body's bytes held back while they could be
    /// the start of a secret the next read completes (a key cut between two reads).
    /// An outcome line ends the cassette ([`close`](Self::close)).
    pub fn write(&self, line: Line) {
        let line = match line {
            Line::Response {
                call,
                dt,
                status,
                headers,
            } => Line::Response {
                call,
                dt,
                status,
                headers: self.redact_response_headers(&headers),
            },
            other => other,
        };
        let mut state = self.lock();
        let line = match line {
            Line::Chunk {
                call,
                dt,
                text,
                base64,
            } => {
                // A chunk whose base64 does not decode (copied from a damaged cassette) is
                // written as it came: nothing is lost, and no secret can be read from it here.
                let bytes = match (text, base64) {
                    (Some(text), _) => text.into_bytes(),
                    (None, Some(encoded)) => match STANDARD.decode(&encoded) {
                        Ok(bytes) => bytes,
                        Err(_) => {
                            let line = Line::Chunk {
                                call,
                                dt,
                                text: None,
                                base64: Some(encoded),
                            };
                            return write_line(&mut state, &line);
                        }
                    },
                    (None, None) => Vec::new(),
                };
                let bytes = replace_patterns_in_bytes(&mut state, bytes);
                let part = state.secrets.body_part(call, &bytes);
                if part.is_empty() {
                    return;
                }
                Line::chunk(call, dt, &part)
            }
            Line::End { call, dt, end } => {
                let held = state.secrets.release(call);
                if !held.is_empty() {
                    write_line(&mut state, &Line::chunk(call, dt, &held));
                }
                Line::End { call, dt, end }
            }
            other => other,
        };
        match &line {
            // A request copied whole (a hybrid run's replayed part) is the base of the next.
            Line::Request { body, delta, .. } => {
                state.last_body = match (body, delta) {
                    (Some(body), _) => Some(body.to_value()),
                    _ => None,
                };
            }
            // A new session's first request is written whole: a replay reads each session's
            // lines on their own.
            Line::Replaced(_) => state.last_body = None,
            _ => {}
        }
        let mut line = line;
        if let Line::Replaced(replaced) = &mut line {
            if let Err(error) = move_large_session(&mut state, &mut replaced.session) {
                let path = state.path.display().to_string();
                state.failed = Some(format!("cannot write the side file of {path}: {error}"));
                return;
            }
        }
        write_line(&mut state, &line);
        // The outcome ends the cassette under the same lock: a call still reading its answer
        // (the run ended while its events were on their way) cannot write after it.
        if matches!(line, Line::Outcome(_)) {
            state.closed = true;
        }
    }

    /// Appends a request line; its body is written as a change of the previous request's when
    /// it is one (see [`BodyDelta`]).
    pub fn write_request(&self, request: RequestParts, body: &Value) {
        let mut state = self.lock();
        let mut redacted;
        let mut body = body;
        if state.rules.has_paths() {
            redacted = body.clone();
            if replace_at_paths(&mut state, &mut redacted) {
                body = &redacted;
            }
        }
        let delta = state
            .last_body
            .as_ref()
            .and_then(|previous| BodyDelta::between(previous, body));
        let line = Line::Request {
            call: request.call,
            dt: request.dt,
            method: request.method,
            url: request.url,
            headers: request.headers,
            body: delta.is_none().then(|| RawJson::from_value(body)),
            delta,
        };
        state.last_body = Some(body.clone());
        write_line(&mut state, &line);
    }
}

/// Creates the folder `path` is to be written in.
fn prepare_dir(path: &Path) -> Result<(), CreateError> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|source| CreateError::Io {
            path: path.to_path_buf(),
            source,
        }),
        None => Ok(()),
    }
}

/// Sessions larger than this go to a side file instead of the header.
pub const LARGE_SESSION_BYTES: usize = 1 << 20;

/// Moves a large session (a resumed one in the header, or one a `replaced` line starts) out of
/// its line into `blobs/<sha256>.jsonl` beside the cassette (kept if it is there already: the
/// name is its content), scrubbed as the line would have been: what the user's patterns find,
/// then every known secret. The placeholders' lines follow the line that names the file.
fn move_large_session(state: &mut State, session: &mut SessionStart) -> std::io::Result<()> {
    let Some(content) = session.content.take_if(|c| c.len() > LARGE_SESSION_BYTES) else {
        return Ok(());
    };
    let rules = Arc::clone(&state.rules);
    let content = match rules.has_patterns() {
        true => rules
            .replace_matches(&content, &mut |found, reach| {
                rule_secret(state, found, reach)
            })
            .unwrap_or(content),
        false => content,
    };
    let content = state.secrets.replace(&content, MIN_SCRUBBED_LEN);
    let name = format!("blobs/{}.jsonl", crate::sha256_hex(content.as_bytes()));
    let file = state.path.parent().unwrap_or(Path::new(".")).join(&name);
    if !file.exists() {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&file, &content)?;
    }
    session.content_file = Some(name);
    Ok(())
}

/// `bytes` (a response body's) with what the user's patterns match replaced, when they are
/// text.
fn replace_patterns_in_bytes(state: &mut State, bytes: Vec<u8>) -> Vec<u8> {
    if !state.rules.has_patterns() {
        return bytes;
    }
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return bytes;
    };
    let rules = Arc::clone(&state.rules);
    match rules.replace_matches(text, &mut |found, reach| rule_secret(state, found, reach)) {
        Some(replaced) => replaced.into_bytes(),
        None => bytes,
    }
}

/// Replaces the values at the user's JSON paths in `body`; whether any was.
fn replace_at_paths(state: &mut State, body: &mut Value) -> bool {
    let rules = Arc::clone(&state.rules);
    rules.replace_at_paths(body, &mut |found, reach| rule_secret(state, found, reach))
}

/// The placeholder of `value`, which one of the user's rules found, replaced as far as `reach`
/// says; the first time, its `redaction` line is written.
fn rule_secret(state: &mut State, value: &str, reach: Reach) -> String {
    if value.is_empty() || crate::redact::rules::is_placeholder(value) {
        return value.to_owned();
    }
    let (placeholder, new) = match reach {
        Reach::Everywhere => state.secrets.placeholder_for(value),
        Reach::Here => state.secrets.local_placeholder(value),
    };
    if new {
        state.found.push(Line::Redaction {
            placeholder: placeholder.clone(),
            what: RULE_SOURCE.to_owned(),
        });
    }
    placeholder
}

/// `line` as text, with what the user's rules find in its values replaced.
fn line_text(state: &mut State, line: &Line) -> Result<String, serde_json::Error> {
    if !state.rules.searches_lines() || matches!(line, Line::Redaction { .. }) {
        return serde_json::to_string(line);
    }
    let mut value = serde_json::to_value(line)?;
    let rules = Arc::clone(&state.rules);
    rules.replace_at_paths(&mut value, &mut |found, reach| {
        rule_secret(state, found, reach)
    });
    rules.replace_in_value(&mut value, &mut |found, reach| {
        rule_secret(state, found, reach)
    });
    serde_json::to_string(&value)
}

fn write_line(state: &mut State, line: &Line) {
    if state.failed.is_some() || state.closed {
        return;
    }
    let text = match line_text(state, line) {
        Ok(text) => text,
        Err(error) => {
            state.failed = Some(format!("cannot encode a line: {error}"));
            return;
        }
    };
    let mut text = state.secrets.replace(&text, MIN_SCRUBBED_LEN);
    text.push('\n');
    // One write per line, straight to the file: a kill loses at most the line being written.
    if let Err(error) = state.file.file().write_all(text.as_bytes()) {
        state.failed = Some(format!("cannot write {}: {error}", state.path.display()));
    }
    for found in std::mem::take(&mut state.found) {
        write_line(state, &found);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::format::ProxyHeader;

    fn recorder(dir: &Path, secrets: &[(String, String)]) -> Recorder {
        let header = ProxyHeader {
            format: crate::PROXY_FORMAT_VERSION,
            features: Vec::new(),
            harness: "test".into(),
            upstream: "http://127.0.0.1:1".into(),
            ignore: Vec::new(),
            redactions: Vec::new(),
        };
        Recorder::create_proxy(&dir.join("c.jsonl"), &header, secrets).unwrap()
    }

    /// A model call's task may still be reading its answer when the run ends: what it records
    /// after the outcome line (a chunk, the body's end) would make the cassette unusable, so the
    /// outcome ends the cassette as it is written, before any other writer can add a line.
    #[test]
    fn no_line_follows_the_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = recorder(dir.path(), &[]);
        recorder.write(Line::chunk(1, 0, b"data: {}\n\n"));
        recorder.write(Line::Outcome(crate::format::RecordedOutcome {
            exit: 0,
            stdout: String::new(),
            session: None,
            events: None,
            stdout_text: None,
            events_text: None,
            session_text: None,
            updates_omitted: false,
        }));
        recorder.write(Line::chunk(1, 1, b"data: {}\n\n"));
        recorder.write(Line::End {
            call: 1,
            dt: 2,
            end: crate::format::RecordedEnd::Complete,
        });
        let text = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.starts_with(r#"{"type":"outcome""#), "{text}");
        assert!(recorder.is_closed());
    }

    #[test]
    fn a_chunk_that_does_not_decode_is_written_as_it_came() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = recorder(
            dir.path(),
            &[("sk-secret-0123456789".into(), "test".into())],
        );
        let damaged = Line::Chunk {
            call: 1,
            dt: 0,
            text: None,
            base64: Some("not base64!".into()),
        };
        recorder.write(damaged);
        recorder.write(Line::chunk(1, 1, b"key sk-secret-0123456789 here"));
        let text = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
        assert!(text.contains(r#""base64":"not base64!""#), "{text}");
        assert!(text.contains("key <<secret-1>> here"), "{text}");
        assert!(!text.contains("0123456789"), "{text}");
    }

    /// Each cookie's value is a secret; a `set-cookie`'s attributes after its first pair are
    /// kept, however the header's name is written, and a `cookie`'s later pairs are values.
    #[test]
    fn cookies_lose_their_values_and_set_cookies_keep_their_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = recorder(dir.path(), &[]);
        let set = [(
            "Set-Cookie".to_owned(),
            "session=abc123sessionvalue; Path=/; HttpOnly".to_owned(),
        )];
        let set = recorder.redact_response_headers(&set);
        assert_eq!(set[0].1, "session=<<secret-1>>; Path=/; HttpOnly");
        let sent = [(
            "cookie".to_owned(),
            "a=firstvalue1; Path=secondvalue2".to_owned(),
        )];
        let sent = recorder.redact_headers(&sent);
        assert_eq!(sent[0].1, "a=<<secret-2>>; Path=<<secret-3>>");
    }
}
