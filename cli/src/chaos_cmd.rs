//! `pi replay --chaos N [--seed S] [--plan P] PATH...`: each cassette replayed as recorded
//! (byte-exact, as `--check` does), then N times under seeded perturbations with the loop's
//! invariants checked (`pi-chaos`), on all cores. A failure is shrunk to its fewest
//! perturbations and printed with the seed and the command that runs it again. Exit 0 when
//! every run keeps every invariant, 1 when one does not (or the unperturbed replay diverges),
//! 125 when a cassette cannot be used, 2 for a bad plan.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use pi_cassettes::Cassette;
use pi_chaos::{chaos_runs, ChaosRecording, PerturbationPlan, Summary};

use crate::cassette::UNUSABLE;
use crate::printable::printable;
use crate::replay_cmd::{check_one, files_and_jobs, runtime, shown, CheckVerdict, How, ReplayArgs};

/// How one cassette fared: its unperturbed replay's divergence, if it diverged, and its
/// chaos runs (they go on after a divergence: the invariants hold for any behaviour).
enum CassetteChaos {
    Ran {
        diverged: Option<String>,
        summary: Summary,
    },
    Unusable(String),
}

/// Runs `pi replay --chaos`; the exit code.
pub fn run(args: &ReplayArgs, how: &How) -> i32 {
    let runs = args.chaos.unwrap_or(0);
    let plan = match args
        .plan
        .as_deref()
        .map(str::parse::<PerturbationPlan>)
        .transpose()
    {
        Ok(plan) => plan,
        Err(error) => {
            eprintln!("--plan: {error}");
            return 2;
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(0))
    });
    let started = Instant::now();
    let (files, jobs) = match files_and_jobs(&args.paths, args.jobs) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<CassetteChaos>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for worker in 0..jobs {
            let (files, next, outcomes, plan) = (&files, &next, &outcomes, plan.as_ref());
            scope.spawn(move || {
                let runtime = runtime();
                let dir =
                    std::env::temp_dir().join(format!("pi-chaos-{}-{worker}", std::process::id()));
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(index) else {
                        break;
                    };
                    // A given plan reproduces a failure: the recorded replay is not in question.
                    let exact = match plan {
                        Some(_) => None,
                        None => Some(check_one(&runtime, path, how, index)),
                    };
                    let outcome = match exact {
                        Some(CheckVerdict::Unusable(why)) => CassetteChaos::Unusable(why),
                        Some(CheckVerdict::Diverged(divergence)) => {
                            chaos_one(path, runs, seed, plan, &dir, Some(divergence.to_string()))
                        }
                        _ => chaos_one(path, runs, seed, plan, &dir, None),
                    };
                    outcomes.lock().unwrap_or_else(PoisonError::into_inner)[index] = Some(outcome);
                }
                let _ = std::fs::remove_dir_all(&dir);
            });
        }
    });
    let outcomes = outcomes
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    report(&files, outcomes, runs, seed, jobs, started)
}

fn chaos_one(
    path: &std::path::Path,
    runs: usize,
    seed: u64,
    plan: Option<&PerturbationPlan>,
    dir: &std::path::Path,
    diverged: Option<String>,
) -> CassetteChaos {
    let recordings = match Cassette::load(path)
        .map_err(|e| e.to_string())
        .and_then(|c| sessions_of(c).map_err(|e| e.to_string()))
    {
        Ok(recordings) => recordings,
        Err(why) => return CassetteChaos::Unusable(why),
    };
    // Each session of a run that replaced its session is a machine of its own, perturbed on
    // its own (the replacements themselves are the front end's, which `--check` covers).
    let mut summary = Summary::default();
    for recording in &recordings {
        let ran = chaos_runs(recording, runs, seed, plan, dir);
        summary.runs += ran.runs;
        summary.steps += ran.steps;
        summary.failures.extend(ran.failures);
    }
    CassetteChaos::Ran { diverged, summary }
}

/// The chaos recordings of `cassette`'s sessions, in order.
fn sessions_of(
    cassette: Cassette,
) -> Result<Vec<std::sync::Arc<ChaosRecording>>, pi_chaos::RecordingError> {
    let mut recordings = vec![ChaosRecording::from_cassette(&cassette)?];
    let mut next = cassette.next_session();
    while let Some(session) = next {
        recordings.push(ChaosRecording::from_cassette(&session)?);
        next = session.next_session();
    }
    Ok(recordings)
}

fn report(
    files: &[PathBuf],
    outcomes: Vec<Option<CassetteChaos>>,
    runs: usize,
    seed: u64,
    jobs: usize,
    started: Instant,
) -> i32 {
    let (mut total_runs, mut total_steps, mut failures, mut diverged, mut unusable) =
        (0, 0, 0, 0, 0);
    for (path, outcome) in files.iter().zip(outcomes) {
        match outcome {
            Some(CassetteChaos::Ran {
                diverged: d,
                summary,
            }) => {
                if let Some(why) = d {
                    diverged += 1;
                    println!("DIVERGED  {} (the unperturbed replay)", shown(path));
                    eprintln!("{}\n", printable(&why));
                }
                total_runs += summary.runs;
                total_steps += summary.steps;
                if summary.failures.is_empty() {
                    println!(
                        "ok        {} ({} runs, {} steps)",
                        shown(path),
                        summary.runs,
                        summary.steps
                    );
                } else {
                    failures += summary.failures.len();
                    println!(
                        "FAILED    {} ({} of {} runs)",
                        shown(path),
                        summary.failures.len(),
                        summary.runs
                    );
                    // One report per shrunk plan: many seeds find the same failure.
                    let mut shown: Vec<(String, Vec<usize>)> = Vec::new();
                    for failure in &summary.failures {
                        let key = failure.shrunk.to_string();
                        match shown.iter_mut().find(|(k, _)| *k == key) {
                            Some((_, runs)) => runs.push(failure.run),
                            None => {
                                println!("{}", printable(&failure.to_string()));
                                shown.push((key, Vec::new()));
                            }
                        }
                    }
                    for (plan, runs) in shown.iter().filter(|(_, r)| !r.is_empty()) {
                        let mut listed: Vec<String> =
                            runs.iter().take(10).map(usize::to_string).collect();
                        if runs.len() > 10 {
                            listed.push("…".into());
                        }
                        println!(
                            "  (shrunk to `{plan}` in {} other runs too: {})",
                            runs.len(),
                            listed.join(", ")
                        );
                    }
                    println!();
                }
            }
            Some(CassetteChaos::Unusable(why)) => {
                unusable += 1;
                println!("UNUSABLE  {}", shown(path));
                eprintln!("{}\n", printable(&why));
            }
            None => unusable += 1,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "chaos: {} cassettes, {total_runs} runs ({runs} a session, seed {seed}), {total_steps} steps in {seconds:.2} s ({:.0} runs/s, {jobs} jobs): {failures} failed, {diverged} diverged, {unusable} unusable",
        files.len(),
        total_runs as f64 / seconds.max(1e-9),
    );
    if failures > 0 || diverged > 0 {
        1
    } else if unusable > 0 {
        UNUSABLE
    } else {
        0
    }
}
