//! The bash tool's output buffer (Pi's `OutputAccumulator`), without the file: bytes arrive in
//! chunks, are decoded as UTF-8 across chunk boundaries (bad bytes become U+FFFD), and only a
//! rolling tail is kept, so a command printing gigabytes costs bounded memory. Once the output
//! is over budget the full bytes must be kept in a file: the accumulator says so and hands over
//! the raw chunks it held; writing them is the interpreter's job.

use super::truncate::{truncate_tail, Limits, TruncatedBy, Truncation};
use super::utf8::Utf8Stream;

/// A streaming output buffer.
#[derive(Clone, Debug)]
pub struct OutputAccumulator {
    limits: Limits,
    max_rolling_bytes: usize,
    decoder: Utf8Stream,
    /// Raw chunks not yet handed over for the full-output file.
    raw: Vec<Vec<u8>>,
    persisting: bool,
    tail: String,
    tail_starts_at_line: bool,
    total_raw_bytes: usize,
    total_bytes: usize,
    /// Newlines seen; the lines counted are these plus an unfinished last line, if any (an
    /// empty output has no line, and a final newline starts none: Pi 1.5.2's count).
    completed_lines: usize,
    open_line: bool,
    current_line_bytes: usize,
    finished: bool,
}

impl OutputAccumulator {
    /// A buffer with these budgets (Pi's defaults: `Limits::default()`).
    pub fn new(limits: Limits) -> Self {
        OutputAccumulator {
            limits,
            max_rolling_bytes: (limits.max_bytes * 2).max(1),
            decoder: Utf8Stream::default(),
            raw: Vec::new(),
            persisting: false,
            tail: String::new(),
            tail_starts_at_line: true,
            total_raw_bytes: 0,
            total_bytes: 0,
            completed_lines: 0,
            open_line: false,
            current_line_bytes: 0,
            finished: false,
        }
    }

    /// Adds a chunk of output; ignored once finished.
    pub fn append(&mut self, bytes: &[u8]) {
        if self.finished {
            return;
        }
        self.total_raw_bytes += bytes.len();
        let text = self.decoder.decode(bytes, false);
        self.add_text(&text);
        if !bytes.is_empty() {
            self.raw.push(bytes.to_vec());
        }
        if self.over_budget() {
            self.persisting = true;
        }
    }

    /// The output ended: a trailing incomplete sequence becomes U+FFFD.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let text = self.decoder.decode(&[], true);
        self.add_text(&text);
        if self.over_budget() {
            self.persisting = true;
        }
    }

    /// Whether the full output must be kept in a file (it is over a budget).
    pub fn needs_full_output(&self) -> bool {
        self.persisting
    }

    /// Raw chunks for the full-output file, in order, once it is needed (each handed over once).
    pub fn take_full_output_chunks(&mut self) -> Vec<Vec<u8>> {
        if self.persisting {
            std::mem::take(&mut self.raw)
        } else {
            Vec::new()
        }
    }

    /// The raw output held here: all of it while no full-output file was needed (what Pi 1.5's
    /// `readFullOutput` decodes then), else what has not been handed over yet.
    pub fn raw_output(&self) -> Vec<u8> {
        self.raw.concat()
    }

    /// Bytes of the last (unfinished) line.
    pub fn last_line_bytes(&self) -> usize {
        self.current_line_bytes
    }

    /// The tail to show and what was cut, counted over the whole output.
    pub fn snapshot(&self) -> Truncation {
        let text = if self.tail_starts_at_line {
            self.tail.as_str()
        } else {
            self.tail
                .split_once('\n')
                .map_or(self.tail.as_str(), |(_, rest)| rest)
        };
        let tail = truncate_tail(text, self.limits);
        let truncated =
            self.total_lines() > self.limits.max_lines || self.total_bytes > self.limits.max_bytes;
        let truncated_by = truncated.then(|| {
            tail.truncated_by
                .unwrap_or(if self.total_bytes > self.limits.max_bytes {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                })
        });
        Truncation {
            truncated,
            truncated_by,
            total_lines: self.total_lines(),
            total_bytes: self.total_bytes,
            ..tail
        }
    }

    fn over_budget(&self) -> bool {
        self.total_raw_bytes > self.limits.max_bytes
            || self.total_bytes > self.limits.max_bytes
            || self.total_lines() > self.limits.max_lines
    }

    fn total_lines(&self) -> usize {
        self.completed_lines + usize::from(self.open_line)
    }

    /// Adds decoded text to the counts and the rolling tail.
    fn add_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total_bytes += text.len();
        self.tail.push_str(text);
        if self.tail.len() > self.max_rolling_bytes * 2 {
            self.trim_tail();
        }
        match text.rfind('\n') {
            None => {
                self.current_line_bytes += text.len();
                self.open_line = true;
            }
            Some(last) => {
                self.completed_lines += text.matches('\n').count();
                self.current_line_bytes = text.len() - last - 1;
                self.open_line = self.current_line_bytes > 0;
            }
        }
    }

    fn trim_tail(&mut self) {
        if self.tail.len() <= self.max_rolling_bytes {
            return;
        }
        let mut start = self.tail.len() - self.max_rolling_bytes;
        while !self.tail.is_char_boundary(start) {
            start += 1;
        }
        // A window smaller than the last character (a budget of a byte or two) keeps that
        // character whole rather than nothing, as a slice of the original's string keeps its
        // last code units: otherwise whether a partial line is seen depends on how the
        // output was cut into chunks.
        if start == self.tail.len() {
            start = self.tail.char_indices().next_back().map_or(0, |(i, _)| i);
        }
        if start > 0 {
            self.tail_starts_at_line = self.tail.as_bytes()[start - 1] == b'\n';
        }
        self.tail.drain(..start);
    }
}
