//! The eval runner's own work per trial and per run, without the agent processes: reading a
//! trial's JSON event stream (`AgentOutcome`), and summarising and reporting a run of many trials
//! (pass@k and standard errors, results JSON, JUnit, Markdown, the HTML report).

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_evals::outcome::AgentOutcome;
use pi_evals::results::{Calls, CheckResult, EvalResults, TrialResult, TrialStatus, Usage};
use pi_evals::{report, score};
use serde_json::json;

/// A tool-using trial's events as Pi prints them: each response streamed as `deltas` updates
/// (each carrying the message so far, as Pi's do), then its end, a tool call and its result.
fn event_stream(turns: usize, deltas: usize) -> String {
    let mut out = String::new();
    let mut line = |v: serde_json::Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    line(
        json!({"type": "session", "version": 3, "id": "x", "timestamp": "2026-11-25T00:00:00.000Z", "cwd": "/w"}),
    );
    line(json!({"type": "agent_start"}));
    for turn in 0..turns {
        line(json!({"type": "turn_start"}));
        let mut text = String::new();
        for d in 0..deltas {
            text.push_str(&format!("word{d} "));
            line(
                json!({"type": "message_update", "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
                "assistantMessageEvent": {"type": "text_delta", "delta": format!("word{d} ")}}),
            );
        }
        let message = json!({"role": "assistant", "content": [{"type": "text", "text": text},
            {"type": "toolCall", "id": format!("c{turn}"), "name": "bash", "arguments": {"command": "ls"}}],
            "usage": {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150, "cost": {"total": 0.001}},
            "stopReason": "toolUse"});
        line(json!({"type": "message_end", "message": message}));
        line(
            json!({"type": "message_end", "message": {"role": "toolResult", "toolCallId": format!("c{turn}"), "toolName": "bash",
            "content": [{"type": "text", "text": "a\nb\n"}], "isError": false}}),
        );
        line(json!({"type": "turn_end"}));
    }
    line(json!({"type": "agent_end", "messages": []}));
    out
}

/// A run of `tasks` tasks x `trials` trials against two models, with transcripts.
fn results(tasks: usize, trials: u32) -> EvalResults {
    let mut all = Vec::new();
    for model in ["a/model", "b/model"] {
        for task in 0..tasks {
            for trial in 0..trials {
                let passed = (task + trial as usize) % 3 != 0;
                all.push(TrialResult {
                    suite: "bench".into(),
                    task: format!("task-{task:03}"),
                    model: model.into(),
                    trial,
                    seed: 1,
                    status: if passed { TrialStatus::Passed } else { TrialStatus::Failed },
                    score: if passed { 1.0 } else { 0.5 },
                    checks: vec![CheckResult {
                        kind: "text_contains".into(),
                        name: "final text contains \"ok\"".into(),
                        weight: 1.0,
                        passed,
                        detail: (!passed).then(|| "final text: \"no\"".into()),
                    }],
                    usage: Usage { input: 100, output: 50, cache_read: 0, cache_write: 0, total_tokens: 150 },
                    cost: 0.001,
                    replayed_cost: 0.0,
                    calls: Calls { live: 2, replayed: 0 },
                    judge: Default::default(),
                    turns: 2,
                    wall_ms: 1200,
                    cassette: None,
                    reason: None,
                    final_text: "ok".into(),
                    transcript: vec![
                        json!({"role": "user", "content": "Reply with ok."}),
                        json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}),
                    ],
                    attempts: 1,
                    earlier_errors: Vec::new(),
                    tags: Vec::new(),
                    metadata: serde_json::Map::new(),
                    context: Default::default(),
                });
            }
        }
    }
    let (tasks, models) = score::summarize(&all);
    EvalResults {
        schema_version: pi_evals::results::SCHEMA_VERSION,
        harness: "bench".into(),
        suites: Vec::new(),
        mode: "replay".into(),
        isolation: "none".into(),
        shards: None,
        trials: all,
        tasks,
        models,
        progress: Default::default(),
    }
}

fn bench(c: &mut Criterion) {
    let stream = event_stream(10, 200);
    let mut group = c.benchmark_group("evals");
    group.throughput(Throughput::Bytes(stream.len() as u64));
    group.bench_function("outcome of a 10-turn event stream", |b| {
        b.iter(|| {
            let mut outcome = AgentOutcome::default();
            for line in stream.lines() {
                outcome.feed_line(line);
            }
            assert_eq!(outcome.turns, 10);
        })
    });
    let run = results(100, 5);
    group.throughput(Throughput::Elements(run.trials.len() as u64));
    group.bench_function("summarise 1,000 trials", |b| {
        b.iter(|| score::summarize(&run.trials))
    });
    group.bench_function("report 1,000 trials (JSON, JUnit, Markdown, HTML)", |b| {
        b.iter(|| {
            let json = serde_json::to_string(&run).unwrap();
            let junit = report::junit::render(&run);
            let markdown = report::markdown::render(&run);
            let html = report::html::render(&run);
            json.len() + junit.len() + markdown.len() + html.len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
