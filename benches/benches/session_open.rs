//! Opening a 20,000-entry session file (about 50 MB, shaped like the sessions Pi writes: user,
//! assistant with a tool call, tool result, assistant) and building its context, in process.
//! The whole-process comparison with the original is `benches/scripts/session_side_by_side.py`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ToolCall, ToolResultMessage,
    UserMessage,
};
use pi_core::session::file::whole_file;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use pi_effects::session::SessionStore;

fn words(seed: usize, n: usize) -> String {
    const WORDS: [&str; 12] = [
        "agent", "session", "tool", "cargo", "stream", "delta", "parse", "context", "branch",
        "file", "model", "event",
    ];
    (0..n)
        .map(|i| WORDS[(seed * 7 + i * 13) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn write_session(path: &Path, entries: usize) {
    let mut ids = IdGenerator::new(1);
    let mut tree = SessionTree::new("/home/user/project", 1_767_268_800_000, &mut ids, None);
    let mut now = 1_767_268_800_000;
    let mut i = 0;
    while tree.entries().len() < entries {
        now += 1000;
        i += 1;
        let assistant = |content, stop_reason| {
            AgentMessage::Assistant(AssistantMessage {
                content,
                api: "openai-completions".into(),
                provider: "mock".into(),
                model: "mock-model".into(),
                stop_reason,
                timestamp: now,
                ..AssistantMessage::default()
            })
        };
        let message = match i % 4 {
            1 => AgentMessage::User(UserMessage::from_text(words(i, 40), Vec::new(), now)),
            2 => assistant(
                vec![
                    ContentBlock::text(words(i, 80)),
                    ContentBlock::ToolCall(ToolCall {
                        id: format!("call_{i}"),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": format!("src/file_{i}.rs")}),
                        ..ToolCall::default()
                    }),
                ],
                StopReason::ToolUse,
            ),
            3 => AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: format!("call_{}", i - 1),
                tool_name: "read".into(),
                content: vec![ContentBlock::text(format!("{}\n", words(i, 1400)))],
                details: None,
                usage: None,
                is_error: false,
                duration_ms: None,
                timestamp: now,
                extra: Default::default(),
            }),
            _ => assistant(vec![ContentBlock::text(words(i, 60))], StopReason::Stop),
        };
        tree.append_message(message, now, &mut ids);
    }
    std::fs::write(path, whole_file(tree.header(), tree.entries())).unwrap();
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    write_session(&path, 20_000);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut group = c.benchmark_group("session");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("open_and_build_context_20k", |b| {
        b.iter(|| {
            let store = SessionStore::open(&path, None, None, "/", 0, IdGenerator::new(0)).unwrap();
            store.tree().context().messages.len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
