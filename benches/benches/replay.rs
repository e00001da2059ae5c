//! In-process replay of the regression corpus: each print-mode cassette loaded from its bytes,
//! its machine built from the recorded configuration, every recorded input driven through the
//! Replay interpreter, and the replay checked to its end. Throughput in cassette bytes; divide
//! the cassette count by the time for cassettes per second.

#![allow(clippy::panic, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_cassettes::{replay_in_memory, Cassette};

/// The corpus cassettes a print-mode replay runs in memory (RPC ones need the binary's front
/// end, resumed ones their session file).
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            let header = bytes.split(|b| *b == b'\n').next()?;
            let has = |needle: &[u8]| header.windows(needle.len()).any(|w| w == needle);
            let skip = has(b"\"mode\":\"rpc\"") || has(b"\"kind\":\"open\"");
            (!skip).then(|| (p.display().to_string(), bytes))
        })
        .collect();
    files.sort();
    files
}

/// Replays one cassette in memory; whether it reproduced its run.
async fn replay(name: &str, bytes: &[u8]) -> bool {
    match Cassette::parse(Path::new(name), bytes) {
        Ok(cassette) => replay_in_memory(Arc::new(cassette)).await.is_ok(),
        Err(_) => false,
    }
}

fn bench(c: &mut Criterion) {
    let cassettes = corpus();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("no runtime: {e}"));
    for (name, bytes) in &cassettes {
        assert!(
            runtime.block_on(replay(name, bytes)),
            "{name} does not replay"
        );
    }
    let total: usize = cassettes.iter().map(|(_, b)| b.len()).sum();
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Bytes(total as u64));
    group.bench_function(format!("corpus of {} cassettes", cassettes.len()), |b| {
        b.iter(|| {
            runtime.block_on(async {
                for (name, bytes) in &cassettes {
                    replay(name, bytes).await;
                }
            })
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
