//! Buffered stdout for JSONL: lines are written whole, `JSON.stringify`-compatible, and a closed
//! pipe ends output quietly instead of panicking.

use std::io::{BufWriter, Stdout as StdStdout, Write};

use serde::Serialize;

/// Standard output, line by line.
#[derive(Debug)]
pub struct Stdout {
    out: BufWriter<StdStdout>,
    closed: bool,
}

impl Default for Stdout {
    fn default() -> Self {
        Stdout::new()
    }
}

impl Stdout {
    pub fn new() -> Self {
        Stdout {
            out: BufWriter::new(std::io::stdout()),
            closed: false,
        }
    }

    /// One value as a JSON line, formatted as JavaScript formats it, written out at once (readers
    /// follow the stream live).
    pub fn json_line<T: Serialize + ?Sized>(&mut self, value: &T) {
        match pi_core::json::to_string(value) {
            Ok(text) => self.text_line(&text),
            Err(error) => eprintln!("cannot serialise output: {error}"),
        }
        self.flush();
    }

    /// One line of text.
    pub fn text_line(&mut self, text: &str) {
        if self.closed {
            return;
        }
        if writeln!(self.out, "{text}").is_err() {
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
