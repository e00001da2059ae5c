//! `pi export --atif SESSION [OUT]` and `pi eval … --atif DIR`: runs as ATIF trajectories
//! (`docs/atif.md`). The conversion is `pi_core::atif`; this module reads the session file or
//! the trials' transcripts, replaces this machine's credentials as a recording does, and
//! writes the JSON.

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use pi_core::atif::convert::{from_messages, from_session, Build, RunCompaction, RunSetup};
use pi_core::atif::Trajectory;
use pi_evals::results::{EvalResults, TrialResult};

/// The working directory a trial's trajectory names when its workspace was not kept: an
/// absolute path, as a session's is, in the shape of the temporary folder the trial ran in
/// (gone with the run, and different in every run).
const REMOVED_WORKSPACE: &str = "/tmp/pi-eval-trial/workspace";

/// `pi export`'s command line.
#[derive(Debug, Parser)]
#[command(
    name = "pi export",
    about = "Export a session's active branch as an ATIF trajectory (the HTML page is `pi --export FILE`)"
)]
struct ExportArgs {
    /// Write ATIF (the only format of this command).
    #[arg(long, required = true)]
    atif: bool,
    /// The session file (JSONL).
    session: PathBuf,
    /// Where to write; `-` for stdout. Default: `pi-session-<name>.atif.json` here.
    out: Option<PathBuf>,
}

/// Runs `pi export` with its arguments (the word `export` left out): 0 written, 1 the file
/// cannot be read, converted or written, 2 bad usage.
pub fn main(argv: &[String]) -> ExitCode {
    let args = match ExportArgs::try_parse_from(
        std::iter::once("pi export".to_owned()).chain(argv.iter().cloned()),
    ) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match export(&args.session, args.out.as_deref()) {
        Ok(Some(path)) => {
            println!("Exported to: {}", path.display());
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("Error: {error}");
            ExitCode::from(1)
        }
    }
}

/// Converts `session` and writes it to `out` (stdout for `-`); the path written, if a file.
fn export(session: &Path, out: Option<&Path>) -> Result<Option<PathBuf>, String> {
    let bytes =
        std::fs::read(session).map_err(|e| format!("cannot read {}: {e}", session.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let trajectory =
        from_session(&text, &build()).map_err(|e| format!("{}: {e}", session.display()))?;
    let json = to_json(&trajectory)?;
    if out == Some(Path::new("-")) {
        println!("{json}");
        return Ok(None);
    }
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_out(session));
    std::fs::write(&path, json + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Some(path))
}

/// `pi-session-<name>.atif.json`, in the working directory.
fn default_out(session: &Path) -> PathBuf {
    let name = session
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    PathBuf::from(format!("pi-session-{stem}.atif.json"))
}

/// Writes one trajectory per trial of `results` under `dir`, at the trial's key
/// (`suite/task/model/trial.json`, the cassette's place); the number written.
pub fn write_trials(dir: &Path, results: &EvalResults) -> Result<usize, String> {
    let build = build();
    for trial in &results.trials {
        let key = format!(
            "{}/{}/{}/{}",
            trial.suite, trial.task, trial.model, trial.trial
        );
        let path = trial_path(dir, &key)?;
        let mut trajectory = trial_trajectory(trial, &key, &build);
        if let Some(extra) = trajectory.extra.as_mut() {
            extra.insert(
                "eval".into(),
                serde_json::json!({
                    "status": trial.status, "score": trial.score, "seed": trial.seed,
                }),
            );
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let json = to_json(&trajectory)?;
        std::fs::write(&path, json + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(results.trials.len())
}

/// A trial's trajectory, from its transcript and what its agent was given: the task's tools,
/// the kept workspace (or [`REMOVED_WORKSPACE`]) and the compactions.
fn trial_trajectory(trial: &TrialResult, key: &str, build: &Build) -> Trajectory {
    let context = &trial.context;
    let compactions: Vec<RunCompaction> = context
        .compactions
        .iter()
        .map(|c| RunCompaction {
            after_messages: usize::try_from(c.after_messages).unwrap_or(usize::MAX),
            reason: c.reason.clone(),
            summary: c.summary.clone(),
            tokens_before: c.tokens_before,
            first_kept_entry_id: c.first_kept_entry_id.clone(),
        })
        .collect();
    let setup = RunSetup {
        cwd: context.workspace.as_deref().unwrap_or(REMOVED_WORKSPACE),
        tools: context.tools.as_deref(),
        compactions: &compactions,
    };
    let mut trajectory = from_messages(&trial.transcript, key, &setup, build);
    let pi = trajectory
        .extra
        .as_mut()
        .and_then(|e| e.get_mut("pi"))
        .and_then(serde_json::Value::as_object_mut);
    if let Some(pi) = pi {
        pi.insert("workspace_kept".into(), context.workspace.is_some().into());
    }
    trajectory
}

/// `dir/<key>.json`, refused when a part of the key is not a plain name (`..`, empty, a root).
fn trial_path(dir: &Path, key: &str) -> Result<PathBuf, String> {
    let relative = PathBuf::from(format!("{key}.json"));
    let plain = key.split('/').all(|part| !matches!(part, "" | "." | ".."))
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if !plain {
        return Err(format!(
            "the trial key {key:?} is not a plain relative path"
        ));
    }
    Ok(dir.join(relative))
}

/// The trajectory as pretty JSON, with this machine's credentials replaced.
fn to_json(trajectory: &Trajectory) -> Result<String, String> {
    let mut value = serde_json::to_value(trajectory)
        .map_err(|e| format!("cannot write the trajectory: {e}"))?;
    let credentials = crate::secrets::machine_credentials();
    let rules = crate::secrets::machine_rules()?;
    crate::secrets::redact_json(&mut value, &credentials, &rules);
    serde_json::to_string_pretty(&value).map_err(|e| format!("cannot write the trajectory: {e}"))
}

fn build() -> Build {
    Build {
        agent_version: crate::VERSION.to_owned(),
        docs: crate::setup::docs(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_key_must_be_a_plain_relative_path() {
        let dir = Path::new("out");
        assert_eq!(
            trial_path(dir, "smoke/task/mock/model/0").unwrap(),
            Path::new("out/smoke/task/mock/model/0.json")
        );
        for key in [
            "../up/t/m/0",
            "s/../../t/m/0",
            "/abs/t/m/0",
            "s//m/0",
            "s/./m/0",
        ] {
            assert!(trial_path(dir, key).is_err(), "{key}");
        }
    }
}
