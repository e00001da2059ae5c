//! The `bash` tool (Pi's `tools/bash.ts`): runs a command with the shell, streams its output as
//! partial results, keeps a tail within Pi's budgets and the complete output in a temp file once
//! it is over them, and ends with Pi's texts for non-zero exits, aborts and timeouts.
//!
//! Partial results follow Pi's rhythm: one empty result at the start, then the output at most
//! every 100 ms (the first chunk at once, later ones gathered by a timer), and a last one with
//! everything when the command ends.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_core::event::ToolResult;
use pi_core::json::format_number;
use pi_core::message::{ContentBlock, Extra};
use pi_core::tools::output::OutputAccumulator;
use pi_core::tools::truncate::{format_size, Limits, TruncatedBy, Truncation, DEFAULT_MAX_BYTES};
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::{sleep_until, Instant};

use super::shell::{self, End, Event, FullOutputFile};
use super::{num_arg, str_arg, ToolContext, ToolEnv};

/// Pi's `BASH_UPDATE_THROTTLE_MS`.
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);

/// Runs one call (Pi's `execute`): a failure, a non-zero exit, an abort or a timeout is a thrown
/// text that still carries the output.
pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let command = str_arg(args, "command").unwrap_or_default();
    let timeout = num_arg(args, "timeout");
    let command = match env.command_prefix.as_deref() {
        Some(prefix) if !prefix.is_empty() => format!("{prefix}\n{command}"),
        _ => command.to_owned(),
    };
    let key = super::shell::output_key(env.run, env.tool_call_id.as_deref());
    let mut output = Output::new(env.temp_dir.clone(), key, cx.updates.clone());
    output.send(Vec::new(), None);
    let started = Instant::now();
    let ended = execute(env, &command, timeout, cx, &mut output).await;
    let (snapshot, path) = output.finish().await?;
    let format =
        |empty: &str| format_output(&snapshot, path.as_deref(), output.last_line_bytes(), empty);
    let ended = ended?;
    let code = match ended {
        End::Aborted | End::TimedOut => return Err(thrown(ended, &format("").0, timeout)),
        End::Exited(code) => code.unwrap_or_default(),
        // Pi 1.5 reports a command a signal ended with the shell's 128 + signal.
        End::Signalled(signal) => 128 + signal,
    };
    let wall_time = (started.elapsed().as_millis() as f64 / 100.0).round() / 10.0;
    let raw = output.buffer.raw_output();
    let structured = structured_content(&raw, path.as_deref(), code, wall_time).await;
    let (mut text, details) = format("(no output)");
    if code != 0 {
        text = with_status(&text, &format!("Command exited with code {code}"));
    }
    let mut result = result(text, details);
    result.extra.insert("structuredContent".into(), structured);
    if code != 0 {
        // Pi 1.5 returns a failed command as an error result instead of throwing it.
        result.extra.insert("isError".into(), Value::Bool(true));
    }
    Ok(result)
}

/// The thrown text of an aborted or timed-out command, after its output.
fn thrown(ended: End, output: &str, timeout: Option<f64>) -> String {
    match ended {
        End::TimedOut => {
            let seconds = format_number(timeout.unwrap_or_default());
            with_status(
                output,
                &format!("Command timed out after {seconds} seconds"),
            )
        }
        _ => with_status(output, "Command aborted"),
    }
}

/// Pi 1.5's `structuredContent.output` limit (`STRUCTURED_OUTPUT_MAX_BYTES`).
const STRUCTURED_OUTPUT_MAX_BYTES: u64 = 1024 * 1024;

/// Pi 1.5's `structuredContent` of a finished command: the whole output (`raw`, or the
/// full-output file when there is one, its middle left out past 1 MiB), whether it was cut,
/// the exit code and the wall time in tenths of seconds.
async fn structured_content(raw: &[u8], file: Option<&Path>, code: i32, wall_time: f64) -> Value {
    let (output, truncated) = match file {
        None => (decode(raw), false),
        Some(file) => read_full_output(file).await,
    };
    let mut fields = Map::new();
    fields.insert("output".into(), Value::String(output));
    fields.insert("truncated".into(), Value::Bool(truncated));
    if let (true, Some(file)) = (truncated, file) {
        fields.insert("full_output_path".into(), path_json(file));
    }
    fields.insert("exit_code".into(), Value::from(code));
    fields.insert("wall_time_seconds".into(), Value::from(wall_time));
    Value::Object(fields)
}

/// What JavaScript's `TextDecoder().decode` makes of bytes: bad sequences become U+FFFD and a
/// leading byte order mark is dropped.
fn decode(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned()
}

/// `bytes` without a UTF-8 sequence its end cuts short.
fn without_incomplete_end(bytes: &[u8]) -> &[u8] {
    let from = bytes.len().saturating_sub(3);
    for at in (from..bytes.len()).rev() {
        let byte = bytes[at];
        if byte & 0xc0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        return if bytes.len() - at < needed {
            &bytes[..at]
        } else {
            bytes
        };
    }
    bytes
}

/// Pi 1.5's `readFullOutput`: the file's text, or past the limit its first and last halves
/// (cut at character boundaries) around a note of the bytes left out.
async fn read_full_output(file: &Path) -> (String, bool) {
    let Ok(bytes) = tokio::fs::read(file).await else {
        return (String::new(), false);
    };
    let size = bytes.len() as u64;
    if size <= STRUCTURED_OUTPUT_MAX_BYTES {
        return (decode(&bytes), false);
    }
    let head_bytes = (STRUCTURED_OUTPUT_MAX_BYTES / 2) as usize;
    let tail_bytes = STRUCTURED_OUTPUT_MAX_BYTES as usize - head_bytes;
    // A streaming decode holds back an incomplete sequence at the end of the head.
    let head = decode(without_incomplete_end(&bytes[..head_bytes]));
    let mut tail = &bytes[bytes.len() - tail_bytes..];
    while tail.first().is_some_and(|b| b & 0xc0 == 0x80) {
        tail = &tail[1..];
    }
    let omitted = size as usize - head_bytes - tail_bytes;
    let text = format!(
        "{head}\n\n[... {omitted} bytes omitted ...]\n\n{}",
        String::from_utf8_lossy(tail)
    );
    (text, true)
}

/// Pi's `createLocalBashOperations().exec`: the shell, the working directory check, the run.
async fn execute(
    env: &ToolEnv,
    command: &str,
    timeout: Option<f64>,
    cx: &ToolContext,
    output: &mut Output,
) -> Result<End, String> {
    let Some(mut running) = shell::start(env, command, cx.cancel.clone(), timeout)? else {
        return Ok(End::Aborted);
    };
    loop {
        let deadline = output.update_at;
        tokio::select! {
            event = running.next() => match event {
                Event::Output(bytes) => output.append(&bytes).await,
                Event::Done(end) => return Ok(end),
            },
            () = sleep_or_never(deadline) => output.emit(),
        }
    }
}

async fn sleep_or_never(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The output of one run: the rolling buffer, the full-output file, the throttled updates.
struct Output {
    buffer: OutputAccumulator,
    temp_dir: PathBuf,
    /// Names the full-output file (see `full_output_path`).
    key: Option<u64>,
    file: Option<FullOutputFile>,
    updates: UnboundedSender<ToolResult>,
    dirty: bool,
    last_update: Option<Instant>,
    update_at: Option<Instant>,
}

impl Output {
    fn new(temp_dir: PathBuf, key: Option<u64>, updates: UnboundedSender<ToolResult>) -> Self {
        Output {
            buffer: OutputAccumulator::new(Limits::default()),
            temp_dir,
            key,
            file: None,
            updates,
            dirty: false,
            last_update: None,
            update_at: None,
        }
    }

    async fn append(&mut self, bytes: &[u8]) {
        self.buffer.append(bytes);
        self.persist().await;
        self.schedule();
    }

    /// Hands the raw chunks to the full-output file once the buffer says it is needed.
    async fn persist(&mut self) {
        if !self.buffer.needs_full_output() {
            return;
        }
        let chunks = self.buffer.take_full_output_chunks();
        let file = match &mut self.file {
            Some(file) => file,
            None => self
                .file
                .insert(FullOutputFile::create(&self.temp_dir, self.key).await),
        };
        for chunk in chunks {
            file.write(&chunk).await;
        }
    }

    /// An update now if the last one is 100 ms old, else at that point.
    fn schedule(&mut self) {
        self.dirty = true;
        let due = self.last_update.map(|last| last + UPDATE_THROTTLE);
        match due {
            Some(due) if due > Instant::now() => {
                self.update_at.get_or_insert(due);
            }
            _ => {
                self.update_at = None;
                self.emit();
            }
        }
    }

    fn emit(&mut self) {
        self.update_at = None;
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let snapshot = self.buffer.snapshot();
        let mut details = Map::new();
        if snapshot.truncated {
            details.insert("truncation".into(), truncation_json(&snapshot));
        }
        if let Some(file) = &self.file {
            details.insert("fullOutputPath".into(), path_json(file.path()));
        }
        let text = snapshot.content;
        self.send(vec![ContentBlock::text(text)], Some(Value::Object(details)));
    }

    fn send(&self, content: Vec<ContentBlock>, details: Option<Value>) {
        // Nobody listening is not an error: updates are optional.
        let _ = self.updates.send(ToolResult {
            content,
            details,
            terminate: None,
            extra: Extra::new(),
        });
    }

    /// The end of the output: the last update, the final snapshot, the file closed.
    async fn finish(&mut self) -> Result<(Truncation, Option<PathBuf>), String> {
        self.buffer.finish();
        self.persist().await;
        self.emit();
        let snapshot = self.buffer.snapshot();
        let path = match self.file.take() {
            Some(file) => Some(file.close().await?),
            None => None,
        };
        Ok((snapshot, path))
    }

    fn last_line_bytes(&self) -> usize {
        self.buffer.last_line_bytes()
    }
}

/// The text and details Pi's `formatOutput` makes of a snapshot.
fn format_output(
    snapshot: &Truncation,
    path: Option<&Path>,
    last_line_bytes: usize,
    empty: &str,
) -> (String, Option<Value>) {
    let mut text = if snapshot.content.is_empty() {
        empty.to_owned()
    } else {
        snapshot.content.clone()
    };
    if !snapshot.truncated {
        return (text, None);
    }
    let shown = path.map_or_else(|| "undefined".to_owned(), |p| p.display().to_string());
    let end = snapshot.total_lines;
    let start = (end + 1).saturating_sub(snapshot.output_lines);
    if snapshot.last_line_partial {
        text.push_str(&format!(
            "\n\n[Showing last {} of line {end} (line is {}). Full output: {shown}]",
            format_size(snapshot.output_bytes as u64),
            format_size(last_line_bytes as u64),
        ));
    } else if snapshot.truncated_by == Some(TruncatedBy::Lines) {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {end}. Full output: {shown}]"
        ));
    } else {
        text.push_str(&format!(
            "\n\n[Showing lines {start}-{end} of {end} ({} limit). Full output: {shown}]",
            format_size(DEFAULT_MAX_BYTES as u64),
        ));
    }
    let mut details = Map::new();
    details.insert("truncation".into(), truncation_json(snapshot));
    if let Some(path) = path {
        details.insert("fullOutputPath".into(), path_json(path));
    }
    (text, Some(Value::Object(details)))
}

fn truncation_json(truncation: &Truncation) -> Value {
    serde_json::to_value(truncation).unwrap_or(Value::Null)
}

fn path_json(path: &Path) -> Value {
    Value::String(path.display().to_string())
}

/// Pi's `appendStatus`: the status after the output, or alone.
fn with_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

fn result(text: String, details: Option<Value>) -> ToolResult {
    ToolResult {
        content: vec![ContentBlock::text(text)],
        details,
        terminate: None,
        extra: Extra::new(),
    }
}
