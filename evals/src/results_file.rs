//! Reading and writing `results.json`. Reading names the file and the line and column of what
//! is wrong, and refuses a newer schema with a message saying so (rather than a confusing
//! "missing field" from a reader that does not know the new layout). Writing never leaves a
//! half-written file where a reader, or a later comparison, could find it.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;
use thiserror::Error;

use crate::results::{EvalResults, SCHEMA_VERSION};

/// Why a results file could not be read.
#[derive(Debug, Error)]
pub enum ResultsError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// Not JSON, or not results JSON; `source` says what and where.
    #[error("{}: line {line}, column {column}: {}", path.display(), without_position(source))]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        source: serde_json::Error,
    },
    #[error("{}: no integer schemaVersion: not an eval results file", path.display())]
    NoVersion { path: PathBuf },
    #[error(
        "{}: schema version {found} is newer than this build reads (up to {SCHEMA_VERSION}); read it with a newer pi-evals",
        path.display()
    )]
    TooNew { path: PathBuf, found: u64 },
}

/// serde_json's message without its " at line L column C" tail, which the error already gives.
fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let tail = format!(" at line {} column {}", error.line(), error.column());
    message
        .strip_suffix(&tail)
        .map_or_else(|| message.clone(), str::to_owned)
}

/// Reads a `results.json`.
pub fn load(path: &Path) -> Result<EvalResults, ResultsError> {
    let text = fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let parse_error = |source: serde_json::Error| ResultsError::Parse {
        path: path.to_owned(),
        line: source.line(),
        column: source.column(),
        source,
    };
    // The version first, from the bare JSON tree, so a newer file is refused for what it is
    // whatever else its layout changed.
    let value: Value = serde_json::from_str(&text).map_err(parse_error)?;
    let version = value
        .get("schemaVersion")
        .and_then(Value::as_u64)
        .ok_or_else(|| ResultsError::NoVersion {
            path: path.to_owned(),
        })?;
    if version > u64::from(SCHEMA_VERSION) {
        return Err(ResultsError::TooNew {
            path: path.to_owned(),
            found: version,
        });
    }
    // Parsed again from the text (not from `value`) so errors keep their line and column.
    serde_json::from_str(&text).map_err(parse_error)
}

/// Writes `results` as pretty JSON with a trailing newline. The text goes to a temporary file
/// beside `path` that is then renamed over it, so `path` holds either the old file or the whole
/// new one, never a part.
pub fn write(path: &Path, results: &EvalResults) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(results).map_err(io::Error::other)?;
    text.push(b'\n');
    let name = path
        .file_name()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a file path", path.display()),
            )
        })?
        .to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(&text)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::test_support::{outcomes, results};

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let original = results(outcomes("s", "t", "m", 2, 1));
        write(&path, &original).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n") && text.contains("\n  \"schemaVersion\": 1,"));
        assert_eq!(load(&path).unwrap(), original);
        // Overwriting leaves no temporary file behind.
        write(&path, &original).unwrap();
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_file_from_before_the_resume_and_retry_fields_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let mut original = results(outcomes("s", "t", "m", 2, 1));
        original.progress.planned = Some(3);
        original.progress.interrupted = true;
        original.trials[0].attempts = 2;
        original.trials[0].earlier_errors = vec!["boom".into()];
        write(&path, &original).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        for added in ["interrupted", "planned", "attempts", "earlierErrors"] {
            assert!(text.contains(&format!("\"{added}\"")), "{added} written");
        }
        let mut old: Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("interrupted");
        old.as_object_mut().unwrap().remove("planned");
        for trial in old["trials"].as_array_mut().unwrap() {
            trial.as_object_mut().unwrap().remove("attempts");
            trial.as_object_mut().unwrap().remove("earlierErrors");
        }
        fs::write(&path, old.to_string()).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.progress, crate::results::RunProgress::default());
        assert!(loaded
            .trials
            .iter()
            .all(|t| t.attempts == 1 && t.earlier_errors.is_empty()));
    }

    #[test]
    fn the_trajectory_fields_round_trip_and_a_file_without_them_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        let mut original = results(outcomes("s", "t", "m", 2, 0));
        original.trials[0].context = crate::results::TrialContext {
            tools: Some(Vec::new()),
            workspace: Some("/kept/workspace".into()),
            compactions: vec![crate::results::Compaction {
                after_messages: 2,
                reason: "threshold".into(),
                summary: "S".into(),
                tokens_before: 9,
                first_kept_entry_id: "e1".into(),
            }],
        };
        write(&path, &original).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"tools\": []"),
            "no tools is not the default tools"
        );
        assert_eq!(load(&path).unwrap(), original);
        let trial: Value = serde_json::from_str::<Value>(&text).unwrap()["trials"][1].clone();
        for absent in ["tools", "workspace", "compactions"] {
            assert!(
                trial.get(absent).is_none(),
                "{absent} is left out when empty"
            );
        }
        let mut old: Value = serde_json::from_str(&text).unwrap();
        for field in ["tools", "workspace", "compactions"] {
            old["trials"][0].as_object_mut().unwrap().remove(field);
        }
        fs::write(&path, old.to_string()).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(
            loaded.trials[0].context,
            crate::results::TrialContext::default()
        );
    }

    #[test]
    fn newer_schema_is_refused_by_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.json");
        fs::write(&path, r#"{"schemaVersion": 2, "everything": "renamed"}"#).unwrap();
        let err = load(&path).unwrap_err();
        assert!(
            matches!(err, ResultsError::TooNew { found: 2, .. }),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains("results.json: schema version 2 is newer"),
            "{message}"
        );
    }

    #[test]
    fn errors_name_file_and_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.json");
        fs::write(&path, "{\n  \"schemaVersion\": 1,\n  oops\n}").unwrap();
        let err = load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                ResultsError::Parse {
                    line: 3,
                    column: 3,
                    ..
                }
            ),
            "{err}"
        );
        let message = err.to_string();
        assert!(message.contains("broken.json: line 3, column 3: key must be a string"));
        assert!(!message.contains("at line"), "{message}");

        fs::write(&path, "{\"schemaVersion\": 1,\n\"harness\": 5}").unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Parse { line: 2, .. }), "{err}");

        fs::write(&path, "[]").unwrap();
        assert!(matches!(
            load(&path).unwrap_err(),
            ResultsError::NoVersion { .. }
        ));

        let missing = dir.path().join("missing.json");
        let err = load(&missing).unwrap_err();
        assert!(matches!(err, ResultsError::Read { .. }));
        assert!(err.to_string().contains("missing.json"));
    }
}
