//! Running the planned trials: each in its own folders, fanned out over `jobs` threads (rayon;
//! a trial's thread mostly waits on its agent process, so the same pool serves replayed
//! trials, which are CPU-bound, and live ones, which wait on a model), scored by its checks.
//! Results come back sorted whatever order the trials finish in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rayon::prelude::*;

use crate::agent::{AgentCommand, AgentRun, CassetteUse, Invocation};
use crate::agent_process::{agent_sandbox, keep_recording, process_status};
use crate::check::{CommandResult, RunCommand};
use crate::isolate::{Confinement, Isolation};
use crate::judge_run::{partial, run_judge, JudgeCassette, JudgeRun};
use crate::plan::TrialSpec;
use crate::results::{Calls, CheckResult, JudgeSpend, TrialContext, TrialResult, TrialStatus};
use crate::suite::Suite;
use crate::workspace::TrialDirs;

/// Where a run's model calls are answered from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Live,
    /// Live, each trial recorded under the folder.
    Record(PathBuf),
    /// Each trial replayed from its cassette under the folder (`None`: the folder its suite
    /// names).
    Replay(Option<PathBuf>),
    /// Replay where a trial's cassette exists, else live and recorded.
    Once(PathBuf),
}

impl Mode {
    /// `live`, `record`, `replay` or `once`.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Record(_) => "record",
            Mode::Replay(_) => "replay",
            Mode::Once(_) => "once",
        }
    }

    /// The cassette folder of a trial of `suite`.
    fn folder<'a>(&'a self, suite: &'a Suite) -> Option<&'a Path> {
        match self {
            Mode::Live => None,
            Mode::Replay(None) => suite.cassettes.as_deref(),
            Mode::Record(d) | Mode::Replay(Some(d)) | Mode::Once(d) => Some(d),
        }
    }
}

/// How trials run.
#[derive(Debug)]
pub struct RunOptions {
    pub agent: AgentCommand,
    pub mode: Mode,
    pub jobs: usize,
    pub isolation: Isolation,
    /// Keep each trial's folders here instead of removing them.
    pub keep: Option<PathBuf>,
    /// Where the user's `models.json` and `auth.json` are (`auth.json` is copied for the trials
    /// that call a model only).
    pub user_agent_dir: Option<PathBuf>,
    /// How many times an errored trial is run again (replays are not: they would err again).
    pub retry_errors: u32,
    /// Dollars of live model calls after which no new trial starts (the trials running then
    /// finish): the sum of the finished trials' `cost`.
    pub max_cost: Option<f64>,
}

/// Told of each trial as it starts and ends (a progress bar, a log line).
pub trait Progress: Sync {
    fn started(&self, key: &str);
    fn finished(&self, result: &TrialResult);
}

/// What a run carries over from the run it resumes, and where its finished trials go.
pub struct Ledger<'a> {
    /// The live dollars the trials kept from the resumed run spent: they count against
    /// `max_cost`, so that resuming never starts a fresh budget.
    pub spent: f64,
    /// Told of each finished trial before it counts as done (the run's journal writes it to
    /// the disk), from the trial's thread.
    pub record: &'a (dyn Fn(&TrialResult) + Sync),
}

impl std::fmt::Debug for Ledger<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("spent", &self.spent)
            .finish_non_exhaustive()
    }
}

/// Runs `specs`; the results of the trials that finished, sorted by suite, task, model and
/// trial. Trials still running
/// when `cancel` is set are stopped and left out, and no new one starts; nor does one once the
/// live cost spent (`ledger.spent` and the finished trials') reaches `options.max_cost`.
pub fn run(
    specs: &[TrialSpec<'_>],
    options: &RunOptions,
    progress: &dyn Progress,
    cancel: &Arc<AtomicBool>,
    ledger: &Ledger<'_>,
) -> Result<Vec<TrialResult>, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()?;
    // Trials' folders are removed on a thread of their own (see `TrialDirs::removed_by`).
    let (cleaner, finished) = mpsc::channel::<tempfile::TempDir>();
    let remover = std::thread::spawn(move || finished.into_iter().for_each(drop));
    let spent = Mutex::new(ledger.spent);
    let over_budget = || {
        options
            .max_cost
            .is_some_and(|max| *spent.lock().unwrap_or_else(PoisonError::into_inner) >= max)
    };
    let results: Vec<Option<TrialResult>> = pool.install(|| {
        specs
            .par_iter()
            .with_max_len(1)
            .map(|spec| {
                if cancel.load(Ordering::SeqCst) || over_budget() {
                    return None;
                }
                progress.started(&spec.key());
                let retries = match options.mode {
                    Mode::Replay(_) => 0,
                    _ => options.retry_errors,
                };
                let result = crate::retry::retried(retries, cancel, || {
                    run_trial(spec, options, cancel, &cleaner)
                })?;
                (ledger.record)(&result);
                *spent.lock().unwrap_or_else(PoisonError::into_inner) += result.cost;
                progress.finished(&result);
                Some(result)
            })
            .collect()
    });
    drop(cleaner);
    let _ = remover.join();
    let mut results: Vec<TrialResult> = results.into_iter().flatten().collect();
    // The order results files keep (merged shards come out the same).
    results.sort_by(|a, b| {
        (&a.suite, &a.task, &a.model, a.trial).cmp(&(&b.suite, &b.task, &b.model, b.trial))
    });
    Ok(results)
}

/// The cassette of a trial, relative to the cassette folder:
/// `<suite>/<task>/<model>/<trial>.jsonl`.
pub fn cassette_path(spec: &TrialSpec<'_>) -> PathBuf {
    PathBuf::from(&spec.suite.name)
        .join(&spec.task.id)
        .join(&spec.model)
        .join(format!("{}.jsonl", spec.trial))
}

/// One trial, start to score; `None` when it was cancelled.
fn run_trial(
    spec: &TrialSpec<'_>,
    options: &RunOptions,
    cancel: &Arc<AtomicBool>,
    cleaner: &Sender<tempfile::TempDir>,
) -> Option<TrialResult> {
    let task = spec.task;
    let relative = cassette_path(spec);
    let folder = options.mode.folder(spec.suite);
    // The agent runs in the trial's workspace: a relative folder would mean another place.
    let absolute = folder.map(|dir| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    // A recording goes to a `.partial` file, renamed to the cassette once the agent is done:
    // a run cut short never leaves a cassette that `--once` would take for a whole one.
    let cassette = match (&options.mode, absolute.as_deref()) {
        (Mode::Live, _) | (_, None) => CassetteUse::Live,
        (Mode::Record(_), Some(dir)) => CassetteUse::Record(partial(&dir.join(&relative))),
        (Mode::Replay(_), Some(dir)) => CassetteUse::Replay(dir.join(&relative)),
        (Mode::Once(_), Some(dir)) if dir.join(&relative).is_file() => {
            CassetteUse::Replay(dir.join(&relative))
        }
        (Mode::Once(_), Some(dir)) => CassetteUse::Record(partial(&dir.join(&relative))),
    };
    let mut result = TrialResult {
        suite: spec.suite.name.clone(),
        task: task.id.clone(),
        model: spec.model.clone(),
        trial: spec.trial,
        seed: spec.seed,
        status: TrialStatus::Error,
        score: 0.0,
        checks: Vec::new(),
        usage: Default::default(),
        cost: 0.0,
        replayed_cost: 0.0,
        calls: Calls::default(),
        judge: JudgeSpend::default(),
        turns: 0,
        wall_ms: 0,
        cassette: folder.map(|_| relative.to_string_lossy().into_owned()),
        reason: None,
        final_text: String::new(),
        transcript: Vec::new(),
        attempts: 1,
        earlier_errors: Vec::new(),
        tags: task.tags.clone(),
        metadata: task.metadata.clone(),
        context: TrialContext {
            tools: task.tools.clone(),
            ..TrialContext::default()
        },
    };
    if let CassetteUse::Replay(path) = &cassette {
        if !path.is_file() {
            result.reason = Some(format!(
                "no cassette at {}: record it with --record DIR (or --once DIR)",
                path.display()
            ));
            return Some(result);
        }
    }
    if let CassetteUse::Record(path) = &cassette {
        if let Some(parent) = path.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                result.reason = Some(format!("cannot create {}: {e}", parent.display()));
                return Some(result);
            }
        }
        // Recorded again: an earlier run's cassette must not outlive a recording that fails,
        // to be replayed later as this run's.
        if let Some(earlier) = absolute.as_deref().map(|dir| dir.join(&relative)) {
            match std::fs::remove_file(&earlier) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    result.reason = Some(format!("cannot replace {}: {e}", earlier.display()));
                    return Some(result);
                }
            }
        }
    }
    let name = spec.key().replace('/', "__");
    let dirs = match TrialDirs::prepare(
        &name,
        options.keep.as_deref(),
        task.fixture.as_deref(),
        options.user_agent_dir.as_deref(),
        !matches!(cassette, CassetteUse::Replay(_)),
    ) {
        Ok(dirs) => dirs.removed_by(cleaner.clone()),
        Err(e) => {
            result.reason = Some(e.to_string());
            return Some(result);
        }
    };
    if options.keep.is_some() {
        result.context.workspace = Some(dirs.workspace.to_string_lossy().into_owned());
    }
    let confinement = Confinement {
        workspace: dirs.workspace.clone(),
        temp: dirs.temp.clone(),
    };
    let shell = match options.isolation.shell_wrapper(&confinement, &dirs.root) {
        Ok(path) => path,
        Err(e) => {
            result.reason = Some(format!("cannot write the confined shell: {e}"));
            return Some(result);
        }
    };
    // The wrapper as Pi's own `shellPath` too, for agents that do not read `PI_TOOLS_SHELL`;
    // it replaces a suite's own shell, since confinement comes first.
    let mut settings = task.settings.clone();
    settings.insert(
        "shellPath".into(),
        shell.to_string_lossy().into_owned().into(),
    );
    if let Err(e) = dirs.write_settings(&settings) {
        result.reason = Some(e.to_string());
        return Some(result);
    }
    if let Some(file) = &task.agent.context_file {
        // Pi's global context file, read from the agent folder before the project's.
        if let Err(e) = std::fs::copy(file, dirs.agent_dir.join("AGENTS.md")) {
            result.reason = Some(format!("cannot copy {}: {e}", file.display()));
            return Some(result);
        }
    }
    if let Some(mcp) = task.agent.mcp_json() {
        // Pi's global mcp.json: the agent starts the task's servers from the agent folder.
        let text = format!("{mcp:#}\n");
        if let Err(e) = std::fs::write(dirs.agent_dir.join("mcp.json"), text) {
            result.reason = Some(format!("cannot write the agent's mcp.json: {e}"));
            return Some(result);
        }
    }
    let mut sandbox = match agent_sandbox(
        &dirs,
        &confinement,
        &shell,
        &cassette,
        options.agent.replays_in_process(&task.agent),
        TRIAL_CASSETTE,
    ) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            result.reason = Some(format!("cannot prepare the agent's sandbox: {e}"));
            return Some(result);
        }
    };
    sandbox.programs = task.agent.mcp_programs();
    let run = options.agent.run(
        &Invocation {
            steps: &task.steps,
            model: &spec.model,
            seed: spec.seed,
            tools: task.tools.as_deref(),
            thinking: task.thinking.as_deref(),
            dirs: &dirs,
            shell: Some(&shell),
            cassette: &cassette,
            limits: &task.limits,
            options: &task.agent,
            isolation: &options.isolation,
            sandbox: &sandbox,
        },
        cancel,
    );
    if let Err(e) = options.isolation.take_back(&sandbox) {
        result.reason = Some(format!("cannot take back the trial's folders: {e}"));
        return Some(result);
    }
    if let Err(e) = keep_recording(&sandbox) {
        result.reason = Some(format!("cannot keep the recording: {e}"));
        return Some(result);
    }
    if task.agent.mcp_json().is_some() {
        // The judges run Pi in the same agent folder: the task's servers are the agent's, not
        // theirs, so none of them starts again for a verdict.
        if let Err(e) = std::fs::remove_file(dirs.agent_dir.join("mcp.json")) {
            result.reason = Some(format!("cannot remove the agent's mcp.json: {e}"));
            return Some(result);
        }
    }
    if run.cancelled {
        return None;
    }
    let replayed = matches!(cassette, CassetteUse::Replay(_));
    fill_usage(&mut result, &run, replayed);
    result.status = match status_before_checks(&run, replayed) {
        Some((status, reason)) => {
            result.reason = Some(reason);
            status
        }
        None => {
            let run_command = |command: &str, timeout: Duration| {
                options
                    .isolation
                    .run(&confinement, command, timeout)
                    .map(|o| CommandResult {
                        exit: o.exit,
                        timed_out: o.timed_out,
                        output: o.output,
                    })
                    .map_err(|e| e.to_string())
            };
            let run_command: RunCommand<'_> = &run_command;
            // A judge that could not give its verdict makes the trial an error, not a failure.
            let judge_error = std::cell::RefCell::new(None::<String>);
            let judge_spent = std::cell::RefCell::new(JudgeSpend::default());
            result.checks = task
                .checks
                .iter()
                .enumerate()
                .map(|(i, check)| {
                    // The judge is live, recorded or replayed as its trial was.
                    let judge_cassette = absolute
                        .as_deref()
                        .map(|dir| crate::judge::cassette_path(&dir.join(&relative), i + 1));
                    let trial = JudgeRun {
                        agent: &options.agent,
                        isolation: &options.isolation,
                        dirs: &dirs,
                        confinement: &confinement,
                        shell: &shell,
                        cassette: match (&cassette, judge_cassette) {
                            (CassetteUse::Live, _) | (_, None) => JudgeCassette::Live,
                            (CassetteUse::Record(_), Some(whole)) => JudgeCassette::Record(whole),
                            (CassetteUse::Replay(_), Some(whole)) => JudgeCassette::Replay(whole),
                        },
                        file: format!("judge.{}.jsonl", i + 1),
                        seed: spec.seed,
                        cancel,
                        spent: &judge_spent,
                    };
                    let judge = |model: &str, prompt: &str| {
                        run_judge(&trial, model, prompt).inspect_err(|e| {
                            judge_error.borrow_mut().get_or_insert_with(|| e.clone());
                        })
                    };
                    check.evaluate(&run.outcome, &dirs.workspace, run_command, &judge)
                })
                .collect();
            add_judge_spend(&mut result, judge_spent.into_inner());
            if cancel.load(Ordering::SeqCst) && judge_error.borrow().is_some() {
                // A judge cut short by Ctrl-C: the trial is cancelled, as if its agent was.
                return None;
            }
            result.score = score(&result.checks);
            if let Some(error) = judge_error.into_inner() {
                result.score = 0.0;
                result.reason = Some(format!("the judge could not run: {error}"));
                TrialStatus::Error
            } else if run.limit.is_some() {
                // What the checks found is kept, but a run a limit stopped does not score.
                result.score = 0.0;
                result.reason = run.limit.clone();
                TrialStatus::Limit
            } else if result.score + 1e-9 >= task.threshold {
                TrialStatus::Passed
            } else {
                TrialStatus::Failed
            }
        }
    };
    if let (CassetteUse::Record(path), Some(dir), Some(_)) = (&cassette, &absolute, run.exit) {
        // The agent ended by itself, so its recording is whole; an errored one stays partial,
        // to be recorded again (by a retry, or the next `--once`) rather than replayed.
        let renamed = if path.is_file() && result.status != TrialStatus::Error {
            std::fs::rename(path, dir.join(&relative))
        } else {
            Ok(())
        };
        if let Err(e) = renamed {
            result.status = TrialStatus::Error;
            result.reason = Some(format!("cannot keep the recording: {e}"));
        }
    }
    Some(result)
}

/// The trial's copy of its cassette, in its own folder.
const TRIAL_CASSETTE: &str = "cassette.jsonl";

/// Tokens, cost, calls, turns, time and the transcript of a run.
fn fill_usage(result: &mut TrialResult, run: &AgentRun, replayed: bool) {
    let outcome = &run.outcome;
    result.usage = outcome.usage;
    result.turns = outcome.turns;
    result.wall_ms = u64::try_from(run.wall.as_millis()).unwrap_or(u64::MAX);
    if replayed {
        result.replayed_cost = outcome.cost;
        result.calls.replayed = outcome.responses;
    } else {
        result.cost = outcome.cost;
        result.calls.live = outcome.responses;
    }
    result.final_text = outcome.final_text.clone();
    result.transcript = outcome.messages.clone();
    result.context.compactions = outcome.compactions.clone();
}

/// Counts the judges' spending in the trial's totals (which `max_cost` and the summaries
/// sum), and keeps it apart too.
fn add_judge_spend(result: &mut TrialResult, judge: JudgeSpend) {
    result.usage.add(&judge.usage);
    result.cost += judge.cost;
    result.replayed_cost += judge.replayed_cost;
    result.calls.live += judge.calls.live;
    result.calls.replayed += judge.calls.replayed;
    result.judge = judge;
}

/// Whether the run ended in a way that says nothing about the model's work (it could not
/// start, crashed, diverged from its recording, or a model call failed for good, which Pi's
/// JSON mode exits 0 on); `None` when the checks decide.
fn status_before_checks(run: &AgentRun, replayed: bool) -> Option<(TrialStatus, String)> {
    process_status(run, replayed).or_else(|| {
        run.outcome
            .model_error()
            .map(|error| (TrialStatus::Error, error))
    })
}

/// The weighted share of checks passed; 1 when nothing is weighed.
fn score(checks: &[CheckResult]) -> f64 {
    // Folded from +0.0: an empty f64 sum is -0.0, which would print as "-0.00".
    let weigh = |passed_only: bool| {
        checks
            .iter()
            .filter(|c| c.passed || !passed_only)
            .fold(0.0, |sum, c| sum + c.weight)
    };
    let total = weigh(false);
    if total <= 0.0 {
        return if checks.iter().all(|c| c.passed) {
            1.0
        } else {
            0.0
        };
    }
    weigh(true) / total
}
