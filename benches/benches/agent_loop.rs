#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Inputs per second through `AgentMachine::step` for one run: a prompt, a response streamed as N
//! text deltas followed by 10 tool calls, the 10 tool results, and a short final answer. Two sizes
//! show whether the cost of a delta grows with the message (it must not: snapshots are shared).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, Prompt, StreamEvent, ToolOutcome,
};
use pi_core::event::ToolResult;
use pi_core::message::{AssistantMessage, ContentBlock, StopReason, ToolCall};
use pi_core::script::{mock_model, tool};

const TOOL_CALLS: usize = 10;

fn response_events(deltas: usize) -> Vec<StreamEvent> {
    let mut events = vec![StreamEvent::Start {
        partial: AssistantMessage {
            api: "openai-completions".into(),
            provider: "mock".into(),
            model: "mock-model".into(),
            ..AssistantMessage::default()
        },
    }];
    events.push(StreamEvent::TextStart {
        content_index: 0,
        block: Default::default(),
    });
    let mut text = String::new();
    for i in 0..deltas {
        let delta = format!("token{i} ");
        text.push_str(&delta);
        events.push(StreamEvent::TextDelta {
            content_index: 0,
            delta,
        });
    }
    let mut content = vec![ContentBlock::text(text.clone())];
    for i in 0..TOOL_CALLS {
        let call = ToolCall {
            id: format!("call_{i}"),
            name: "echo".into(),
            arguments: serde_json::json!({"value": format!("v{i}")}),
            ..ToolCall::default()
        };
        events.push(StreamEvent::ToolCallStart {
            content_index: i + 1,
            block: ToolCall {
                arguments: serde_json::json!({}),
                ..call.clone()
            },
        });
        events.push(StreamEvent::ToolCallDelta {
            content_index: i + 1,
            delta: format!("{{\"value\": \"v{i}\"}}"),
        });
        content.push(ContentBlock::ToolCall(call));
    }
    events.push(StreamEvent::TextEnd {
        content_index: 0,
        content: text,
    });
    for (i, block) in content.iter().enumerate().skip(1) {
        if let ContentBlock::ToolCall(call) = block {
            events.push(StreamEvent::ToolCallEnd {
                content_index: i,
                tool_call: call.clone(),
            });
        }
    }
    events.push(StreamEvent::Done {
        reason: StopReason::ToolUse,
        message: AssistantMessage {
            content,
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        },
    });
    events
}

fn final_answer() -> Vec<StreamEvent> {
    vec![StreamEvent::Done {
        reason: StopReason::Stop,
        message: AssistantMessage {
            content: vec![ContentBlock::text("done")],
            ..AssistantMessage::default()
        },
    }]
}

/// Runs the whole scenario; returns how many inputs went through `step`.
fn run(first: &[StreamEvent], last: &[StreamEvent]) -> usize {
    let mut machine = AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        ..AgentConfig::default()
    });
    let mut inputs = 0;
    let mut now = 1;
    let mut step = |machine: &mut AgentMachine, input: Input| {
        inputs += 1;
        now += 1;
        machine
            .step(now, input)
            .map(|s| s.effects)
            .unwrap_or_default()
    };
    let model_call = |effects: &[Effect]| {
        effects.iter().find_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
    };
    let effects = step(&mut machine, Input::Prompt(Prompt::text("go")));
    let call = model_call(&effects).unwrap_or(CallId(0));
    let mut tools = Vec::new();
    for event in first {
        let effects = step(
            &mut machine,
            Input::Model {
                call,
                event: event.clone(),
            },
        );
        tools.extend(effects.iter().filter_map(|e| match e {
            Effect::RunTool { call, .. } => Some(*call),
            _ => None,
        }));
    }
    let mut next = None;
    for call in tools {
        let outcome = ToolOutcome::Ok(ToolResult {
            content: vec![ContentBlock::text("ok")],
            ..ToolResult::default()
        });
        next = model_call(&step(&mut machine, Input::ToolFinished { call, outcome })).or(next);
    }
    let call = next.unwrap_or(CallId(0));
    for event in last {
        step(
            &mut machine,
            Input::Model {
                call,
                event: event.clone(),
            },
        );
    }
    assert!(!machine.is_streaming(), "the run did not finish");
    inputs
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("agent_loop_step");
    for deltas in [1_000, 10_000] {
        let first = response_events(deltas);
        let last = final_answer();
        let inputs = run(&first, &last);
        group.throughput(Throughput::Elements(inputs as u64));
        group.bench_with_input(
            BenchmarkId::new("deltas_then_10_tools", deltas),
            &deltas,
            |b, _| b.iter(|| run(&first, &last)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
