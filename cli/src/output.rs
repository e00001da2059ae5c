//! Buffered stdout for JSONL: lines are written whole, `JSON.stringify`-compatible, and a closed
//! pipe ends output quietly instead of panicking. What a recorded or checked run writes is also
//! digested (`pi_cassettes::printed`, as the SDK digests a session it records), so that a
//! recording can hold, and a replay compare, what it printed; part of it is kept as text too,
//! so that a check can show how it differs. In text mode the events, which are not printed, are
//! digested the same way.

use std::io::{BufWriter, Write};

use pi_cassettes::printed::Digested;
use pi_cassettes::Recorder;
use serde::Serialize;

/// Standard output, line by line.
pub struct Stdout {
    out: BufWriter<Box<dyn Write + Send>>,
    closed: bool,
    /// Each JSON line goes out as soon as it is written (someone may be following the stream);
    /// a replay, which never waits, writes in large blocks instead.
    line_by_line: bool,
    /// Kept only when something will compare it (a recording, a check).
    digest: Option<Digested>,
    /// The events of a text-mode run, which stdout does not show (a recording, a check).
    events: Option<Digested>,
    /// The JSON line being written, reused: a replay writes hundreds of events.
    line: Vec<u8>,
    /// A recording's: lines are digested with its secrets replaced, as a replay (which sees
    /// only the placeholders) will print them.
    redact: Option<Recorder>,
    /// Lines written while held (see [`Stdout::hold`]).
    held: Option<Vec<Vec<u8>>>,
    /// What the run says on stderr is dropped: a check's or chaos run's replay, whose output
    /// goes nowhere either (see [`Stdout::say`]).
    quiet: bool,
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
    ///
    /// Both are kept also without `message_update` lines: when the model streams a secret in
    /// pieces, the recording rewrites them to pieces of its placeholder, which the run did not
    /// print, and its outcome holds these instead (see [`Stdout::digest`]).
    pub fn digesting(recorder: &Recorder) -> Self {
        Stdout {
            redact: Some(recorder.clone()),
            events: Some(Digested::both()),
            ..Stdout::to(Box::new(std::io::stdout()), Some(Digested::both()))
        }
    }

    /// Output that goes nowhere but into the digest, `message_update` lines left out (checking
    /// a replay whose recording left them out of its outcome).
    pub fn discarded_without_updates() -> Self {
        Stdout {
            events: Some(Digested::without_updates()),
            quiet: true,
            ..Stdout::to(Box::new(std::io::sink()), Some(Digested::without_updates()))
        }
    }

    /// What a digest of this output is: without its `message_update` lines when this is a
    /// recording in which the model streamed a secret in pieces.
    fn chosen<'d>(&self, digested: &'d Digested) -> &'d Digested {
        digested.chosen(self.redact.as_ref())
    }

    /// Says `text` on stderr as a line, after what stdout already holds; nothing when this
    /// output goes nowhere (a checked replay says only its verdict).
    pub fn say(&mut self, text: impl std::fmt::Display) {
        self.flush();
        if !self.quiet {
            let _ = writeln!(std::io::stderr(), "{text}");
        }
    }

    /// Output that goes nowhere but into the digest (checking a replay).
    pub fn discarded() -> Self {
        Stdout {
            events: Some(Digested::new()),
            quiet: true,
            ..Stdout::to(Box::new(std::io::sink()), Some(Digested::new()))
        }
    }

    /// Output into `out` in large blocks, digested (an eval's in-process replay, which reads
    /// the events back).
    pub fn captured(out: Box<dyn Write + Send>) -> Self {
        Stdout {
            out: BufWriter::with_capacity(1 << 16, out),
            closed: false,
            line_by_line: false,
            digest: Some(Digested::new()),
            events: None,
            line: Vec::new(),
            redact: None,
            held: None,
            quiet: false,
        }
    }

    fn to(out: Box<dyn Write + Send>, digest: Option<Digested>) -> Self {
        Stdout {
            out: BufWriter::new(out),
            closed: false,
            line_by_line: true,
            digest,
            events: None,
            line: Vec::new(),
            redact: None,
            held: None,
            quiet: false,
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
            events: None,
            line: Vec::new(),
            redact: None,
            held: None,
            quiet: false,
        }
    }

    /// SHA-256 of everything written so far, in lower-case hex; `None` when not kept.
    pub fn digest(&self) -> Option<String> {
        self.digest.as_ref().map(|d| self.chosen(d).hex())
    }

    /// Everything written so far (redacted as digested), when kept and not over the limit.
    pub fn text(&self) -> Option<&str> {
        self.chosen(self.digest.as_ref()?).text()
    }

    /// SHA-256 of the events given to [`Stdout::event_line`], when kept and some were given.
    pub fn events_digest(&self) -> Option<String> {
        let events = self.chosen(self.events.as_ref()?);
        events.used().then(|| events.hex())
    }

    /// The events given to [`Stdout::event_line`], as digested, when kept and not too long.
    pub fn events_text(&self) -> Option<&str> {
        let events = self.chosen(self.events.as_ref()?);
        events.used().then(|| events.text()).flatten()
    }

    /// An event of a text-mode run: not printed, digested (redacted as stdout is) as json mode
    /// would print it, when kept.
    pub fn event_line<T: Serialize + ?Sized>(&mut self, value: &T) {
        let Some(events) = &mut self.events else {
            return;
        };
        let mut line = Vec::new();
        if pi_core::json::to_writer(&mut line, value).is_err() {
            return;
        }
        events.redacted_line(self.redact.as_ref(), &line);
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

    /// One JSON line already spelled out (one too deep to build as a `Value`), written as
    /// [`Self::json_line`] writes its lines.
    pub fn spelled_json_line(&mut self, json: &str) {
        self.bytes_line(json.as_bytes());
        if self.line_by_line {
            self.flush();
        }
    }

    /// One line of text.
    pub fn text_line(&mut self, text: &str) {
        self.bytes_line(text.as_bytes());
    }

    fn bytes_line(&mut self, line: &[u8]) {
        if let Some(held) = &mut self.held {
            held.push(line.to_vec());
            return;
        }
        if let Some(digest) = &mut self.digest {
            digest.redacted_line(self.redact.as_ref(), line);
        }
        if self.closed {
            return;
        }
        if self.out.write_all(line).is_err() || self.out.write_all(b"\n").is_err() {
            self.closed = true;
        }
    }

    /// Keeps the lines written from now on until [`Stdout::release`] (RPC output that Pi prints
    /// after what comes later in the same read).
    pub fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// The lines held since [`Stdout::hold`]; lines are written out again from now on.
    pub fn release(&mut self) -> Vec<Vec<u8>> {
        self.held.take().unwrap_or_default()
    }

    /// Writes lines [`Stdout::release`] gave.
    pub fn write_lines(&mut self, lines: Vec<Vec<u8>>) {
        for line in lines {
            self.bytes_line(&line);
        }
        if self.line_by_line {
            self.flush();
        }
    }

    /// Writes out what is buffered (call before anything goes to stderr, and at the end).
    pub fn flush(&mut self) {
        if !self.closed && self.out.flush().is_err() {
            self.closed = true;
        }
    }
}
