//! What a replay reports when this build does not do what the recording holds: the cassette,
//! the step and line, what was recorded and what was asked, as a line diff of their JSON.

use std::fmt;
use std::path::PathBuf;

use pi_effects::driver::{DriveError, InterpretError};
use serde_json::Value;

use crate::read::Cassette;
pub use pi_cassette_format::diff::{
    clip, line_diff, pretty_json, DIFF_DEADLINE, MAX_LINES, MAX_LINE_BYTES,
};

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
        Divergence::unusable(cassette, cassette.header_line(), what)
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
                writeln!(f, "--- recorded\n+++ this run")?;
                write!(f, "{}", self.diff())?;
            }
        }
        if let Some(command) = &self.rerecord {
            write!(f, "\nto record it again: {command}")?;
        }
        Ok(())
    }
}
