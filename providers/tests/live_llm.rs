//! Against the real local LLM (SmolLM2-135M behind llama.cpp's OpenAI-compatible server, started
//! by `.ci/run` with `scripts/llm/ci-llm.sh`): a streamed text reply with usage, and a forced tool
//! call, decoded into the right events; a prompt larger than the server's context window, seen
//! as a context overflow. Skipped without `LLM_BASE_URL`, unless
//! `PI_REQUIRE_LIVE_LLM=1` (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::kinds;
use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{AssistantMessage, ContentBlock, Message, StopReason, UserMessage};
use pi_core::model::Model;
use pi_core::overflow::is_context_overflow;
use pi_effects::network::{Timeouts, Transport};
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::CallOptions;
use serde_json::json;

fn model(base_url: &str) -> Model {
    Model {
        id: "smollm2-135m-instruct".into(),
        name: "SmolLM2 135M".into(),
        api: "openai-completions".into(),
        provider: "local".into(),
        base_url: base_url.into(),
        input: vec!["text".into()],
        context_window: pi_testkit::LIVE_LLM_CONTEXT_WINDOW,
        max_tokens: 64,
        compat: Some(json!({"maxTokensField": "max_tokens"})),
        ..Model::default()
    }
}

async fn call(request: ModelRequest, options: CallOptions) -> (Vec<String>, AssistantMessage) {
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(10),
        idle: Duration::from_secs(120),
    })
    .unwrap();
    let mut call = ModelCall::new(&request, &options, 5);
    let mut events = call.open(&transport, &FixedClock::default()).await;
    while !call.is_done() {
        events.extend(call.next().await);
    }
    kinds(events)
}

#[tokio::test]
async fn a_streamed_reply_with_usage() {
    let Some(url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let request = ModelRequest {
        model: model(&url),
        system_prompt: "You are a helpful assistant.".into(),
        messages: vec![Message::User(UserMessage::from_text(
            "Write one sentence about the sea.",
            Vec::new(),
            1,
        ))]
        .into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: Some(40),
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    };
    let (kinds, message) = call(
        request,
        CallOptions {
            api_key: "none".into(),
            ..CallOptions::default()
        },
    )
    .await;
    assert_eq!(message.error_message, None);
    assert!(
        matches!(message.stop_reason, StopReason::Stop | StopReason::Length),
        "{message:?}"
    );
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(kinds.get(1).map(String::as_str), Some("text_start"));
    assert!(
        kinds.iter().filter(|k| *k == "text_delta").count() > 1,
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("text_end"));
    let text = match &message.content[..] {
        [ContentBlock::Text(t)] => t.text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(!text.trim().is_empty());
    assert!(
        message.usage.input > 0 && message.usage.output > 0,
        "{:?}",
        message.usage
    );
    assert_eq!(
        message.usage.total_tokens,
        message.usage.input + message.usage.output + message.usage.cache_read
    );
}

#[tokio::test]
async fn a_forced_tool_call() {
    let Some(url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let prefill = AssistantMessage {
        content: vec![ContentBlock::text("<tool_call>\n")],
        api: "openai-completions".into(),
        provider: "local".into(),
        model: "smollm2-135m-instruct".into(),
        ..AssistantMessage::default()
    };
    let request = ModelRequest {
        model: model(&url),
        system_prompt: "You are an assistant that can call tools.".into(),
        messages: vec![
            Message::User(UserMessage::from_text(
                "What is the weather in Paris?",
                Vec::new(),
                1,
            )),
            Message::Assistant(prefill),
        ]
        .into(),
        tools: vec![ToolDefinition {
            name: "get_weather".into(),
            description: "Get the current weather for a city.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            constrained_sampling: None,
        }],
        reasoning: None,
        session_id: None,
        max_tokens: Some(64),
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    };
    let mut options = CallOptions {
        api_key: "none".into(),
        tool_choice: Some(json!("required")),
        ..CallOptions::default()
    };
    options
        .body_overrides
        .insert("stop".into(), json!(["</tool_call>"]));
    options
        .body_overrides
        .insert("parallel_tool_calls".into(), json!(false));
    let (kinds, message) = call(request, options).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert!(kinds.contains(&"toolcall_start".to_owned()), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("toolcall_end"));
    let call = message.tool_calls().next().unwrap();
    assert_eq!(call.name, "get_weather");
    assert!(call.arguments.is_object(), "{:?}", call.arguments);
    assert!(!call.id.is_empty());
}

#[tokio::test]
async fn an_oversized_prompt_is_recognised_as_context_overflow() {
    let Some(url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let request = ModelRequest {
        model: model(&url),
        system_prompt: String::new(),
        messages: vec![Message::User(UserMessage::from_text(
            "overflow ".repeat(20_000),
            Vec::new(),
            1,
        ))]
        .into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: Some(8),
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    };
    let options = CallOptions {
        api_key: "none".into(),
        ..CallOptions::default()
    };
    let (_, message) = call(request, options).await;
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    assert!(
        is_context_overflow(&message, Some(pi_testkit::LIVE_LLM_CONTEXT_WINDOW)),
        "{:?}",
        message.error_message
    );
}
