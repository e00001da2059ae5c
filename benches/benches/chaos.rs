//! Chaos runs over the regression corpus, single core: each cassette's recording indexed once,
//! then one pass of ten seeded plans per cassette (the first unperturbed), every invariant
//! checked and each session file written and read back. Throughput in runs: criterion's
//! elements per second are chaos runs per second.

#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_cassettes::Cassette;
use pi_chaos::{plan_for, run_plan, ChaosRecording, PerturbationPlan};

const PLANS: usize = 10;

fn corpus() -> Vec<Arc<ChaosRecording>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let cassette = Cassette::load(p).unwrap_or_else(|e| panic!("{e}"));
            ChaosRecording::from_cassette(&cassette).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let recordings = corpus();
    let dir = tempfile::tempdir().expect("a scratch directory");
    let runs: Vec<(Arc<ChaosRecording>, PerturbationPlan)> = recordings
        .iter()
        .flat_map(|r| (0..PLANS).map(move |i| (Arc::clone(r), plan_for(r, 1, i))))
        .collect();
    for (recording, plan) in &runs {
        assert!(
            run_plan(recording, plan, dir.path()).is_ok(),
            "{} fails under {plan}",
            recording.path.display()
        );
    }
    let mut group = c.benchmark_group("chaos");
    group.throughput(Throughput::Elements(runs.len() as u64));
    group.bench_function(
        format!("{PLANS} runs of each of {} cassettes", recordings.len()),
        |b| {
            b.iter(|| {
                for (recording, plan) in &runs {
                    let _ = run_plan(recording, plan, dir.path());
                }
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
