//! The user's own commands: `!command` in the editor and the RPC `bash` command (Pi's
//! `executeBash` over `core/bash-executor.ts`). Same shell as the bash tool, but the output is
//! cleaned for display (ANSI escapes, control characters and carriage returns removed, chunk by
//! chunk), a non-zero exit is an ordinary result, and an abort is a result marked cancelled.

use pi_core::tools::utf8::Utf8Stream;
use std::collections::VecDeque;
use std::path::PathBuf;

use pi_core::tools::truncate::{truncate_tail, Limits, DEFAULT_MAX_BYTES};
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::shell::{self, End, Event, FullOutputFile};
use super::ToolEnv;

/// The rolling buffer's budget, in UTF-16 units as Pi counts `string.length`.
const MAX_ROLLING_UNITS: usize = DEFAULT_MAX_BYTES * 2;

/// What a user command gave (Pi's `BashResult`), recorded as a `bashExecution` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashResult {
    /// The cleaned output, its tail when it was too long.
    pub output: String,
    /// The exit code; `None` when the command was cancelled or ended by a signal.
    pub exit_code: Option<i32>,
    /// The command was aborted.
    pub cancelled: bool,
    /// `output` is only the tail.
    pub truncated: bool,
    /// Where the complete (cleaned) output was kept, when it was long.
    pub full_output_path: Option<PathBuf>,
}

impl BashResult {
    /// The result [`to_json`](Self::to_json) describes (a recorded one); missing fields read
    /// as empty.
    pub fn from_json(value: &Value) -> Self {
        BashResult {
            output: value["output"].as_str().unwrap_or_default().to_owned(),
            exit_code: value["exitCode"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok()),
            cancelled: value["cancelled"].as_bool().unwrap_or(false),
            truncated: value["truncated"].as_bool().unwrap_or(false),
            full_output_path: value["fullOutputPath"].as_str().map(PathBuf::from),
        }
    }

    /// Pi's JSON (the RPC `bash` response's `data`): absent values omitted.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("output".into(), Value::String(self.output.clone()));
        if let Some(code) = self.exit_code {
            map.insert("exitCode".into(), Value::from(code));
        }
        map.insert("cancelled".into(), Value::Bool(self.cancelled));
        map.insert("truncated".into(), Value::Bool(self.truncated));
        if let Some(path) = &self.full_output_path {
            map.insert(
                "fullOutputPath".into(),
                Value::String(path.display().to_string()),
            );
        }
        Value::Object(map)
    }
}

/// Runs a user command in `env.cwd` (Pi: the session's working directory), with
/// `env.command_prefix` in front as Pi's `executeBash` adds it. Cleaned chunks go to `chunks`
/// as they arrive. Errors are only those of starting the command (shell or working directory
/// missing; not even those once `cancel` fired) and of writing the full-output file.
pub async fn execute_bash(
    env: &ToolEnv,
    command: &str,
    cancel: &CancellationToken,
    chunks: Option<&UnboundedSender<String>>,
) -> Result<BashResult, String> {
    let command = match env.command_prefix.as_deref() {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{command}"),
        _ => command.to_owned(),
    };
    let mut output = CleanOutput::new(env.temp_dir.clone());
    let end = match shell::start(env, &command, cancel.clone(), None) {
        Ok(None) => End::Aborted,
        Ok(Some(mut running)) => loop {
            match running.next().await {
                Event::Output(bytes) => {
                    let text = output.append(&bytes).await;
                    if let Some(chunks) = chunks {
                        // A listener that went away only stops the streaming.
                        let _ = chunks.send(text);
                    }
                }
                Event::Done(end) => break end,
            }
        },
        Err(error) if !cancel.is_cancelled() => return Err(error),
        Err(_) => End::Aborted,
    };
    let cancelled = end == End::Aborted || cancel.is_cancelled();
    let exit_code = match end {
        End::Exited(code) if !cancelled => code,
        // The user executor still reports no code for a signal, as 0.73.1's did.
        _ => None,
    };
    output.finish(exit_code, cancelled).await
}

/// The cleaned output of one command: a rolling list of chunks and the full-output file.
struct CleanOutput {
    decoder: Utf8Stream,
    chunks: VecDeque<String>,
    units: usize,
    raw_bytes: usize,
    temp_dir: PathBuf,
    file: Option<FullOutputFile>,
}

impl CleanOutput {
    fn new(temp_dir: PathBuf) -> Self {
        CleanOutput {
            decoder: Utf8Stream::default(),
            chunks: VecDeque::new(),
            units: 0,
            raw_bytes: 0,
            temp_dir,
            file: None,
        }
    }

    /// Cleans a chunk, keeps it, and returns it. The file starts once more than 50 KiB of raw
    /// output arrived; it holds the cleaned text.
    async fn append(&mut self, bytes: &[u8]) -> String {
        self.raw_bytes += bytes.len();
        let text = clean(&self.decoder.decode(bytes, false));
        if self.raw_bytes > DEFAULT_MAX_BYTES {
            self.ensure_file().await;
        }
        if let Some(file) = &mut self.file {
            file.write(text.as_bytes()).await;
        }
        self.units += utf16_len(&text);
        self.chunks.push_back(text.clone());
        while self.units > MAX_ROLLING_UNITS && self.chunks.len() > 1 {
            if let Some(removed) = self.chunks.pop_front() {
                self.units -= utf16_len(&removed);
            }
        }
        text
    }

    /// Opens the file with the chunks kept so far.
    async fn ensure_file(&mut self) {
        if self.file.is_some() {
            return;
        }
        // The user's own command is not replayed through the tools: a random name.
        let mut file = FullOutputFile::create(&self.temp_dir, None).await;
        for chunk in &self.chunks {
            file.write(chunk.as_bytes()).await;
        }
        self.file = Some(file);
    }

    /// The result: the tail within Pi's budgets (the rest kept in the file). A trailing
    /// incomplete character is dropped, as Pi never flushes its decoder.
    async fn finish(
        mut self,
        exit_code: Option<i32>,
        cancelled: bool,
    ) -> Result<BashResult, String> {
        let full: String = self.chunks.iter().map(String::as_str).collect();
        let tail = truncate_tail(&full, Limits::default());
        if tail.truncated {
            self.ensure_file().await;
        }
        let full_output_path = match self.file.take() {
            Some(file) => Some(file.close().await?),
            None => None,
        };
        Ok(BashResult {
            output: if tail.truncated { tail.content } else { full },
            exit_code,
            cancelled,
            truncated: tail.truncated,
            full_output_path,
        })
    }
}

fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// Pi's chunk cleaning: `stripAnsi`, then `sanitizeBinaryOutput` (control characters other than
/// tab, newline and carriage return, and U+FFF9–U+FFFB, removed), then every `\r` removed:
/// together, every control character but tab and newline goes.
fn clean(text: &str) -> String {
    strip_ansi(text)
        .chars()
        .filter(|&c| match c {
            '\t' | '\n' => true,
            '\u{0}'..='\u{1f}' | '\u{fff9}'..='\u{fffb}' => false,
            _ => true,
        })
        .collect()
}

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';

/// strip-ansi 7.2 with ansi-regex 6.6: every match of the pattern removed, scanning left to
/// right; texts without ESC or C1 CSI are returned as they are (its fast path, which also
/// leaves lone C1 string introducers alone).
fn strip_ansi(text: &str) -> String {
    if !text.contains([ESC, '\u{9b}']) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        match ansi_match(&text[i..]) {
            Some(len) if len > 0 => i += len,
            _ => {
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The length of the escape sequence at the start of `s`, trying ansi-regex's alternatives in
/// its order: Linux palette, OSC, control strings, CSI, other escapes.
fn ansi_match(s: &str) -> Option<usize> {
    linux_palette(s)
        .or_else(|| osc(s))
        .or_else(|| control_string(s))
        .or_else(|| csi(s))
        .or_else(|| escape(s))
}

/// String terminator: `ESC \` or U+009C.
fn string_terminator(s: &str) -> Option<usize> {
    if s.starts_with("\u{1b}\\") {
        Some(2)
    } else if s.starts_with('\u{9c}') {
        Some('\u{9c}'.len_utf8())
    } else {
        None
    }
}

/// `ESC ] (P<7 hex>|R)` with an optional BEL or ST.
fn linux_palette(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}]")?;
    let len = if let Some(hex) = body.strip_prefix('P') {
        let seven = hex.as_bytes().get(..7)?;
        seven.iter().all(u8::is_ascii_hexdigit).then_some(8)?
    } else if body.starts_with('R') {
        1
    } else {
        return None;
    };
    let end = 2 + len;
    let rest = &s[end..];
    let terminator = if rest.starts_with(BEL) {
        1
    } else {
        string_terminator(rest).unwrap_or(0)
    };
    Some(end + terminator)
}

/// Characters that end a control string's payload: CAN, SUB, ESC and the C1 controls.
fn is_string_control(c: char) -> bool {
    matches!(c, '\u{18}' | '\u{1a}' | ESC | '\u{80}'..='\u{9f}')
}

/// The payload length before the first character `stop` accepts.
fn payload(s: &str, stop: impl Fn(char) -> bool) -> usize {
    s.find(stop).unwrap_or(s.len())
}

/// `(ESC ]|U+009D) <payload without BEL> (BEL|ST)`.
fn osc(s: &str) -> Option<usize> {
    let start = if s.starts_with("\u{1b}]") {
        2
    } else if s.starts_with('\u{9d}') {
        '\u{9d}'.len_utf8()
    } else {
        return None;
    };
    let end = start + payload(&s[start..], |c| c == BEL || is_string_control(c));
    let rest = &s[end..];
    if rest.starts_with(BEL) {
        return Some(end + 1);
    }
    string_terminator(rest).map(|t| end + t)
}

/// DCS, SOS, PM, APC and title strings: `(ESC [PX^_k]|U+0090|U+0098|U+009E|U+009F) <payload> ST`.
fn control_string(s: &str) -> Option<usize> {
    let mut chars = s.chars();
    let start = match (chars.next()?, chars.next()) {
        (ESC, Some('P' | 'X' | '^' | '_' | 'k')) => 2,
        (c @ ('\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}'), _) => c.len_utf8(),
        _ => return None,
    };
    let end = start + payload(&s[start..], is_string_control);
    string_terminator(&s[end..]).map(|t| end + t)
}

/// `(ESC [|U+009B) [0x30-0x3F]* [0x20-0x2F]* [0x40-0x7E]`.
fn csi(s: &str) -> Option<usize> {
    let start = if s.starts_with("\u{1b}[") {
        2
    } else if s.starts_with('\u{9b}') {
        '\u{9b}'.len_utf8()
    } else {
        return None;
    };
    let bytes = s.as_bytes();
    let mut end = start;
    while bytes.get(end).is_some_and(|b| (0x30..=0x3f).contains(b)) {
        end += 1;
    }
    while bytes.get(end).is_some_and(|b| (0x20..=0x2f).contains(b)) {
        end += 1;
    }
    bytes
        .get(end)
        .is_some_and(|b| (0x40..=0x7e).contains(b))
        .then_some(end + 1)
}

/// `ESC ([0x20-0x2F]+ [0x30-0x7E] | [0-9A-PR-TZcf-oq-uy=><~|}])`.
fn escape(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&0x1b) {
        return None;
    }
    let mut end = 1;
    while bytes.get(end).is_some_and(|b| (0x20..=0x2f).contains(b)) {
        end += 1;
    }
    if end > 1 {
        return bytes
            .get(end)
            .is_some_and(|b| (0x30..=0x7e).contains(b))
            .then_some(end + 1);
    }
    let single = bytes.get(1).is_some_and(|&b| {
        matches!(b, b'0'..=b'9' | b'A'..=b'P' | b'R'..=b'T' | b'Z' | b'c' | b'f'..=b'o'
            | b'q'..=b'u' | b'y' | b'=' | b'>' | b'<' | b'~' | b'|' | b'}')
    });
    single.then_some(2)
}
