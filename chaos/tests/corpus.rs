//! Chaos runs over the recorded corpus: the unperturbed run and seeded plans keep every
//! invariant, and a deliberately broken world is caught and shrunk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use pi_cassettes::Cassette;
use pi_chaos::{chaos_runs, run_plan, shrink, ChaosRecording, Invariant, PerturbationPlan};
use pi_core::agent::Input;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn recording(path: &Path) -> std::sync::Arc<ChaosRecording> {
    let cassette = Cassette::load(path).unwrap();
    ChaosRecording::from_cassette(&cassette).unwrap()
}

#[test]
fn every_cassette_keeps_the_invariants_unperturbed() {
    let dir = tempfile::tempdir().unwrap();
    for path in corpus() {
        let result = run_plan(&recording(&path), &PerturbationPlan::none(), dir.path());
        assert!(result.is_ok(), "{}: {:?}", path.display(), result.err());
    }
}

#[test]
fn seeded_runs_over_the_corpus_keep_the_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for path in corpus() {
        let summary = chaos_runs(&recording(&path), 30, 1, None, dir.path());
        assert_eq!(summary.runs, 30);
        failures.extend(summary.failures);
    }
    let report: Vec<String> = failures.iter().map(|f| f.to_string()).collect();
    assert!(failures.is_empty(), "{}", report.join("\n\n"));
}

#[test]
fn a_tool_answered_twice_is_caught_and_shrunk() {
    let path = corpus()
        .into_iter()
        .find(|p| p.ends_with("parallel_tools.jsonl"))
        .unwrap();
    let mut recording = recording(&path);
    // A broken world: the first recorded tool answers twice.
    let tools = &mut std::sync::Arc::make_mut(&mut recording).tools;
    let answers = tools.values_mut().next().unwrap();
    let finished = answers[0].outcome.clone().unwrap();
    let call = pi_core::agent::CallId(2);
    answers[0].updates.push(Input::ToolFinished {
        call,
        outcome: finished,
    });
    let dir = tempfile::tempdir().unwrap();
    let plan: PerturbationPlan = "split:0:11,late:0:5000,split:1:3".parse().unwrap();
    let violations = run_plan(&recording, &plan, dir.path()).unwrap_err();
    assert!(
        violations
            .iter()
            .any(|v| v.invariant == Invariant::NoPanicNoContractError),
        "{violations:?}"
    );
    let (shrunk, violations) = shrink(&recording, &plan, violations, dir.path());
    assert_eq!(
        shrunk,
        PerturbationPlan::none(),
        "no perturbation is needed to break it"
    );
    assert!(!violations.is_empty());
}
