//! A trial's agent process (or a judge's) as the runner starts it: what it may touch, where
//! its recording goes once it is done, and what its start and exit say about the run. Shared
//! by the runner and the judges, which run the agent command in a trial's folders too.

use std::path::Path;

use crate::agent::{AgentRun, CassetteUse};
use crate::isolate::{AgentSandbox, Confinement};
use crate::results::TrialStatus;
use crate::workspace::TrialDirs;

/// What the trial's agent process may touch (see `AgentSandbox`): its cassette is a file of
/// the trial's own folder that it sees at the cassette's place, so that the cassette folder
/// (the other trials' recordings) stays out of its reach; a recording is copied there when the
/// agent is done ([`keep_recording`]). `file` names that file: the trial's agent and each of
/// its judges have their own. `in_process` says a replay runs in this process (no agent
/// process reads the cassette).
pub(crate) fn agent_sandbox(
    dirs: &TrialDirs,
    confinement: &Confinement,
    shell: &Path,
    cassette: &CassetteUse,
    in_process: bool,
    file: &str,
) -> std::io::Result<AgentSandbox> {
    let trial_file = dirs.root.join(file);
    let placed = match cassette {
        CassetteUse::Record(path) => {
            std::fs::write(&trial_file, "")?;
            vec![(trial_file, path.clone(), true)]
        }
        CassetteUse::Replay(path) if !in_process => {
            std::fs::copy(path, &trial_file)?;
            vec![(trial_file, path.clone(), false)]
        }
        CassetteUse::Replay(_) | CassetteUse::Live => Vec::new(),
    };
    Ok(AgentSandbox {
        confinement: confinement.clone(),
        agent_dir: dirs.agent_dir.clone(),
        trial_root: dirs.root.clone(),
        readable: vec![shell.to_path_buf()],
        programs: Vec::new(),
        placed,
        network: !matches!(cassette, CassetteUse::Replay(_)),
    })
}

/// Copies what a confined agent recorded into the trial's own folder to the cassette's place.
/// An unconfined agent wrote the cassette's place itself and left the trial's file empty, as
/// does an agent that recorded nothing: then nothing is copied.
pub(crate) fn keep_recording(sandbox: &AgentSandbox) -> std::io::Result<()> {
    for (file, place, writable) in &sandbox.placed {
        if *writable && std::fs::metadata(file)?.len() > 0 {
            std::fs::copy(file, place)?;
        }
    }
    Ok(())
}

/// What the agent process's start and exit say; `None` when it ran to its end.
pub(crate) fn process_status(run: &AgentRun, replayed: bool) -> Option<(TrialStatus, String)> {
    if let Some(error) = run.start_error.as_ref().or(run.refused.as_ref()) {
        return Some((TrialStatus::Error, error.clone()));
    }
    let stderr = run.stderr.trim();
    match run.exit {
        Some(0) => None,
        Some(1) if replayed => Some((TrialStatus::Diverged, first_lines(stderr, 40))),
        Some(code) if replayed => Some((
            TrialStatus::Error,
            format!(
                "the cassette cannot be replayed (exit {code}): {}",
                first_lines(stderr, 10)
            ),
        )),
        // A run a limit interrupted ends as the interruption makes it end.
        _ if run.limit.is_some() => None,
        Some(code) => Some((
            TrialStatus::Error,
            format!("the agent exited with {code}: {}", first_lines(stderr, 10)),
        )),
        None => Some((
            TrialStatus::Error,
            format!(
                "the agent was killed by a signal: {}",
                first_lines(stderr, 10)
            ),
        )),
    }
}

fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().take(n).collect();
    if lines.is_empty() {
        "(nothing on stderr)".into()
    } else {
        lines.join("\n")
    }
}
