#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The tools an agent calls most, on a synthetic repository in a temp dir: `read` of a
//! 3,000-line file (2,000 lines shown, with the continuation notice), `grep` over 1,000 files
//! (a pattern matching 100 of them, `.gitignore` honoured), `find` by glob, `ls` of a
//! 1,000-entry directory. Whole tool calls, as the interpreter makes them.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use pi_core::agent::ToolOutcome;
use pi_effects::tools::{run, ToolContext, ToolEnv};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

fn repository(root: &Path) {
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let long: String = (1..=3000)
        .map(|i| format!("line {i}: some source text for the read tool\n"))
        .collect();
    std::fs::write(root.join("long.rs"), long).unwrap();
    for dir in 0..10 {
        let dir_path = root.join(format!("src/module{dir}"));
        std::fs::create_dir_all(&dir_path).unwrap();
        for file in 0..100 {
            let needle = if file % 10 == 0 {
                "fn needle_here() {}\n"
            } else {
                ""
            };
            let body = format!(
                "// file {dir}/{file}\n{needle}{}",
                "let x = 1;\n".repeat(40)
            );
            std::fs::write(dir_path.join(format!("file{file}.rs")), body).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/ignored.rs"), "fn needle_here() {}\n").unwrap();
    let flat = root.join("flat");
    std::fs::create_dir_all(&flat).unwrap();
    for i in 0..1000 {
        std::fs::write(flat.join(format!("entry{i:04}.txt")), "x").unwrap();
    }
}

fn call(rt: &tokio::runtime::Runtime, env: &ToolEnv, tool: &str, args: Value) -> usize {
    let (updates, _rx) = unbounded_channel();
    let cx = ToolContext {
        cancel: CancellationToken::new(),
        updates,
    };
    match rt.block_on(run(env, tool, &args, &cx)) {
        ToolOutcome::Ok(result) => result.content.len(),
        ToolOutcome::Thrown(error) => panic!("{tool}: {error}"),
    }
}

fn tools(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path());
    let env = ToolEnv::new(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("tools");
    group.bench_function("read 2,000 of 3,000 lines", |b| {
        b.iter(|| call(&rt, &env, "read", json!({"path": "long.rs"})))
    });
    group.bench_function("grep over 1,000 files", |b| {
        b.iter(|| {
            call(
                &rt,
                &env,
                "grep",
                json!({"pattern": "needle_\\w+", "path": "src"}),
            )
        })
    });
    group.bench_function("find **/*.rs over 1,000 files", |b| {
        b.iter(|| call(&rt, &env, "find", json!({"pattern": "**/file9*.rs"})))
    });
    group.bench_function("ls of 1,000 entries", |b| {
        b.iter(|| call(&rt, &env, "ls", json!({"path": "flat"})))
    });
    group.finish();
}

criterion_group!(benches, tools);
criterion_main!(benches);
