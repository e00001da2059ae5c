//! `pi eval --resume OUT`: finishes a run that was interrupted. The run's journal (a run killed
//! outright: see `pi_evals::journal`), else its `results.json`, holds the command line that
//! started it and the folder it ran in; the same command runs again there, and only the trials
//! it does not hold run: the finished ones are kept as they were, and what they spent live
//! counts against the run's cost limit, which `--max-cost` may raise. The folder is claimed
//! first, so a run still writing there is never resumed under it.

use std::collections::HashSet;
use std::path::Path;

use clap::Parser;
use pi_evals::out_lock::OutLock;
use pi_evals::plan::TrialSpec;
use pi_evals::results::{EvalResults, TrialResult};
use pi_evals::suite::Suite;

use super::EvalArgs;

/// Runs `pi eval --resume OUT` (`argv`: the words after `--resume`); the exit code.
pub fn main(argv: &[String]) -> u8 {
    match resume(argv) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("pi eval: {message}");
            2
        }
    }
}

fn resume(argv: &[String]) -> Result<u8, String> {
    let usage = "usage: pi eval --resume OUT [--max-cost USD] (the run's own arguments are in OUT/results.json)";
    let (out, max_cost) = match argv {
        [out] => (out, None),
        [out, flag, usd] if flag == "--max-cost" => (out, Some(usd.as_str())),
        [out, flag] => match flag.strip_prefix("--max-cost=") {
            Some(usd) => (out, Some(usd)),
            None => return Err(usage.into()),
        },
        _ => return Err(usage.into()),
    };
    if max_cost.is_some_and(|usd| !usd.parse::<f64>().is_ok_and(|v| v.is_finite() && v >= 0.0)) {
        return Err("--max-cost takes a number of dollars, 0 or more".into());
    }
    let out = std::path::absolute(out).map_err(|e| format!("{out}: {e}"))?;
    let lock = OutLock::acquire(&out).map_err(|e| e.to_string())?;
    let journal = out.join(pi_evals::journal::JOURNAL_FILE);
    let (file, previous) = match pi_evals::journal::load(&out).map_err(|e| e.to_string())? {
        Some(previous) => (journal, previous),
        None => {
            let file = out.join("results.json");
            let previous = pi_evals::results_file::load(&file).map_err(|e| e.to_string())?;
            (file, previous)
        }
    };
    let Some(invocation) = previous.progress.invocation.clone() else {
        return Err(format!(
            "{}: holds no command line to resume (written by an older pi eval, or by pi eval merge)",
            file.display()
        ));
    };
    // The run's paths are relative to the folder it ran in.
    std::env::set_current_dir(&invocation.cwd)
        .map_err(|e| format!("cannot resume in {}: {e}", invocation.cwd))?;
    let run_args = match max_cost {
        Some(usd) => with_max_cost(&invocation.args, usd),
        None => invocation.args,
    };
    let words = std::iter::once("pi eval".to_owned()).chain(run_args.iter().cloned());
    let args = EvalArgs::try_parse_from(words).map_err(|e| {
        format!(
            "{}: its command line no longer parses: {}",
            file.display(),
            e.to_string().lines().next().unwrap_or_default()
        )
    })?;
    if !same_folder(&args.out, &out) {
        return Err(format!(
            "{}: written by a run into {}, not this folder",
            file.display(),
            args.out.display()
        ));
    }
    super::run(args, run_args, Some(previous), Some(lock))
}

/// `args` with its cost limit replaced by `usd` (the new limit of the whole run, kept for the
/// next resume).
fn with_max_cost(args: &[String], usd: &str) -> Vec<String> {
    let mut kept = Vec::with_capacity(args.len() + 2);
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--max-cost" {
            words.next();
        } else if !word.starts_with("--max-cost=") {
            kept.push(word.clone());
        }
    }
    kept.extend(["--max-cost".to_owned(), usd.to_owned()]);
    kept
}

fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// What an interrupted run finished: its trials, and the specs still to run. Refused when a
/// suite changed since (its trials would not be the same trials).
pub fn rest<'a>(
    previous: EvalResults,
    suites: &[Suite],
    specs: Vec<TrialSpec<'a>>,
) -> Result<(Vec<TrialResult>, Vec<TrialSpec<'a>>), String> {
    for suite in suites {
        let before = previous.suites.iter().find(|s| s.name == suite.name);
        if before.is_some_and(|s| s.digest != suite.digest) {
            return Err(format!(
                "suite `{}` ({}) changed since the run was interrupted: its finished trials are not this suite's; start a new run",
                suite.name,
                suite.path.display()
            ));
        }
    }
    let done: HashSet<String> = previous
        .trials
        .iter()
        .map(|t| format!("{}/{}/{}/{}", t.suite, t.task, t.model, t.trial))
        .collect();
    let rest = specs
        .into_iter()
        .filter(|spec| !done.contains(&spec.key()))
        .collect();
    Ok((previous.trials, rest))
}

#[cfg(test)]
mod tests {
    use super::with_max_cost;

    #[test]
    fn a_new_cost_limit_replaces_the_old_in_either_spelling() {
        let words = |w: &[&str]| w.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        for old in [
            &["s.toml", "--max-cost", "2", "--out", "o"][..],
            &["s.toml", "--max-cost=2", "--out", "o"],
            &["s.toml", "--out", "o"],
        ] {
            assert_eq!(
                with_max_cost(&words(old), "4"),
                words(&["s.toml", "--out", "o", "--max-cost", "4"])
            );
        }
    }
}
