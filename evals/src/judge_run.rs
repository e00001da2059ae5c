//! Running a judge model as an effect like any other: one print-mode run of the agent command
//! with no tools and no session, in a trial's folders, live, recorded into a cassette of its
//! own or replayed from it. Shared by the `kind = "judge"` check and by `pi eval pairwise`.
//!
//! A replay whose recorded prompt is not the one this run would send (the rubric, the task or
//! an answer changed) is an error, never the old verdict; a recording is written to a
//! `.partial` file renamed into place only once the judge answered, so a run cut short never
//! leaves a cassette a later replay would take for a whole one.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::agent::{AgentCommand, AgentRun, CassetteUse, Invocation};
use crate::isolate::{Confinement, Isolation};
use crate::results::{Calls, JudgeSpend};
use crate::workspace::TrialDirs;

/// Where a judge's model call is answered from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JudgeCassette {
    /// From the provider; nothing is written.
    Live,
    /// From the provider, recorded into this cassette (any earlier one there is replaced).
    Record(PathBuf),
    /// From this cassette; a missing one is an error that says how to record it.
    Replay(PathBuf),
}

/// What a judge run needs: the agent command, the folders it runs in and its cassette.
#[derive(Debug)]
pub struct JudgeRun<'a> {
    pub agent: &'a AgentCommand,
    pub isolation: &'a Isolation,
    pub dirs: &'a TrialDirs,
    pub confinement: &'a Confinement,
    pub shell: &'a Path,
    pub cassette: JudgeCassette,
    /// The name of the judge's file in the trial's folder (each judge of a trial has its own).
    pub file: String,
    pub seed: u64,
    pub cancel: &'a Arc<AtomicBool>,
    /// What the judges took so far: every judge run adds to it, even one that failed.
    pub spent: &'a RefCell<JudgeSpend>,
}

/// Asks `model` the `prompt` as `run` says; the judge's answer, or why it could not be had.
pub fn run_judge(run: &JudgeRun<'_>, model: &str, prompt: &str) -> Result<String, String> {
    let (cassette, whole) = match &run.cassette {
        JudgeCassette::Live => (CassetteUse::Live, None),
        JudgeCassette::Record(whole) => {
            if let Some(parent) = whole.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            match std::fs::remove_file(whole) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot replace {}: {e}", whole.display())),
            }
            (CassetteUse::Record(partial(whole)), Some(whole))
        }
        JudgeCassette::Replay(whole) => {
            if !whole.is_file() {
                return Err(format!(
                    "no judge cassette at {}: record it with --record DIR (or --once DIR)",
                    whole.display()
                ));
            }
            (CassetteUse::Replay(whole.clone()), None)
        }
    };
    let sandbox = crate::agent_process::agent_sandbox(
        run.dirs,
        run.confinement,
        run.shell,
        &cassette,
        run.agent.replayer.is_some(),
        &run.file,
    )
    .map_err(|e| format!("cannot prepare the judge's sandbox: {e}"))?;
    let steps = [crate::suite::Step::Prompt(prompt.to_owned())];
    let ran = run.agent.run(
        &Invocation {
            steps: &steps,
            model,
            seed: run.seed,
            tools: Some(&[]),
            thinking: None,
            dirs: run.dirs,
            shell: Some(run.shell),
            cassette: &cassette,
            limits: &crate::outcome::Limits::default(),
            isolation: run.isolation,
            sandbox: &sandbox,
            options: &crate::agent_options::AgentOptions::default(),
        },
        run.cancel,
    );
    run.isolation
        .take_back(&sandbox)
        .map_err(|e| format!("cannot take back the trial's folders: {e}"))?;
    crate::agent_process::keep_recording(&sandbox)
        .map_err(|e| format!("cannot keep the judge's recording: {e}"))?;
    if ran.cancelled {
        return Err("the eval was cancelled".into());
    }
    let replayed = matches!(cassette, CassetteUse::Replay(_));
    run.spent.borrow_mut().add(&judge_spend(&ran, replayed));
    if let Some((_, why)) = crate::agent_process::process_status(&ran, replayed) {
        return Err(format!("the judge's run failed: {why}"));
    }
    if let Some(why) = ran.outcome.model_error() {
        return Err(format!("the judge's {why}"));
    }
    let asked = ran
        .outcome
        .messages
        .iter()
        .find(|m| m.get("role").and_then(serde_json::Value::as_str) == Some("user"))
        .map(|m| crate::judge::text_of(m.get("content").unwrap_or(&serde_json::Value::Null)));
    if asked.as_deref() != Some(prompt) {
        return Err(
            "the judge's cassette holds another prompt than this run's (the rubric, the task or the agent's answer changed): record it again".into(),
        );
    }
    if let (CassetteUse::Record(partial), Some(whole)) = (&cassette, whole) {
        std::fs::rename(partial, whole)
            .map_err(|e| format!("cannot keep the judge's recording: {e}"))?;
    }
    Ok(ran.outcome.final_text)
}

/// What a judge run took: its tokens and calls, its cost live or replayed as its trial's.
fn judge_spend(run: &AgentRun, replayed: bool) -> JudgeSpend {
    let outcome = &run.outcome;
    let (cost, replayed_cost) = if replayed {
        (0.0, outcome.cost)
    } else {
        (outcome.cost, 0.0)
    };
    JudgeSpend {
        usage: outcome.usage,
        cost,
        replayed_cost,
        calls: Calls {
            live: if replayed { 0 } else { outcome.responses },
            replayed: if replayed { outcome.responses } else { 0 },
        },
    }
}

/// Where a cassette is recorded until the recording is whole: `<cassette>.partial`.
pub(crate) fn partial(cassette: &Path) -> PathBuf {
    let mut name = cassette.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}
