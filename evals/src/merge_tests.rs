#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::test_support::{outcomes, results};

/// Shard `index` of a `count`-shard run, holding task `task` (two passes, one failure).
fn shard(index: u32, count: u32, task: &str) -> EvalResults {
    let mut part = results(outcomes("s", task, "m", 2, 1));
    part.shards = Some(Shards {
        count,
        held: vec![index],
    });
    part
}

#[test]
fn all_shards_make_a_whole_run() {
    let merged = merge(vec![shard(1, 2, "b"), shard(0, 2, "a")]).unwrap();
    assert_eq!(merged.shards, None);
    assert_eq!(merged.trials.len(), 6);
    let order: Vec<(&str, u32)> = merged
        .trials
        .iter()
        .map(|t| (t.task.as_str(), t.trial))
        .collect();
    assert_eq!(
        order,
        [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    );
    let (tasks, models) = summarize(&merged.trials);
    assert_eq!(merged.tasks, tasks);
    assert_eq!(merged.models, models);
    assert_eq!(merged.models[0].tasks, 2);
    assert_eq!(merged.models[0].passed, 4);
}

#[test]
fn some_shards_stay_partial() {
    let merged = merge(vec![shard(3, 4, "d"), shard(1, 4, "b")]).unwrap();
    assert_eq!(
        merged.shards,
        Some(Shards {
            count: 4,
            held: vec![1, 3]
        })
    );
}

#[test]
fn one_part_is_itself() {
    let part = results(outcomes("s", "t", "m", 1, 1));
    assert_eq!(merge(vec![part.clone()]).unwrap(), part);
}

#[test]
fn refuses_what_cannot_be_one_run() {
    assert_eq!(merge(Vec::new()), Err(MergeError::Empty));

    let mut other = shard(1, 2, "b");
    other.schema_version = SCHEMA_VERSION + 1;
    let err = merge(vec![shard(0, 2, "a"), other]).unwrap_err();
    assert!(
        matches!(err, MergeError::SchemaVersion { part: 1, .. }),
        "{err}"
    );

    let mut other = shard(1, 2, "b");
    other.suites[0].digest = "d2".to_owned();
    let err = merge(vec![shard(0, 2, "a"), other]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "part 1: suites [s (d2)], but part 0 ran [s (d1)]"
    );

    let mut other = shard(1, 2, "b");
    other.suites[0].path = "elsewhere/s.toml".to_owned();
    assert!(
        merge(vec![shard(0, 2, "a"), other]).is_ok(),
        "paths may differ"
    );

    let mut other = shard(1, 2, "b");
    other.mode = "live".to_owned();
    let err = merge(vec![shard(0, 2, "a"), other]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "part 1: mode live, but part 0 ran in mode replay"
    );

    let mut other = shard(1, 2, "b");
    other.isolation = "bwrap".to_owned();
    let err = merge(vec![shard(0, 2, "a"), other]).unwrap_err();
    assert!(
        matches!(err, MergeError::Isolation { part: 1, .. }),
        "{err}"
    );

    let mut other = shard(1, 2, "b");
    other.harness = "0.2.0".to_owned();
    let err = merge(vec![shard(0, 2, "a"), other]).unwrap_err();
    assert!(matches!(err, MergeError::Harness { part: 1, .. }), "{err}");
}

#[test]
fn refuses_mismatched_or_repeated_shards() {
    let err = merge(vec![shard(0, 2, "a"), shard(1, 3, "b")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "part 1: shards of a 3-shard run, but part 0 holds shards of a 2-shard run"
    );

    let err = merge(vec![
        shard(0, 2, "a"),
        results(outcomes("s", "b", "m", 1, 0)),
    ])
    .unwrap_err();
    assert!(
        matches!(err, MergeError::ShardCount { part: 1, .. }),
        "{err}"
    );

    let err = merge(vec![shard(0, 3, "a"), shard(1, 3, "b"), shard(1, 3, "c")]).unwrap_err();
    assert_eq!(
        err,
        MergeError::ShardTwice {
            part: 2,
            shard: 1,
            first: 1
        }
    );
    assert_eq!(err.to_string(), "part 2: shard 1 is also held by part 1");

    let err = merge(vec![shard(0, 2, "a"), shard(2, 2, "b")]).unwrap_err();
    assert!(matches!(
        err,
        MergeError::ShardOutOfRange {
            part: 1,
            shard: 2,
            count: 2
        }
    ));
}

#[test]
fn refuses_a_trial_held_twice() {
    let err = merge(vec![shard(0, 2, "a"), shard(1, 2, "a")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "part 1: trial 0 of s/a with model m is also in part 0"
    );
}

#[test]
fn whole_runs_with_disjoint_trials_merge() {
    let merged = merge(vec![
        results(outcomes("s", "a", "m", 1, 0)),
        results(outcomes("s", "a", "n", 0, 1)),
    ])
    .unwrap();
    assert_eq!(merged.shards, None);
    assert_eq!(merged.models.len(), 2);
}

#[test]
fn a_shard_the_cost_limit_stopped_leaves_the_merged_run_stopped_with_its_tags() {
    let mut stopped = shard(1, 2, "b");
    stopped.progress.stopped = Some("cost limit $1.00 reached".into());
    stopped.trials[0].tags = vec!["hard".into()];
    let merged = merge(vec![shard(0, 2, "a"), stopped]).unwrap();
    assert_eq!(
        merged.progress.stopped.as_deref(),
        Some("cost limit $1.00 reached")
    );
    let tagged: Vec<&str> = merged
        .trials
        .iter()
        .filter(|t| !t.tags.is_empty())
        .map(|t| t.task.as_str())
        .collect();
    assert_eq!(tagged, ["b"]);
    let text = serde_json::to_string(&merged).unwrap();
    let back: EvalResults = serde_json::from_str(&text).unwrap();
    assert_eq!(back, merged, "stopped and tags survive the file");
}
