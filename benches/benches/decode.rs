//! Decoding throughput of the provider stream decoders, one per API: a long streamed answer (text
//! deltas and tool-call argument fragments, in each API's wire format) decoded from bytes into
//! the core's stream events, fed in 1,400-byte network chunks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pi_core::model::Model;
use pi_providers::{
    anthropic, google, openai_completions, openai_responses, StreamDecoder, StreamEnd,
};
use serde_json::json;

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

fn anthropic_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut event = |name: &str, data: serde_json::Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..deltas {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("token {i} with some words ")}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}}),
    );
    for i in 0..deltas / 10 {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": format!("{{\"part{i}\": \"value {i}\", ")}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

fn responses_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut event = |data: serde_json::Value| {
        out.push_str(&format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap()
        ));
    };
    event(json!({"type": "response.created", "response": {"id": "resp_1"}}));
    event(
        json!({"type": "response.output_item.added", "item": {"type": "message", "id": "msg_1", "content": []}}),
    );
    event(
        json!({"type": "response.content_part.added", "part": {"type": "output_text", "text": ""}}),
    );
    let mut text = String::new();
    for i in 0..deltas {
        let delta = format!("token {i} with some words ");
        text.push_str(&delta);
        event(json!({"type": "response.output_text.delta", "delta": delta}));
    }
    event(
        json!({"type": "response.output_item.done", "item": {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": text}]}}),
    );
    event(
        json!({"type": "response.output_item.added", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": ""}}),
    );
    for i in 0..deltas / 10 {
        event(
            json!({"type": "response.function_call_arguments.delta", "delta": format!("{{\"part{i}\": \"value {i}\", ")}),
        );
    }
    event(
        json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "bash", "arguments": "{}"}}),
    );
    event(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    );
    out.into_bytes()
}

fn google_stream(deltas: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..deltas {
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": format!("token {i} with some words ")}]}, "index": 0}]});
        out.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    for i in 0..deltas / 10 {
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "bash", "args": {"part": i}}}]}, "index": 0}]});
        out.push_str(&format!("data: {chunk}\r\n\r\n"));
    }
    let last = json!({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}});
    out.push_str(&format!("data: {last}\r\n\r\n"));
    out.into_bytes()
}

fn decode_all<D: StreamDecoder>(mut decoder: D, body: &[u8]) -> usize {
    let mut events = decoder.start().len();
    for piece in body.chunks(1400) {
        events += decoder.feed(piece).len();
    }
    events + decoder.finish(StreamEnd::Complete).len()
}

fn bench(c: &mut Criterion) {
    let model = |api: &str| Model {
        id: "m".into(),
        api: api.into(),
        provider: "p".into(),
        ..Model::default()
    };
    let mut group = c.benchmark_group("decode");
    let openai = model("openai-completions");
    let body = openai_stream(5_000);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("openai_completions", |b| {
        b.iter(|| decode_all(openai_completions::Decoder::new(&openai, 0), &body))
    });
    let claude = model("anthropic-messages");
    let body = anthropic_stream(5_000);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("anthropic_messages", |b| {
        b.iter(|| decode_all(anthropic::Decoder::new(&claude, 0), &body))
    });
    let gpt = model("openai-responses");
    let body = responses_stream(5_000);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("openai_responses", |b| {
        b.iter(|| decode_all(openai_responses::Decoder::new(&gpt, 0), &body))
    });
    let gemini = model("google-generative-ai");
    let body = google_stream(5_000);
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("google_generative_ai", |b| {
        b.iter(|| decode_all(google::Decoder::new(&gemini, 0), &body))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
