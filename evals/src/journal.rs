//! The run's journal, `journal.jsonl` in its `--out` folder: what a run has finished, kept on
//! disk trial by trial, so that a `pi eval` killed outright (SIGKILL, out of memory, a power
//! cut), which writes no `results.json`, loses no finished trial: `pi eval --resume` rebuilds
//! the run from the journal and runs only the rest.
//!
//! The first line is the run (its `results.json` without trials); each later line is one
//! finished trial, appended before the trial counts as done: once `write` returns, the kernel
//! holds the line whatever becomes of the process. In a run that calls a model (live, record,
//! once), each line is also flushed to the disk (`fsync`) first, so a power cut does not lose
//! what was paid for; a replay's lines are not, since replaying a trial again costs nothing and
//! an fsync a trial would cost a trivial replayed suite a large share of its time.
//! A kill in the middle of a line leaves a last line that is cut short (or, after a power cut,
//! holds zeros): it is ignored, never fatal, and that trial runs again. A journal is started
//! whole (a temporary file renamed into place), so it always has its first line. An append-only
//! file costs one small write a trial, where rewriting `results.json` after each trial would
//! cost the whole file each time (quadratic in a run's trials and their transcripts).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use thiserror::Error;

use crate::results::{EvalResults, TrialResult, SCHEMA_VERSION};

/// The journal's name in the `--out` folder.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// Why a journal could not be read.
#[derive(Debug, Error)]
pub enum JournalError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// A line other than the last is not what it should be: the file was changed, not cut.
    #[error("{}:{line}: {source}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{}: empty: not a run's journal", path.display())]
    Empty { path: PathBuf },
    #[error(
        "{}: schema version {found} is newer than this build reads (up to {SCHEMA_VERSION})",
        path.display()
    )]
    TooNew { path: PathBuf, found: u32 },
}

/// A run's open journal; trials are appended from any thread.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    /// Whether each line is flushed to the disk before `append` returns.
    durable: bool,
}

impl Journal {
    /// Starts the journal in `folder` with `run` (whose trials are not written) and the trials
    /// `kept` from the run this one resumes, replacing any journal there. Its lines are
    /// flushed to the disk unless `run` is a replay.
    pub fn start(folder: &Path, run: &EvalResults, kept: &[TrialResult]) -> io::Result<Journal> {
        let path = folder.join(JOURNAL_FILE);
        let head = EvalResults {
            trials: Vec::new(),
            tasks: Vec::new(),
            models: Vec::new(),
            ..run.clone()
        };
        let durable = run.mode != "replay";
        let mut text = line(&head)?;
        for trial in kept {
            text.extend(line(trial)?);
        }
        let temp = folder.join(format!(".{JOURNAL_FILE}.{}.tmp", std::process::id()));
        let written = (|| -> io::Result<()> {
            let mut file = File::create(&temp)?;
            file.write_all(&text)?;
            if durable {
                file.sync_all()?;
            }
            fs::rename(&temp, &path)?;
            if durable {
                // The rename itself, made durable.
                File::open(folder)?.sync_all()?;
            }
            Ok(())
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written?;
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok(Journal {
            path,
            file: Mutex::new(file),
            durable,
        })
    }

    /// Appends `trial` as one line and returns once it is written (on the disk, for a run
    /// that calls a model).
    pub fn append(&self, trial: &TrialResult) -> io::Result<()> {
        let text = line(trial)?;
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(&text)?;
        if self.durable {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Removes the journal, once the run's `results.json` holds everything it held.
    pub fn finish(self) -> io::Result<()> {
        fs::remove_file(&self.path)
    }
}

/// Removes a journal left in `folder` by a run that was killed, once other results (a merge's)
/// replaced that run there: a later `--resume` must not take the killed run up again.
pub fn discard(folder: &Path) -> io::Result<()> {
    match fs::remove_file(folder.join(JOURNAL_FILE)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

/// `value` as one line of JSON (a JSON string escapes its line breaks), with its newline.
fn line(value: &impl serde::Serialize) -> io::Result<Vec<u8>> {
    let mut text = serde_json::to_vec(value).map_err(io::Error::other)?;
    text.push(b'\n');
    Ok(text)
}

/// The run the journal in `folder` holds, marked interrupted, with the trials that finished;
/// `None` when there is no journal (the run ended and wrote its `results.json`).
pub fn load(folder: &Path) -> Result<Option<EvalResults>, JournalError> {
    let path = folder.join(JOURNAL_FILE);
    let text = match fs::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(JournalError::Read { path, source }),
    };
    // Only the lines that end with a newline were written whole; of those, the last may
    // still be cut (a power cut can leave a line's place zeroed): it is ignored too.
    let whole: Vec<&[u8]> = text
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.ends_with(b"\n"))
        .collect();
    let parse_error = |line: usize| {
        let path = path.clone();
        move |source| JournalError::Parse { path, line, source }
    };
    let Some((head, trials)) = whole.split_first() else {
        return Err(JournalError::Empty { path });
    };
    let version = serde_json::from_slice::<serde_json::Value>(head)
        .ok()
        .and_then(|v| v.get("schemaVersion")?.as_u64())
        .and_then(|v| u32::try_from(v).ok());
    if let Some(found) = version.filter(|v| *v > SCHEMA_VERSION) {
        return Err(JournalError::TooNew { path, found });
    }
    let mut run: EvalResults = serde_json::from_slice(head).map_err(parse_error(1))?;
    for (i, trial) in trials.iter().enumerate() {
        match serde_json::from_slice::<TrialResult>(trial) {
            Ok(trial) => run.trials.push(trial),
            Err(_) if i + 1 == trials.len() => {}
            Err(source) => return Err(parse_error(i + 2)(source)),
        }
    }
    run.trials.sort_by(|a, b| {
        (&a.suite, &a.task, &a.model, a.trial).cmp(&(&b.suite, &b.task, &b.model, b.trial))
    });
    (run.tasks, run.models) = crate::score::summarize(&run.trials);
    run.progress.interrupted = true;
    Ok(Some(run))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::test_support::{outcomes, results};

    #[test]
    fn the_trials_appended_come_back_with_the_run() {
        for mode in ["replay", "live"] {
            appended_trials_come_back(mode);
        }
    }

    fn appended_trials_come_back(mode: &str) {
        let dir = tempfile::tempdir().unwrap();
        let mut run = results(outcomes("s", "t", "m", 3, 2));
        run.mode = mode.to_owned();
        let journal = Journal::start(dir.path(), &run, &run.trials[..1]).unwrap();
        for trial in &run.trials[1..] {
            journal.append(trial).unwrap();
        }
        let loaded = load(dir.path()).unwrap().unwrap();
        assert!(loaded.progress.interrupted);
        assert_eq!(loaded.trials, run.trials);
        assert_eq!((&loaded.tasks, &loaded.models), (&run.tasks, &run.models));
        journal.finish().unwrap();
        assert!(load(dir.path()).unwrap().is_none());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "no file left");
    }

    #[test]
    fn a_journal_cut_anywhere_loads_the_trials_written_whole_before_the_cut() {
        let dir = tempfile::tempdir().unwrap();
        let run = results(outcomes("s", "t", "m", 3, 1));
        let journal = Journal::start(dir.path(), &run, &[]).unwrap();
        let path = dir.path().join(JOURNAL_FILE);
        let head = fs::metadata(&path).unwrap().len();
        let mut ends = vec![head];
        for trial in &run.trials {
            journal.append(trial).unwrap();
            ends.push(fs::metadata(&path).unwrap().len());
        }
        let whole = fs::read(&path).unwrap();
        let head = usize::try_from(head).unwrap();
        for cut in head..=whole.len() {
            for tail in [&b""[..], b"\0\0\0\0", b"\n"] {
                fs::write(&path, [&whole[..cut], tail].concat()).unwrap();
                let loaded = load(dir.path()).unwrap().unwrap();
                // A newline right after a cut just before a line's own makes it whole again.
                let length = cut + usize::from(tail == b"\n");
                let finished = ends[1..]
                    .iter()
                    .filter(|end| usize::try_from(**end).unwrap() <= length)
                    .count();
                assert_eq!(loaded.trials[..], run.trials[..finished], "cut at {cut}");
            }
        }
    }

    #[test]
    fn a_broken_line_before_the_last_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = results(outcomes("s", "t", "m", 2, 1));
        let journal = Journal::start(dir.path(), &run, &run.trials).unwrap();
        drop(journal);
        let path = dir.path().join(JOURNAL_FILE);
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        fs::write(&path, format!("{}\n{{oops\n{}\n", lines[0], lines[2])).unwrap();
        let err = load(dir.path()).unwrap_err();
        assert!(matches!(err, JournalError::Parse { line: 2, .. }), "{err}");
        assert!(err.to_string().contains("journal.jsonl:2:"), "{err}");
        fs::write(&path, "").unwrap();
        assert!(matches!(
            load(dir.path()).unwrap_err(),
            JournalError::Empty { .. }
        ));
    }
}
