//! Joining the results of a sharded run: each CI job runs one shard and writes its own
//! `results.json`; merging them gives the results of the run as if it had been one, or of the
//! shards held when some are missing. Parts that cannot belong to one run (other suites, another
//! mode, the same shard twice) are refused rather than merged into numbers that mean nothing.

use std::collections::{BTreeSet, HashMap};

use thiserror::Error;

use crate::results::{EvalResults, RunProgress, Shards, SuiteRef, SCHEMA_VERSION};
use crate::score::summarize;

/// Why parts could not be merged. `part` is the zero-based index of the offending part in the
/// list given; values are compared with part 0.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("no results to merge")]
    Empty,
    #[error(
        "part {part}: schema version {version} is not supported (this build reads 1 to {SCHEMA_VERSION})"
    )]
    SchemaVersion { part: usize, version: u32 },
    #[error("part {part}: harness {found}, but part 0 was run by {expected}")]
    Harness {
        part: usize,
        expected: String,
        found: String,
    },
    #[error("part {part}: suites {found}, but part 0 ran {expected}")]
    Suites {
        part: usize,
        expected: String,
        found: String,
    },
    #[error("part {part}: mode {found}, but part 0 ran in mode {expected}")]
    Mode {
        part: usize,
        expected: String,
        found: String,
    },
    #[error("part {part}: isolation {found}, but part 0 ran with isolation {expected}")]
    Isolation {
        part: usize,
        expected: String,
        found: String,
    },
    #[error("part {part}: {found}, but part 0 holds {expected}")]
    ShardCount {
        part: usize,
        expected: String,
        found: String,
    },
    #[error("part {part}: shard {shard} is out of range (the run has {count} shards)")]
    ShardOutOfRange { part: usize, shard: u32, count: u32 },
    #[error("part {part}: shard {shard} is also held by part {first}")]
    ShardTwice {
        part: usize,
        shard: u32,
        first: usize,
    },
    #[error(
        "part {part}: trial {trial} of {suite}/{task} with model {model} is also in part {first}"
    )]
    DuplicateTrial {
        part: usize,
        first: usize,
        suite: String,
        task: String,
        model: String,
        trial: u32,
    },
}

/// Merges shard results into one: trials joined and re-sorted, summaries recomputed with
/// [`summarize`], `shards` the union of those held (`None` once every shard is).
///
/// All parts must be of a supported schema version and agree on the harness, the suites (name
/// and digest, in order; paths may differ between machines), the mode and the isolation; their
/// shard counts must agree and no shard or trial may be held twice. Parts that are whole runs
/// (no `shards`) may be merged with each other when their trials do not overlap.
pub fn merge(parts: Vec<EvalResults>) -> Result<EvalResults, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    for (part, results) in parts.iter().enumerate() {
        check_part(part, first, results)?;
    }
    let shards = merge_shards(&parts)?;

    let mut base = None;
    let mut interrupted = false;
    let mut stopped: Option<String> = None;
    let mut planned = Some(0);
    let mut trials = Vec::new();
    let mut seen: HashMap<(String, String, String, u32), usize> = HashMap::new();
    for (part, results) in parts.into_iter().enumerate() {
        let EvalResults {
            schema_version: _,
            harness,
            suites,
            mode,
            isolation,
            trials: part_trials,
            progress,
            ..
        } = results;
        // A shard cut short leaves the merged run cut short too.
        interrupted |= progress.interrupted;
        stopped = stopped.or(progress.stopped);
        planned = planned.zip(progress.planned).map(|(a, b)| a + b);
        for trial in part_trials {
            let key = (
                trial.suite.clone(),
                trial.task.clone(),
                trial.model.clone(),
                trial.trial,
            );
            if let Some(&first) = seen.get(&key) {
                let (suite, task, model, trial) = key;
                return Err(MergeError::DuplicateTrial {
                    part,
                    first,
                    suite,
                    task,
                    model,
                    trial,
                });
            }
            seen.insert(key, part);
            trials.push(trial);
        }
        base.get_or_insert((harness, suites, mode, isolation));
    }
    let (harness, suites, mode, isolation) = base.ok_or(MergeError::Empty)?;

    trials.sort_by(|a, b| {
        (&a.suite, &a.task, &a.model, a.trial).cmp(&(&b.suite, &b.task, &b.model, b.trial))
    });
    let (tasks, models) = summarize(&trials);
    Ok(EvalResults {
        schema_version: SCHEMA_VERSION,
        harness,
        suites,
        mode,
        isolation,
        shards,
        trials,
        tasks,
        models,
        progress: RunProgress {
            interrupted,
            planned,
            invocation: None,
            stopped,
        },
    })
}

fn check_part(part: usize, first: &EvalResults, results: &EvalResults) -> Result<(), MergeError> {
    if results.schema_version == 0 || results.schema_version > SCHEMA_VERSION {
        return Err(MergeError::SchemaVersion {
            part,
            version: results.schema_version,
        });
    }
    if first.harness != results.harness {
        return Err(MergeError::Harness {
            part,
            expected: first.harness.clone(),
            found: results.harness.clone(),
        });
    }
    let (expected, found) = (suites_text(&first.suites), suites_text(&results.suites));
    if expected != found {
        return Err(MergeError::Suites {
            part,
            expected,
            found,
        });
    }
    if first.mode != results.mode {
        return Err(MergeError::Mode {
            part,
            expected: first.mode.clone(),
            found: results.mode.clone(),
        });
    }
    if first.isolation != results.isolation {
        return Err(MergeError::Isolation {
            part,
            expected: first.isolation.clone(),
            found: results.isolation.clone(),
        });
    }
    let count = |r: &EvalResults| r.shards.as_ref().map(|s| s.count);
    if count(first) != count(results) {
        return Err(MergeError::ShardCount {
            part,
            expected: count_text(count(first)),
            found: count_text(count(results)),
        });
    }
    Ok(())
}

/// The suites as compared: name and digest, in order.
fn suites_text(suites: &[SuiteRef]) -> String {
    let names: Vec<String> = suites
        .iter()
        .map(|s| format!("{} ({})", s.name, s.digest))
        .collect();
    format!("[{}]", names.join(", "))
}

fn count_text(count: Option<u32>) -> String {
    match count {
        Some(n) => format!("shards of a {n}-shard run"),
        None => "a whole run".to_owned(),
    }
}

/// The union of the shards held, checked for range and overlap; `None` when every shard is
/// held or the parts are whole runs. Shard counts are already known to agree.
fn merge_shards(parts: &[EvalResults]) -> Result<Option<Shards>, MergeError> {
    let Some(count) = parts
        .first()
        .and_then(|p| p.shards.as_ref())
        .map(|s| s.count)
    else {
        return Ok(None);
    };
    let mut holder: HashMap<u32, usize> = HashMap::new();
    let mut held = BTreeSet::new();
    for (part, results) in parts.iter().enumerate() {
        for &shard in results.shards.iter().flat_map(|s| &s.held) {
            if shard >= count {
                return Err(MergeError::ShardOutOfRange { part, shard, count });
            }
            if let Some(&first) = holder.get(&shard) {
                return Err(MergeError::ShardTwice { part, shard, first });
            }
            holder.insert(shard, part);
            held.insert(shard);
        }
    }
    if u32::try_from(held.len()).is_ok_and(|n| n == count) {
        return Ok(None);
    }
    Ok(Some(Shards {
        count,
        held: held.into_iter().collect(),
    }))
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
