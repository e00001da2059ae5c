#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! One run over a long session whose transcript records its prompt's later patches: a
//! transcript of `N` earlier exchanges with a system message every 25 messages, then a prompt
//! answered by 10 tool turns and a final answer. Each of the 11 requests places every system
//! message after the model messages before it (`ModelRequest::system_messages`); the cost must
//! grow with the transcript, not with the transcript times its system messages.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, Prompt, StreamEvent, ToolOutcome,
};
use pi_core::event::ToolResult;
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, SystemMessage, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use pi_core::script::{mock_model, tool};

const TURNS: usize = 10;
const SYSTEM_EVERY: usize = 25;

fn call(i: usize) -> ToolCall {
    ToolCall {
        id: format!("call_{i}"),
        name: "echo".into(),
        arguments: serde_json::json!({"value": format!("v{i}")}),
        ..ToolCall::default()
    }
}

/// `exchanges` user / assistant (one tool call) / tool result triples, a system message first
/// and then every [`SYSTEM_EVERY`] messages.
fn transcript(exchanges: usize) -> Vec<AgentMessage> {
    let text = "lorem ipsum ".repeat(40);
    let mut messages = Vec::new();
    for i in 0..exchanges {
        messages.push(AgentMessage::User(UserMessage::from_text(
            format!("{i} {text}"),
            Vec::new(),
            1,
        )));
        messages.push(AgentMessage::Assistant(AssistantMessage {
            content: vec![
                ContentBlock::text(text.clone()),
                ContentBlock::ToolCall(call(i)),
            ],
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }));
        messages.push(AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: format!("call_{i}"),
            tool_name: "echo".into(),
            content: vec![ContentBlock::text(text.clone())],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: 1,
            extra: Default::default(),
        }));
    }
    let mut placed = Vec::new();
    for (index, message) in messages.into_iter().enumerate() {
        if index % SYSTEM_EVERY == 0 {
            placed.push(AgentMessage::System(SystemMessage {
                content: UserContent::Text(format!("prompt patch {index}")),
                sections: None,
                timestamp: 1,
                tools_added: None,
                tools_removed: None,
                extra: Default::default(),
            }));
        }
        placed.push(message);
    }
    placed
}

fn tool_turn(i: usize) -> Vec<StreamEvent> {
    let message = AssistantMessage {
        content: vec![ContentBlock::ToolCall(call(i))],
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    vec![StreamEvent::Done {
        reason: StopReason::ToolUse,
        message,
    }]
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

/// Runs the prompt to its end over `messages`; returns how many requests it made.
fn run(messages: &[AgentMessage]) -> usize {
    let mut machine = AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        messages: messages.to_vec(),
        hooks: Arc::new(CodingAgentHooks::default()),
        ..AgentConfig::default()
    });
    let mut now = 1;
    let mut step = |machine: &mut AgentMachine, input: Input| {
        now += 1;
        machine
            .step(now, input)
            .map(|s| s.effects)
            .unwrap_or_default()
    };
    let mut requests = 0;
    let mut effects = step(&mut machine, Input::Prompt(Prompt::text("go")));
    for turn in 0..=TURNS {
        let call = effects
            .iter()
            .find_map(|e| match e {
                Effect::CallModel { call, .. } => Some(*call),
                _ => None,
            })
            .unwrap_or(CallId(0));
        requests += 1;
        let events = if turn == TURNS {
            final_answer()
        } else {
            tool_turn(turn)
        };
        let mut tools = Vec::new();
        for event in events {
            let answered = step(&mut machine, Input::Model { call, event });
            tools.extend(answered.into_iter().filter_map(|e| match e {
                Effect::RunTool { call, .. } => Some(call),
                _ => None,
            }));
        }
        for call in tools {
            let outcome = ToolOutcome::Ok(ToolResult {
                content: vec![ContentBlock::text("ok")],
                ..ToolResult::default()
            });
            effects = step(&mut machine, Input::ToolFinished { call, outcome });
        }
    }
    assert!(!machine.is_streaming(), "the run did not finish");
    requests
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("system_placement");
    for exchanges in [100, 400] {
        let messages = transcript(exchanges);
        let requests = run(&messages);
        group.throughput(Throughput::Elements(requests as u64));
        group.bench_with_input(
            BenchmarkId::new("requests_over_exchanges", exchanges),
            &messages,
            |b, messages| b.iter(|| run(messages)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
