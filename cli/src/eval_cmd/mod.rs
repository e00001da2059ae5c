//! `pi eval`: run suites of agent tasks and score them; merge shards; compare two runs, or have
//! a judge model compare their answers pair by pair (`pi eval pairwise`).
//!
//! `pi eval SUITE... [--model M]... [--trials K] [--jobs N] [--record DIR | --replay DIR |
//! --once DIR | --live] [--shard I/N] [--filter PATTERN]...` runs every trial with this
//! binary as the agent (or `--agent CMD`, any Pi-compatible command, for live runs), prints
//! the scores and writes `results.json`, `junit.xml`, `summary.md` and `report.html` into
//! `--out` (`eval-results` by default). Without a cassette flag, a suite that names its
//! cassettes is replayed from them; otherwise the run is live.
//!
//! Exit codes: 0 every trial ran (passed or failed) and the score is not under
//! `--fail-under`; 1 a trial errored or diverged from its cassette, or the score is under
//! `--fail-under`; 2 bad usage, an invalid suite or results file, or a run that calls a model
//! without bubblewrap and without `--isolate none`, or an `--out` folder another run holds; 3 the cost limit
//! (`--max-cost`) stopped the run before every trial ran; 130
//! interrupted (the finished trials' results are written, and `pi eval --resume OUT` runs the
//! rest).

mod in_process;
mod preflight;
mod progress;
mod resume;
mod summary;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use pi_evals::agent::AgentCommand;
use pi_evals::isolate::{Isolation, IsolationKind};
use pi_evals::out_lock::OutLock;
use pi_evals::plan::{self, Selection, Shard};
use pi_evals::results::{
    EvalResults, Invocation, RunProgress, Shards, SuiteRef, TrialStatus, SCHEMA_VERSION,
};
use pi_evals::runner::{self, Mode, RunOptions};
use pi_evals::suite::{self, Suite};

use progress::ProgressStyle;

/// `pi eval`'s flags.
#[derive(Debug, Parser)]
#[command(
    name = "pi eval",
    about = "Run eval suites of agent tasks and score them (see docs/evals.md)",
    after_help = OTHER_FORMS
)]
struct EvalArgs {
    /// Suite files (TOML).
    #[arg(required = true, value_name = "SUITE")]
    suites: Vec<PathBuf>,
    /// Run every task against this model instead of the suite's (`provider/id`). Repeatable.
    #[arg(long = "model", value_name = "MODEL")]
    models: Vec<String>,
    /// Trials per task and model, instead of the suite's.
    #[arg(long, value_name = "K")]
    trials: Option<u32>,
    /// Trials run at once (the number of cores by default).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Run live and record each trial into DIR/<suite>/<task>/<model>/<trial>.jsonl.
    #[arg(long, value_name = "DIR", group = "cassettes")]
    record: Option<PathBuf>,
    /// Replay each trial from DIR (tools run for real in the trial's workspace).
    #[arg(long, value_name = "DIR", group = "cassettes")]
    replay: Option<PathBuf>,
    /// Replay the trials recorded in DIR; run and record the others.
    #[arg(long, value_name = "DIR", group = "cassettes")]
    once: Option<PathBuf>,
    /// Run live even when a suite names its cassettes.
    #[arg(long, group = "cassettes")]
    live: bool,
    /// Run only shard I of N (zero-based); read from JOB_COMPLETION_INDEX (a Kubernetes
    /// Indexed Job) when given as `auto/N`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Run only the tasks whose `task` or `suite/task` matches (`*`, `?`); `!PATTERN` leaves
    /// out those it matches. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    filter: Vec<String>,
    /// Print the trials the run would make, one a line, and run nothing.
    #[arg(long, conflicts_with = "dry_run")]
    list: bool,
    /// Check the suites, the flags, the models and the cassettes as a run would, say what
    /// would run, and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// How trials' commands are confined: bwrap by default, which a live, `--record` or
    /// `--once` run needs to start (a replay without it runs unconfined, saying so); `none`
    /// runs them unconfined.
    #[arg(long, value_name = "bwrap|none")]
    isolate: Option<IsolationKind>,
    /// Where the reports go.
    #[arg(long, value_name = "DIR", default_value = "eval-results")]
    out: PathBuf,
    /// Also write each trial as an ATIF trajectory under DIR, at its key
    /// (`suite/task/model/trial.json`).
    #[arg(long, value_name = "DIR")]
    atif: Option<PathBuf>,
    /// Keep each trial's folders (workspace, agent dir) under DIR.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// The agent command for live runs: any Pi-compatible command, its words separated by
    /// spaces (`"node /opt/pi/dist/cli.js"`); this binary by default.
    #[arg(long, value_name = "CMD")]
    agent: Option<String>,
    /// Replay each trial in a `pi replay` process of its own instead of in this one (slower;
    /// the same result).
    #[arg(long)]
    replay_processes: bool,
    /// How progress is shown on stderr (a bar on a terminal, a line per trial otherwise).
    #[arg(long, value_enum, default_value = "auto")]
    progress: ProgressArg,
    /// Print nothing but the summary (same as --progress quiet).
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Exit 1 when a model's overall score is under this (0 to 1).
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<f64>,
    /// Run an errored trial again, up to N more times, waiting 1 s, 2 s, 4 s, ... between.
    #[arg(long, value_name = "N", default_value_t = 0)]
    retry_errors: u32,
    /// Start no new trial once the finished trials' live cost reaches USD dollars (exit 3;
    /// the whole run's limit: `pi eval --resume OUT --max-cost MORE` counts what was spent);
    /// replaces the suites' `max_cost`.
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ProgressArg {
    Auto,
    Bar,
    Plain,
    Quiet,
}

/// What `pi eval --help` says after the flags: each of [`SUBCOMMANDS`] on a line, then the
/// exit codes.
const OTHER_FORMS: &str = "Other forms:
  pi eval merge RESULTS.json... [--out DIR]    join the results of shards
  pi eval compare A.json B.json [--fail-on-regression] [--json] [--html FILE]
                                               what improved and what regressed (--html: side by side)
  pi eval pairwise A B --judge MODEL [--rubric TEXT] [--seed N] [--html FILE]
                                               which run answered better, by a judge
  pi eval convert humaneval PROBLEMS.jsonl[.gz] --out DIR
                                               a suite from HumanEval's problems
  pi eval --resume OUT [--max-cost USD]        finish an interrupted, killed or cost-stopped run

Exit codes: 0 every trial ran and the score is not under --fail-under; 1 a trial errored or diverged, or the score is under --fail-under; 2 bad usage, an invalid suite, or a live run without bubblewrap (see --isolate); 3 --max-cost stopped the run before every trial ran; 130 interrupted.";

/// Runs one form of `pi eval` on the words after its name; the exit code.
type Form = fn(&[String]) -> u8;

/// The first words `pi eval` takes for another form than a run, and what runs each (given the
/// words after it; it returns the exit code). Every one is in [`OTHER_FORMS`].
const SUBCOMMANDS: &[(&str, Form)] = &[
    ("merge", compare_cmd::merge),
    ("compare", compare_cmd::compare),
    ("convert", convert_cmd::main),
    ("pairwise", pairwise_cmd::main),
    ("--resume", resume::main),
];

/// Runs `pi eval` with `argv` (the words after `eval`).
pub fn main(argv: &[String]) -> ExitCode {
    if let Some(first) = argv.first() {
        if let Some((_, form)) = SUBCOMMANDS.iter().find(|(name, _)| name == first) {
            return ExitCode::from(form(&argv[1..]));
        }
    }
    let words = std::iter::once("pi eval".to_owned()).chain(argv.iter().cloned());
    let args = match EvalArgs::try_parse_from(words) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match run(args, argv.to_vec(), None, None) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("pi eval: {message}");
            ExitCode::from(2)
        }
    }
}

mod compare_cmd;
mod convert_cmd;
mod journaled;
mod pairwise_cmd;

/// Runs the trials `args` plan (those `previous`, an interrupted run's results, does not hold);
/// `words` is the command line, kept for `--resume`. `args.out` is claimed by `lock`, or once
/// the run is known to start (a run refused leaves no folder behind).
fn run(
    args: EvalArgs,
    words: Vec<String>,
    previous: Option<EvalResults>,
    lock: Option<OutLock>,
) -> Result<u8, String> {
    let suites: Vec<Suite> = args
        .suites
        .iter()
        .map(|path| suite::load(path).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    preflight::check_flags(args.trials, &args.models)?;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let selection = Selection {
        models: args.models.clone(),
        trials: args.trials,
        filters: args.filter.clone(),
        shard,
    };
    if let Some(score) = args.fail_under {
        if !(0.0..=1.0).contains(&score) {
            return Err("--fail-under takes a score between 0 and 1".into());
        }
    }
    if let Some(max) = args.max_cost {
        if !(max.is_finite() && max >= 0.0) {
            return Err("--max-cost takes a number of dollars, 0 or more".into());
        }
    }
    // The flag, else the smallest a suite sets.
    let max_cost = args
        .max_cost
        .or_else(|| suites.iter().filter_map(|s| s.max_cost).reduce(f64::min));
    let specs = plan::plan(&suites, &selection).map_err(|e| e.to_string())?;
    if args.list {
        summary::say(&preflight::list(&specs).join("\n"));
        return Ok(0);
    }
    let planned = u32::try_from(specs.len()).unwrap_or(u32::MAX);
    let (finished, specs) = match previous {
        Some(previous) => resume::rest(previous, &suites, specs)?,
        None => (Vec::new(), specs),
    };
    let mode = mode_of(&args, &suites)?;
    preflight::check_cassette_folders(&mode, &suites)?;
    let user_agent_dir = pi_evals::workspace::user_agent_dir();
    if !matches!(mode, Mode::Replay(_)) {
        let registry = preflight::registry(user_agent_dir.as_deref());
        preflight::check_models(&specs, &args.models, &registry, args.agent.is_some())?;
    }
    // Replays in this process start no agent process; every other trial does.
    let starts_agents = !matches!(mode, Mode::Replay(_)) || args.replay_processes;
    let agent = agent_of(&args)?;
    let isolation = isolation_for(
        args.isolate,
        &mode,
        starts_agents.then_some(&agent),
        args.keep.as_deref(),
    )?;
    if starts_agents {
        preflight::check_mcp_programs(&specs, &isolation)?;
    }
    if matches!(mode, Mode::Replay(_) | Mode::Once(_)) && args.agent.is_some() {
        return Err("--agent runs live trials only: a replay is this build's own".into());
    }
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let options = RunOptions {
        agent,
        mode: mode.clone(),
        jobs,
        isolation,
        keep: args.keep.clone(),
        user_agent_dir,
        retry_errors: args.retry_errors,
        max_cost,
    };
    if args.dry_run {
        let (lines, ok) = preflight::dry_run(&specs, &suites, &mode);
        summary::say(&lines.join("\n"));
        return Ok(u8::from(!ok));
    }
    let _lock = match lock {
        Some(lock) => lock,
        None => OutLock::acquire(&args.out).map_err(|e| e.to_string())?,
    };
    let style = match (args.quiet, args.progress) {
        (true, _) | (_, ProgressArg::Quiet) => ProgressStyle::Quiet,
        (_, ProgressArg::Bar) => ProgressStyle::Bar,
        (_, ProgressArg::Plain) => ProgressStyle::Plain,
        (_, ProgressArg::Auto) if std::io::stderr().is_terminal() => ProgressStyle::Bar,
        (_, ProgressArg::Auto) => ProgressStyle::Plain,
    };
    if style != ProgressStyle::Quiet {
        eprintln!(
            "{} {} ({}, isolation {}, {jobs} {})",
            specs.len(),
            preflight::plural(specs.len(), "trial"),
            describe_mode(&mode),
            options.isolation.kind(),
            preflight::plural(jobs, "job"),
        );
    }
    // The run as its journal starts it: no trials yet, and cut short until it ends.
    let head = EvalResults {
        schema_version: SCHEMA_VERSION,
        harness: env!("CARGO_PKG_VERSION").into(),
        suites: suites
            .iter()
            .map(|s| SuiteRef {
                name: s.name.clone(),
                path: s.path.display().to_string(),
                digest: s.digest.clone(),
            })
            .collect(),
        mode: mode.name().into(),
        isolation: options.isolation.kind().to_string(),
        shards: shard.map(|s| Shards {
            count: s.count,
            held: vec![s.index],
        }),
        trials: Vec::new(),
        tasks: Vec::new(),
        models: Vec::new(),
        progress: RunProgress {
            interrupted: true,
            planned: Some(planned),
            invocation: Some(Invocation {
                cwd: std::env::current_dir()
                    .map_err(|e| format!("cannot read the working folder: {e}"))?
                    .to_string_lossy()
                    .into_owned(),
                args: words,
            }),
            stopped: None,
        },
    };
    let progress = progress::Progress::new(style, specs.len());
    let cancel = Arc::new(AtomicBool::new(false));
    let _signals = progress::cancel_on_signals(Arc::clone(&cancel));
    let journal = journaled::Journaled::start(&args.out, &head, &finished, Arc::clone(&cancel))?;
    let ledger = runner::Ledger {
        spent: finished.iter().map(|t| t.cost).sum(),
        record: &|trial| journal.record(trial),
    };
    let mut trials =
        runner::run(&specs, &options, &progress, &cancel, &ledger).map_err(|e| e.to_string())?;
    progress.finish();
    let journal_failure = journal.failure();
    let cancelled = cancel.load(Ordering::SeqCst);
    let stopped = match max_cost {
        Some(max) if !cancelled && trials.len() < specs.len() => {
            Some(format!("cost limit ${max:.2} reached"))
        }
        _ => None,
    };
    trials.extend(finished);
    trials.sort_by(|a, b| {
        (&a.suite, &a.task, &a.model, a.trial).cmp(&(&b.suite, &b.task, &b.model, b.trial))
    });
    let (tasks, models) = pi_evals::score::summarize(&trials);
    let results = EvalResults {
        trials,
        tasks,
        models,
        progress: RunProgress {
            interrupted: cancelled,
            stopped: stopped.clone(),
            ..head.progress
        },
        ..head
    };
    summary::print(&results);
    // The cassette folder of each trial, for the report's links to the cassettes.
    let folders: std::collections::BTreeMap<&str, PathBuf> = suites
        .iter()
        .filter_map(|s| {
            let folder = match &mode {
                Mode::Live => None,
                Mode::Replay(None) => s.cassettes.clone(),
                Mode::Record(d) | Mode::Replay(Some(d)) | Mode::Once(d) => Some(d.clone()),
            };
            Some((s.name.as_str(), folder?))
        })
        .collect();
    write_reports(&args.out, &results, &|t| {
        folders.get(t.suite.as_str()).cloned()
    })?;
    journal.finish(&args.out)?;
    if let Some(failure) = journal_failure {
        return Err(format!(
            "{failure}: the run stopped; `pi eval --resume {}` runs the rest",
            args.out.display()
        ));
    }
    if let Some(dir) = &args.atif {
        let redacted = redacted(&results)?;
        let written = crate::atif_cmd::write_trials(dir, redacted.as_ref().unwrap_or(&results))?;
        summary::say(&format!("trajectories: {written} in {}", dir.display()));
    }
    if cancelled {
        eprintln!(
            "interrupted: the results of the trials that finished are written; `pi eval --resume {}` runs the rest",
            args.out.display()
        );
        return Ok(130);
    }
    if let Some(stopped) = stopped {
        eprintln!(
            "stopped: {stopped}: {} of {planned} planned trials ran; `pi eval --resume {} --max-cost USD` runs the rest with a higher limit (the ${:.2} spent counts against it)",
            results.trials.len(),
            args.out.display(),
            results.trials.iter().map(|t| t.cost).sum::<f64>(),
        );
        return Ok(3);
    }
    Ok(exit_code(&results, args.fail_under))
}

/// 1 when a trial errored or diverged, or a model scored under `fail_under`.
fn exit_code(results: &EvalResults, fail_under: Option<f64>) -> u8 {
    let broken = results
        .trials
        .iter()
        .any(|t| matches!(t.status, TrialStatus::Error | TrialStatus::Diverged));
    let under = fail_under.is_some_and(|floor| results.models.iter().any(|m| m.score < floor));
    u8::from(broken || under)
}

/// Writes the four reports into `out`, every credential of this machine that a transcript,
/// an output or a message holds replaced as a recording replaces it. `cassettes` gives the
/// folder a trial's cassette path is under, which the HTML report links to.
pub(crate) fn write_reports(
    out: &Path,
    results: &EvalResults,
    cassettes: &dyn Fn(&pi_evals::results::TrialResult) -> Option<PathBuf>,
) -> Result<(), String> {
    let redacted = redacted(results)?;
    let results = redacted.as_ref().unwrap_or(results);
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let write = |name: &str, text: String| {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    pi_evals::results_file::write(&out.join("results.json"), results)
        .map_err(|e| format!("cannot write {}: {e}", out.join("results.json").display()))?;
    write("junit.xml", pi_evals::report::junit::render(results))?;
    write("summary.md", pi_evals::report::markdown::render(results))?;
    let links = pi_evals::report::links::CassetteLinks::find(results, out, cassettes);
    write(
        "report.html",
        pi_evals::report::html::render_linked(results, &links),
    )?;
    summary::say(&format!(
        "reports: {0}/results.json, {0}/junit.xml, {0}/summary.md, {0}/report.html",
        out.display()
    ));
    Ok(())
}

/// `results` with this machine's credentials and what the user's redaction rules find
/// replaced, or `None` when it holds none.
fn redacted(results: &EvalResults) -> Result<Option<EvalResults>, String> {
    let credentials = crate::secrets::machine_credentials();
    let rules = crate::secrets::machine_rules()?;
    if credentials.is_empty() && rules.is_empty() {
        return Ok(None);
    }
    let mut value =
        serde_json::to_value(results).map_err(|e| format!("cannot redact the results: {e}"))?;
    if !crate::secrets::redact_json(&mut value, &credentials, &rules) {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("cannot redact the results: {e}"))
}

/// `I/N`, or `auto/N` with I from `JOB_COMPLETION_INDEX`.
fn parse_shard(text: &str) -> Result<Shard, String> {
    match text.strip_prefix("auto/") {
        Some(count) => {
            let index = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
                "--shard auto/N reads JOB_COMPLETION_INDEX, which is not set".to_owned()
            })?;
            format!("{}/{count}", index.trim()).parse()
        }
        None => text.parse(),
    }
}

fn mode_of(args: &EvalArgs, suites: &[Suite]) -> Result<Mode, String> {
    if let Some(dir) = &args.record {
        return Ok(Mode::Record(dir.clone()));
    }
    if let Some(dir) = &args.replay {
        return Ok(Mode::Replay(Some(dir.clone())));
    }
    if let Some(dir) = &args.once {
        return Ok(Mode::Once(dir.clone()));
    }
    if args.live || suites.iter().all(|s| s.cassettes.is_none()) {
        return Ok(Mode::Live);
    }
    if let Some(without) = suites.iter().find(|s| s.cassettes.is_none()) {
        return Err(format!(
            "suite `{}` names no cassettes while others do: pass --replay DIR, --once DIR or --live",
            without.name
        ));
    }
    Ok(Mode::Replay(None))
}

/// The confinement of a run's commands, and of its agent processes when it starts any
/// (`agent`): the one asked for; else bwrap, without which a run that calls a model does
/// not start (its commands are the model's, written now), while a replay, whose commands are
/// the recorded ones, runs them unconfined and says so.
fn isolation_for(
    requested: Option<IsolationKind>,
    mode: &Mode,
    agent: Option<&AgentCommand>,
    keep: Option<&Path>,
) -> Result<Isolation, String> {
    let detect = |requested| {
        let isolation = Isolation::detect(requested)?;
        if let Some(agent) = agent {
            isolation.check_agent_sandbox()?;
            let args: Vec<std::ffi::OsString> = agent.prefix.iter().map(Into::into).collect();
            isolation.check_agent_program(&agent.program, &args)?;
            if let Some(keep) = keep {
                isolation.check_agent_folder(keep)?;
            }
        }
        Ok::<_, pi_evals::isolate::IsolateError>(isolation)
    };
    if requested.is_some() {
        return detect(requested).map_err(|e| e.to_string());
    }
    match (detect(Some(IsolationKind::Bwrap)), mode) {
        (Ok(isolation), _) => Ok(isolation),
        (Err(e), Mode::Replay(_)) => {
            eprintln!("pi eval: running the replayed trials' commands unconfined: {e}");
            Ok(Isolation::none())
        }
        (Err(e), _) => Err(format!(
            "a {} run confines the model's commands and cannot here: {e}",
            mode.name()
        )),
    }
}

fn describe_mode(mode: &Mode) -> String {
    match mode {
        Mode::Live => "live".into(),
        Mode::Record(dir) => format!("live, recording into {}", dir.display()),
        Mode::Replay(Some(dir)) => format!("replayed from {}", dir.display()),
        Mode::Replay(None) => "replayed from the suites' cassettes".into(),
        Mode::Once(dir) => format!(
            "replayed from {} where recorded, else recorded",
            dir.display()
        ),
    }
}

fn agent_of(args: &EvalArgs) -> Result<AgentCommand, String> {
    match &args.agent {
        Some(command) => {
            let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            let (program, prefix) = words
                .split_first()
                .ok_or_else(|| "--agent needs a command".to_owned())?;
            Ok(AgentCommand {
                program: PathBuf::from(program),
                prefix: prefix.to_vec(),
                replayer: None,
            })
        }
        None => Ok(AgentCommand {
            program: std::env::current_exe()
                .map_err(|e| format!("cannot find this program: {e}"))?,
            prefix: Vec::new(),
            replayer: (!args.replay_processes)
                .then(|| Arc::new(in_process::InProcess) as Arc<dyn pi_evals::agent::Replayer>),
        }),
    }
}

#[cfg(test)]
mod help_tests {
    use clap::CommandFactory;

    use super::{EvalArgs, SUBCOMMANDS};

    /// The help `pi eval --help` prints.
    fn help() -> String {
        EvalArgs::command().render_long_help().to_string()
    }

    #[test]
    fn the_help_names_every_form_the_command_takes_on_a_line_of_its_own() {
        let help = help();
        for (name, _) in SUBCOMMANDS {
            let lines = help
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("pi eval {name} ")))
                .count();
            assert_eq!(lines, 1, "`pi eval {name}` on one line of:\n{help}");
        }
    }

    #[test]
    fn the_help_mentions_the_comparison_page() {
        let help = help();
        let compare = help
            .lines()
            .find(|l| l.trim_start().starts_with("pi eval compare "))
            .unwrap_or_default();
        assert!(compare.contains("--html FILE"), "{help}");
    }
}
