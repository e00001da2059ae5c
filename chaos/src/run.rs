//! Running plans: one run of a recording under a plan with every invariant checked
//! ([`run_plan`]), the smallest plan that still fails ([`shrink`]), and many seeded runs of a
//! recording with each failure shrunk and reported with the command that reproduces it
//! ([`chaos_runs`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use pi_cassettes::read::{starting_session, InMemory};
use pi_core::agent::StepError;
use pi_core::agent_session::SessionError;
use pi_core::session::file::parse_session;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use pi_effects::driver::{drive, DriveError, InterpretError};
use pi_effects::run_config::build_machine;
use pi_effects::session::{SessionFile, SessionStore};

use crate::interpreter::ChaosInterpreter;
use crate::invariants::{Checker, Invariant, Violation};
use crate::plan::{PerturbationPlan, SplitMix};
use crate::recording::ChaosRecording;
use pi_providers::transport::poll_once;

/// What a run that kept every invariant did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Answers the run took.
    pub steps: usize,
    pub model_calls: usize,
    /// Inputs from outside the machine refused with Pi's error texts (a prompt while busy).
    pub refused: usize,
}

/// Runs `recording` once under `plan`, its session file in `dir` (a scratch directory of the
/// caller's; the file is removed afterwards), checking every invariant. A panic is caught and
/// reported as a violation.
pub fn run_plan(
    recording: &ChaosRecording,
    plan: &PerturbationPlan,
    dir: &Path,
) -> Result<RunStats, Vec<Violation>> {
    match catch_unwind(AssertUnwindSafe(|| run_unguarded(recording, plan, dir))) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(vec![Violation::new(
                Invariant::NoPanicNoContractError,
                format!("panic: {what}"),
            )])
        }
    }
}

fn run_unguarded(
    recording: &ChaosRecording,
    plan: &PerturbationPlan,
    dir: &Path,
) -> Result<RunStats, Vec<Violation>> {
    let config = &plan.config(&recording.config);
    let store = session_store(recording, dir)
        .map_err(|why| vec![Violation::new(Invariant::SessionFile, why)])?;
    let (mut machine, file) = build_machine(config, store)
        .map_err(|e| vec![Violation::new(Invariant::SessionFile, e.to_string())])?;
    // Nothing else writes the scratch file while the run goes.
    let mut file = file.held_open();
    let checker = Arc::new(Mutex::new(Checker::new(config.retry)));
    let mut io = ChaosInterpreter::new(recording, plan, Arc::clone(&checker));
    let mut stats = RunStats::default();
    let mut failure: Option<Violation> = None;
    let on_event = |event: &pi_core::event::Event| {
        checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .on_event(event)
    };
    // Each input from outside is driven as print mode and replays drive theirs, until the
    // session is idle; the chaos interpreter answers at once, so each drive is ready in one poll.
    while failure.is_none() {
        let Some(input) = io.next_outside() else {
            break;
        };
        match poll_once(drive(&mut machine, &mut io, &mut file, input, on_event)) {
            Some(Ok(driven)) => {
                for error in driven.refused {
                    match refusal(error) {
                        Ok(()) => stats.refused += 1,
                        Err(violation) => failure = failure.or(Some(violation)),
                    }
                }
            }
            // The input itself refused, or an answer that broke the contract.
            Some(Err(DriveError::Session(error))) => match refusal(error) {
                Ok(()) => stats.refused += 1,
                Err(violation) => failure = Some(violation),
            },
            Some(Err(error)) => failure = Some(drive_failure(error)),
            None => {
                failure = Some(Violation::new(
                    Invariant::Settles,
                    "the interpreter left a step pending",
                ))
            }
        }
    }
    stats.steps = io.steps();
    stats.model_calls = io.model_calls();
    drop(io);
    let mut checker = Arc::try_unwrap(checker)
        .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
        .unwrap_or_else(|shared| {
            std::mem::replace(
                &mut *shared.lock().unwrap_or_else(PoisonError::into_inner),
                Checker::new(config.retry),
            )
        });
    let violations = match failure {
        Some(violation) => {
            checker.record(violation);
            checker.finish()
        }
        None => {
            if let Err(violation) = check_session_file(&machine, &file) {
                checker.record(violation);
            }
            checker.finish()
        }
    };
    if let Some(path) = file.path() {
        let _ = std::fs::remove_file(path);
    }
    if violations.is_empty() {
        Ok(stats)
    } else {
        Err(violations)
    }
}

/// A refusal of an input from outside is Pi's behaviour (a prompt while busy); a contract
/// error is a bug.
fn refusal(error: SessionError) -> Result<(), Violation> {
    match error {
        SessionError::Agent(StepError::Contract(e)) => Err(Violation::new(
            Invariant::NoPanicNoContractError,
            e.to_string(),
        )),
        SessionError::Rejected(_) | SessionError::Agent(StepError::Rejected(_)) => Ok(()),
    }
}

fn drive_failure(error: DriveError) -> Violation {
    match error {
        DriveError::Session(e) => Violation::new(Invariant::NoPanicNoContractError, e.to_string()),
        DriveError::Interpret(InterpretError::Idle) => Violation::new(
            Invariant::Settles,
            "the session is busy and nothing can answer it",
        ),
        DriveError::Interpret(e) => Violation::new(Invariant::Settles, e.to_string()),
        stopped @ DriveError::Stopped(_) => Violation::new(Invariant::Settles, stopped.to_string()),
        DriveError::Store(e) => Violation::new(Invariant::SessionFile, e.to_string()),
    }
}

/// The file loads, holds the machine's entries, and gives the machine's context.
fn check_session_file(
    machine: &pi_core::agent_session::SessionMachine,
    file: &SessionFile,
) -> Result<(), Violation> {
    let fail = |why: String| Violation::new(Invariant::SessionFile, why);
    let tree = machine.tree();
    let Some(path) = file.path() else {
        return Ok(());
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(_) if !tree.has_conversation() => return Ok(()),
        Err(e) => return Err(fail(format!("cannot read the session file: {e}"))),
    };
    let parsed = parse_session(&text, &mut IdGenerator::new(0))
        .map_err(|e| fail(format!("the session file does not load: {e}")))?;
    if let Some(problem) = parsed.problems.first() {
        return Err(fail(format!(
            "line {} of the session file: {}",
            problem.line, problem.message
        )));
    }
    if parsed.entries.as_slice() != tree.entries() {
        return Err(fail(format!(
            "the file holds {} entries, the machine {}",
            parsed.entries.len(),
            tree.entries().len()
        )));
    }
    let loaded = SessionTree::from_entries(parsed.header, parsed.entries, true);
    let from_file = loaded.context().into_messages();
    let from_machine = tree.context().into_messages();
    if from_file != from_machine {
        return Err(fail(format!(
            "the file's context has {} messages, the machine's {}",
            from_file.len(),
            from_machine.len()
        )));
    }
    Ok(())
}

/// The session the recorded run started in, recreated in `dir`: a session kept in memory is
/// written here all the same (the file is what is checked), and a perturbed run's ids are drawn
/// from the seed, not given back from an imported file.
fn session_store(recording: &ChaosRecording, dir: &Path) -> Result<SessionStore, String> {
    starting_session(
        &recording.session,
        recording.session_content.as_deref(),
        None,
        &recording.config,
        dir,
        InMemory::Written,
    )
}

/// The smallest plan found that still fails, by removing one perturbation at a time while
/// the run still breaks an invariant; with its violations. `plan` must fail.
pub fn shrink(
    recording: &ChaosRecording,
    plan: &PerturbationPlan,
    violations: Vec<Violation>,
    dir: &Path,
) -> (PerturbationPlan, Vec<Violation>) {
    let (mut plan, mut violations) = (plan.clone(), violations);
    let mut i = 0;
    while i < plan.0.len() {
        let smaller = plan.without(i);
        match run_plan(recording, &smaller, dir) {
            Err(found) => {
                plan = smaller;
                violations = found;
            }
            Ok(_) => i += 1,
        }
    }
    (plan, violations)
}

/// A run that broke an invariant, shrunk.
#[derive(Clone, Debug)]
pub struct Failure {
    pub cassette: PathBuf,
    /// The seed of the whole chaos run and the failing run's number in it.
    pub seed: u64,
    pub run: usize,
    /// The plan drawn, and the smallest that still fails.
    pub plan: PerturbationPlan,
    pub shrunk: PerturbationPlan,
    pub violations: Vec<Violation>,
}

impl Failure {
    /// The command line that runs the shrunk plan again.
    pub fn command(&self) -> String {
        format!(
            "pi replay --chaos 1 --plan '{}' {}",
            self.shrunk,
            self.cassette.display()
        )
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "chaos run {} of {} (seed {}) broke an invariant",
            self.run,
            self.cassette.display(),
            self.seed
        )?;
        writeln!(f, "  plan:   {}", self.plan)?;
        writeln!(f, "  shrunk: {}", self.shrunk)?;
        for violation in &self.violations {
            writeln!(f, "  {violation}")?;
        }
        write!(f, "  reproduce: {}", self.command())
    }
}

/// What the runs of one recording found.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub runs: usize,
    pub steps: usize,
    pub failures: Vec<Failure>,
}

/// The plan of run `run` of a chaos run seeded `seed`: run 0 is unperturbed, so each
/// recording is also replayed as it was.
pub fn plan_for(recording: &ChaosRecording, seed: u64, run: usize) -> PerturbationPlan {
    if run == 0 {
        return PerturbationPlan::none();
    }
    let mut mix = SplitMix(seed ^ (run as u64).wrapping_mul(0xA076_1D64_78BD_642F));
    PerturbationPlan::generate(mix.next_u64(), &recording.shape())
}

/// `runs` runs of `recording` under seeded plans (or under `plan` each time, when given),
/// each failure shrunk. Session files go to `dir`.
pub fn chaos_runs(
    recording: &ChaosRecording,
    runs: usize,
    seed: u64,
    plan: Option<&PerturbationPlan>,
    dir: &Path,
) -> Summary {
    let mut summary = Summary::default();
    for run in 0..runs {
        let drawn = plan
            .cloned()
            .unwrap_or_else(|| plan_for(recording, seed, run));
        summary.runs += 1;
        match run_plan(recording, &drawn, dir) {
            Ok(stats) => summary.steps += stats.steps,
            Err(violations) => {
                let (shrunk, violations) = shrink(recording, &drawn, violations, dir);
                summary.failures.push(Failure {
                    cassette: recording.path.clone(),
                    seed,
                    run,
                    plan: drawn,
                    shrunk,
                    violations,
                });
            }
        }
    }
    summary
}
