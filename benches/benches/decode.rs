//! Decoding throughput of the provider stream decoders: a long streamed answer (text deltas and
//! tool-call argument fragments, as SSE) decoded from bytes into the core's stream events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_core::model::Model;
use pi_providers::openai_completions::Decoder;
use pi_providers::StreamEnd;

fn openai_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    let chunk = |delta: serde_json::Value| {
        format!(
            "data: {}\n\n",
            serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    for i in 0..deltas {
        out.push_str(&chunk(
            serde_json::json!({"content": format!("token {i} with some words ")}),
        ));
    }
    for i in 0..deltas / 10 {
        out.push_str(&chunk(serde_json::json!({"tool_calls": [{"index": 0, "id": if i == 0 { "call_1" } else { "" },
            "function": {"name": "bash", "arguments": format!("{{\"part{i}\": \"value {i}\", ")}}]})));
    }
    out.push_str("data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n");
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

fn bench(c: &mut Criterion) {
    let model = Model {
        id: "m".into(),
        api: "openai-completions".into(),
        provider: "p".into(),
        ..Model::default()
    };
    let body = openai_stream(5_000);
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("openai_completions", |b| {
        b.iter(|| {
            let mut decoder = Decoder::new(&model, 0);
            let mut events = decoder.start().len();
            for piece in body.chunks(1400) {
                events += decoder.feed(piece).len();
            }
            events + decoder.finish(StreamEnd::Complete).len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
