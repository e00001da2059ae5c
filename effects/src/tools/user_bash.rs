//! The user's own commands: `!command` in the editor and the RPC `bash` command (Pi's
//! `executeBash` over `core/bash-executor.ts`). Same shell as the bash tool, but the output is
//! cleaned for display (ANSI escapes, control characters and carriage returns removed, chunk by
//! chunk), a non-zero exit is an ordinary result, and an abort is a result marked cancelled.

use pi_core::tools::utf8::Utf8Stream;
use std::collections::VecDeque;
use std::path::PathBuf;

use pi_core::tools::ansi::{split_incomplete_suffix, strip_ansi};
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
    /// The exit code (128 + the signal's number when a signal ended it); `None` when the
    /// command was cancelled.
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
                    send(chunks, text);
                }
                Event::Done(end) => break end,
            }
        },
        Err(error) if !cancel.is_cancelled() => return Err(error),
        Err(_) => End::Aborted,
    };
    let rest = output.flush().await;
    send(chunks, rest);
    let cancelled = end == End::Aborted || cancel.is_cancelled();
    let exit_code = match end {
        End::Exited(code) if !cancelled => code,
        // Pi 1.5 reports a command a signal ended with the shell's 128 + signal.
        End::Signalled(signal) if !cancelled => Some(128 + signal),
        _ => None,
    };
    output.finish(exit_code, cancelled).await
}

/// The output an extension's `exec` gave for a user command (its raw `onData` chunks, in
/// order), made what Pi's `executeBashWithOperations` makes of it: the cleaned chunks as they
/// would stream (empty ones left out) and the result, the full output kept in a file under
/// `temp_dir` when long. A cancelled run has no exit code. The error is the file's.
pub async fn exec_output(
    temp_dir: PathBuf,
    chunks: &[Vec<u8>],
    exit_code: Option<i32>,
    cancelled: bool,
) -> Result<(Vec<String>, BashResult), String> {
    let mut output = CleanOutput::new(temp_dir);
    let mut streamed = Vec::new();
    for chunk in chunks {
        streamed.push(output.append(chunk).await);
    }
    streamed.push(output.flush().await);
    streamed.retain(|text| !text.is_empty());
    let exit_code = if cancelled { None } else { exit_code };
    Ok((streamed, output.finish(exit_code, cancelled).await?))
}

/// A cleaned chunk to the listener, if any and if anything is left of it.
fn send(chunks: Option<&UnboundedSender<String>>, text: String) {
    if let Some(chunks) = chunks.filter(|_| !text.is_empty()) {
        // A listener that went away only stops the streaming.
        let _ = chunks.send(text);
    }
}

/// A command's raw output made Pi's display text chunk by chunk: bytes decoded as UTF-8 across
/// chunks, an unfinished escape sequence at a chunk's end held back for the next, then cleaned
/// as a whole output is (ANSI sequences and every control character but tab and newline
/// removed, as Pi does). An extension's `exec` streams through one as its chunks come.
#[derive(Debug, Default)]
pub struct ChunkCleaner {
    decoder: Utf8Stream,
    /// An unfinished escape sequence at the end of the last chunk, cleaned with the next.
    pending: String,
}

impl ChunkCleaner {
    /// The cleaned text of `bytes` (empty when nothing is left of it).
    pub fn append(&mut self, bytes: &[u8]) -> String {
        let text = std::mem::take(&mut self.pending) + &self.decoder.decode(bytes, false);
        let (complete, pending) = split_incomplete_suffix(&text);
        self.pending = pending.to_owned();
        clean(complete)
    }

    /// The output ended: what was held back, and a trailing incomplete character as U+FFFD.
    fn flush(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending) + &self.decoder.decode(&[], true);
        clean(&rest)
    }
}

/// The cleaned output of one command: a rolling list of chunks and the full-output file.
struct CleanOutput {
    cleaner: ChunkCleaner,
    chunks: VecDeque<String>,
    units: usize,
    raw_bytes: usize,
    temp_dir: PathBuf,
    file: Option<FullOutputFile>,
}

impl CleanOutput {
    fn new(temp_dir: PathBuf) -> Self {
        CleanOutput {
            cleaner: ChunkCleaner::default(),
            chunks: VecDeque::new(),
            units: 0,
            raw_bytes: 0,
            temp_dir,
            file: None,
        }
    }

    /// Cleans a chunk (an unfinished escape sequence at its end held back), keeps it, and
    /// returns it.
    async fn append(&mut self, bytes: &[u8]) -> String {
        self.raw_bytes += bytes.len();
        let text = self.cleaner.append(bytes);
        self.keep(text).await
    }

    /// The output ended: what was held back, and a trailing incomplete character as U+FFFD.
    async fn flush(&mut self) -> String {
        let text = self.cleaner.flush();
        self.keep(text).await
    }

    /// Keeps a cleaned text. The file starts once more than 50 KiB of raw output arrived; it
    /// holds the cleaned text.
    async fn keep(&mut self, text: String) -> String {
        if text.is_empty() {
            return text;
        }
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

    /// The result: the tail within Pi's budgets (the rest kept in the file).
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
