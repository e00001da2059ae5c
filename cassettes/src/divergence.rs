//! What a replay reports when this build does not do what the recording holds: the cassette,
//! the step and line, what was recorded and what was asked, as a line diff of their JSON.

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use pi_effects::driver::{DriveError, InterpretError};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::read::Cassette;

/// Where a replay parted from its recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DivergenceKind {
    /// The machine asked for another effect than the recorded one.
    Effect,
    /// A model call's HTTP request differs from the recorded one.
    Request,
    /// The front end gave another input, or waited where the recording went on.
    Input,
    /// The recorded bytes of a call do not decode to the recorded number of events.
    Stream,
    /// The session went idle where the recording went on.
    StoppedEarly,
    /// The replay did everything the recording did, but wrote other output.
    Output,
    /// The recording was cut off (the recording run was killed): the cassette cannot say
    /// what came next.
    EndsEarly,
    /// The cassette cannot be used as it is.
    Unusable,
}

/// A replay that parted from its recording, or a recording that cannot be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub cassette: PathBuf,
    pub kind: DivergenceKind,
    /// The step of the run (1-based: inputs and effects, in order).
    pub step: usize,
    /// The cassette line of what was expected.
    pub line: usize,
    /// What the recording holds, as JSON text.
    pub expected: String,
    /// What this build did, as JSON text.
    pub actual: String,
    /// How to record the run again.
    pub rerecord: Option<String>,
    /// For an output divergence: which output (stdout, the session file, the events).
    pub what: Option<String>,
}

impl std::error::Error for Divergence {}

impl Divergence {
    pub(crate) fn new(
        cassette: &Cassette,
        step: usize,
        line: usize,
        kind: DivergenceKind,
        expected: Value,
        actual: Value,
    ) -> Self {
        Divergence {
            cassette: cassette.path.clone(),
            kind,
            step,
            line,
            expected: pretty_json(&expected),
            actual: pretty_json(&actual),
            rerecord: rerecord_command(cassette),
            what: None,
        }
    }

    pub(crate) fn ends_early(cassette: &Cassette, step: usize, line: usize) -> Self {
        Divergence {
            cassette: cassette.path.clone(),
            kind: DivergenceKind::EndsEarly,
            step,
            line,
            expected: String::new(),
            actual: String::new(),
            rerecord: rerecord_command(cassette),
            what: None,
        }
    }

    /// A cassette that cannot be replayed as a whole (its session or configuration).
    pub fn unusable_cassette(cassette: &Cassette, what: String) -> Self {
        Divergence::unusable(cassette, 1, what)
    }

    pub(crate) fn unusable(cassette: &Cassette, line: usize, what: String) -> Self {
        Divergence {
            cassette: cassette.path.clone(),
            kind: DivergenceKind::Unusable,
            step: 0,
            line,
            expected: String::new(),
            actual: what,
            rerecord: None,
            what: None,
        }
    }

    /// Outputs that differ although every step matched: `what` (stdout, the session file),
    /// recorded and replayed, shown as a line diff.
    pub fn output(cassette: &Cassette, what: &str, expected: &str, actual: &str) -> Self {
        Divergence {
            cassette: cassette.path.clone(),
            kind: DivergenceKind::Output,
            step: cassette.last_line(),
            line: cassette.last_line(),
            expected: expected.to_owned(),
            actual: actual.to_owned(),
            rerecord: rerecord_command(cassette),
            what: Some(what.to_owned()),
        }
    }

    /// The divergence that stopped a run, when a replay stopped it.
    pub fn in_error(error: &DriveError) -> Option<&Divergence> {
        match error {
            DriveError::Interpret(InterpretError::Halted(halted)) => halted.downcast_ref(),
            _ => None,
        }
    }

    /// What stopped a replay of `cassette`: its divergence, or any other error as a difference
    /// of the run's output.
    pub fn of_run(error: &DriveError, cassette: &Cassette) -> Divergence {
        Divergence::in_error(error).cloned().unwrap_or_else(|| {
            Divergence::output(cassette, "result of the run", "", &error.to_string())
        })
    }

    /// Whether the cassette itself is at fault (cut off or unusable), not this build: `pi
    /// replay --check` exits 125 for these, so that `git bisect run` skips the commit.
    pub fn is_cassette_fault(&self) -> bool {
        matches!(
            self.kind,
            DivergenceKind::EndsEarly | DivergenceKind::Unusable
        )
    }

    /// The unified diff of expected against actual.
    pub fn diff(&self) -> String {
        line_diff(&self.expected, &self.actual)
    }
}

/// `value` as pretty JSON for a line diff. Long texts (a system prompt, a tool result) break at
/// their newlines, so a diff shows the line of the text that changed rather than the whole text.
pub fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_default()
        .replace("\\n", "\\n\n  \u{21aa} ")
}

/// Lines of a diff shown, context included: a request body can be tens of megabytes (of one
/// line, or of a million), and a report must stay readable and small whatever was sent.
pub const MAX_LINES: usize = 200;

/// Bytes of one shown line (a path, a diff line) before it is cut.
pub const MAX_LINE_BYTES: usize = 1000;

/// How long one diff may take before it settles for a coarser answer.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(50);

/// The unified diff of `expected` against `actual` by lines, three lines of context around each
/// change, at most [`MAX_LINES`] lines of at most [`MAX_LINE_BYTES`] bytes, then how many lines
/// were left out.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(expected, actual);
    let mut out = String::new();
    let mut shown = 0;
    let mut hidden = 0u64;
    for group in diff.grouped_ops(3) {
        for op in &group {
            for change in diff.iter_changes(op) {
                if shown == MAX_LINES {
                    hidden += 1;
                    continue;
                }
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let line = change.value().strip_suffix('\n').unwrap_or(change.value());
                let _ = writeln!(out, "{sign}{}", clip(line));
                shown += 1;
            }
        }
        if shown < MAX_LINES {
            out.push_str("  ...\n");
        }
    }
    if hidden > 0 {
        let _ = writeln!(out, "  ... {hidden} more lines not shown");
    }
    out
}

/// `text` cut to [`MAX_LINE_BYTES`] (at a character boundary), saying how many bytes were cut.
pub fn clip(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}… ({} more bytes)",
        &text[..end],
        text.len() - end
    ))
}

/// `pi --record FILE <the recorded command line>`, when the cassette names its command line.
fn rerecord_command(cassette: &Cassette) -> Option<String> {
    let args = cassette.header.command.as_ref()?;
    let mut words = vec![
        "pi".to_owned(),
        "--record".to_owned(),
        shell_word(&cassette.path.to_string_lossy()),
    ];
    words.extend(args.iter().map(|a| shell_word(a)));
    Some(words.join(" "))
}

/// `word` quoted for a POSIX shell when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = format!("{}:{}", self.cassette.display(), self.line);
        match self.kind {
            DivergenceKind::EndsEarly => write!(
                f,
                "{at}: the recording ends early, at step {} (the recording run was interrupted); it cannot say what came next",
                self.step
            )?,
            DivergenceKind::Unusable => write!(f, "{at}: {}", self.actual)?,
            _ => {
                let what = match self.kind {
                    DivergenceKind::Effect => "the machine asked for another effect",
                    DivergenceKind::Request => "the model request differs",
                    DivergenceKind::Input => "the run took another input",
                    DivergenceKind::Stream => "the recorded response decodes differently",
                    DivergenceKind::StoppedEarly => "the session stopped where the recording goes on",
                    _ => "the output differs",
                };
                let what = match &self.what {
                    Some(output) => format!("the {output} differs"),
                    None => what.to_owned(),
                };
                writeln!(f, "{at}: diverged at step {}: {what}", self.step)?;
                writeln!(f, "--- recorded\n+++ this build")?;
                write!(f, "{}", self.diff())?;
            }
        }
        if let Some(command) = &self.rerecord {
            write!(f, "\nto record it again: {command}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_diff_shows_at_most_its_lines_and_says_how_many_it_left_out() {
        let expected = "a\nb\nc\n";
        let actual: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let diff = line_diff(expected, &actual);
        assert_eq!(diff.lines().count(), MAX_LINES + 1, "{diff}");
        assert!(diff.ends_with("  ... 803 more lines not shown\n"), "{diff}");
        let small = line_diff("a\nb\n", "a\nc\n");
        assert_eq!(small, " a\n-b\n+c\n  ...\n");
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let cut = clip(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_LINE_BYTES / 2)));
        assert!(
            cut.ends_with(&format!("… ({} more bytes)", MAX_LINE_BYTES)),
            "{cut}"
        );
        assert_eq!(clip("short"), "short");
        let diff = line_diff("x\n", &format!("{}\n", "y".repeat(10_000)));
        assert!(diff.len() < 2 * MAX_LINE_BYTES, "{diff}");
        assert!(diff.contains(&format!("({} more bytes)", 10_000 - MAX_LINE_BYTES)));
    }
}
