//! Buffered stdout for JSONL: lines are written whole, `JSON.stringify`-compatible, and a closed
//! pipe ends output quietly instead of panicking. What a recorded or checked run writes is also
//! digested (SHA-256), so that a recording can hold, and a replay compare, what it printed.

use std::io::{BufWriter, Write};

use pi_cassettes::Recorder;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Standard output, line by line.
pub struct Stdout {
    out: BufWriter<Box<dyn Write + Send>>,
    closed: bool,
    /// Each JSON line goes out as soon as it is written (someone may be following the stream);
    /// a replay, which never waits, writes in large blocks instead.
    line_by_line: bool,
    /// Kept only when something will compare it (a recording, a check).
    digest: Option<Sha256>,
    /// The JSON line being written, reused: a replay writes hundreds of events.
    line: Vec<u8>,
    /// A recording's: lines are digested with its secrets replaced, as a replay (which sees
    /// only the placeholders) will print them.
    redact: Option<Recorder>,
}

impl std::fmt::Debug for Stdout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdout")
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Default for Stdout {
    fn default() -> Self {
        Stdout::new()
    }
}

impl Stdout {
    pub fn new() -> Self {
        Stdout::to(Box::new(std::io::stdout()), None)
    }

    /// Standard output whose digest is kept (a recorded run), of the lines as `recorder`
    /// redacts them.
    pub fn digesting(recorder: &Recorder) -> Self {
        Stdout {
            redact: Some(recorder.clone()),
            ..Stdout::to(Box::new(std::io::stdout()), Some(Sha256::new()))
        }
    }

    /// Output that goes nowhere but into the digest (checking a replay).
    pub fn discarded() -> Self {
        Stdout::to(Box::new(std::io::sink()), Some(Sha256::new()))
    }

    /// Output into `out` in large blocks, digested (an eval's in-process replay, which reads
    /// the events back).
    pub fn captured(out: Box<dyn Write + Send>) -> Self {
        Stdout {
            out: BufWriter::with_capacity(1 << 16, out),
            closed: false,
            line_by_line: false,
            digest: Some(Sha256::new()),
            line: Vec::new(),
            redact: None,
        }
    }

    fn to(out: Box<dyn Write + Send>, digest: Option<Sha256>) -> Self {
        Stdout {
            out: BufWriter::new(out),
            closed: false,
            line_by_line: true,
            digest,
            line: Vec::new(),
            redact: None,
        }
    }

    /// Standard output written in large blocks, for a run that never waits for anything (a
    /// replay): a write per event would cost more than the replay itself. Flushed at the end
    /// and before anything goes to stderr, as always.
    pub fn batched() -> Self {
        Stdout {
            out: BufWriter::with_capacity(1 << 16, Box::new(std::io::stdout())),
            closed: false,
            line_by_line: false,
            digest: None,
            line: Vec::new(),
            redact: None,
        }
    }

    /// SHA-256 of everything written so far, in lower-case hex; `None` when not kept.
    pub fn digest(&self) -> Option<String> {
        let digest = self.digest.clone()?.finalize();
        Some(pi_cassettes::hex(&digest))
    }

    /// One value as a JSON line, formatted as JavaScript formats it, written out at once (readers
    /// follow the stream live).
    pub fn json_line<T: Serialize + ?Sized>(&mut self, value: &T) {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        match pi_core::json::to_writer(&mut line, value) {
            Ok(()) => self.bytes_line(&line),
            Err(error) => eprintln!("cannot serialise output: {error}"),
        }
        self.line = line;
        if self.line_by_line {
            self.flush();
        }
    }

    /// One line of text.
    pub fn text_line(&mut self, text: &str) {
        self.bytes_line(text.as_bytes());
    }

    fn bytes_line(&mut self, line: &[u8]) {
        if let Some(digest) = &mut self.digest {
            match (&self.redact, std::str::from_utf8(line)) {
                (Some(recorder), Ok(text)) => digest.update(recorder.redact_text(text)),
                _ => digest.update(line),
            }
            digest.update(b"\n");
        }
        if self.closed {
            return;
        }
        if self.out.write_all(line).is_err() || self.out.write_all(b"\n").is_err() {
            self.closed = true;
        }
    }

    /// Writes out what is buffered (call before anything goes to stderr, and at the end).
    pub fn flush(&mut self) {
        if !self.closed && self.out.flush().is_err() {
            self.closed = true;
        }
    }
}
