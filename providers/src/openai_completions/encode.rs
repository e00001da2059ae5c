//! The Chat Completions request body, key for key as pi-ai builds it (`buildParams`,
//! `convertMessages`, `convertTools`).

use std::sync::Arc;

use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{text_parts, ContentBlock, Message, ToolResultMessage, UserContent};
use pi_core::model::{Model, ThinkingLevel};
use serde_json::{json, Map, Value};

use super::compat::{Compat, ThinkingFormat};
use super::memo::with_elements;
use crate::models::{clamp_thinking_level, mapped_level, max_tokens_152};
use crate::object::object;
use crate::strict_schema::strict_parameters;
use crate::transform::transform_messages;
use crate::{CacheRetention, CallOptions, RequestBody};

/// Removes unpaired UTF-16 surrogates (Pi's `sanitizeSurrogates`): a Rust string cannot hold
/// them, so text is returned as it is.
fn sanitize(text: &str) -> String {
    text.to_owned()
}

fn normalize_tool_call_id(model: &Model, id: &str) -> String {
    if let Some((call_id, _)) = id.split_once('|') {
        let cleaned: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        return cleaned.chars().take(40).collect();
    }
    if model.provider == "openai" {
        return id.chars().take(40).collect();
    }
    id.to_owned()
}

fn image_url(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// `convertMessages`: the system prompt and the transformed conversation in the API's shape.
/// A message's element is built once and shared by the requests that repeat the message (see
/// `super::memo`).
pub fn convert_messages(
    model: &Model,
    request: &ModelRequest,
    compat: &Compat,
    now: u64,
) -> Vec<Arc<Value>> {
    let mut params = Vec::new();
    let messages = transform_messages(
        &request.messages,
        model,
        &|id, _| normalize_tool_call_id(model, id),
        now,
    );
    if !request.system_prompt.is_empty() {
        let role = if model.reasoning && compat.supports_developer_role {
            "developer"
        } else {
            "system"
        };
        params.push(Arc::new(
            json!({"role": role, "content": sanitize(&request.system_prompt)}),
        ));
    }
    let bridge =
        || Arc::new(json!({"role": "assistant", "content": "I have processed the tool results."}));
    with_elements(model, compat, |elements| {
        let mut last_was_tool_result = false;
        let mut i = 0;
        while i < messages.len() {
            match &*messages[i] {
                Message::User(user) => {
                    if compat.requires_assistant_after_tool_result && last_was_tool_result {
                        params.push(bridge());
                    }
                    params.extend(elements.of(&messages[i], || user_message(&user.content)));
                    last_was_tool_result = false;
                }
                Message::Assistant(assistant) => {
                    params.extend(
                        elements.of(&messages[i], || assistant_message(model, assistant, compat)),
                    );
                    last_was_tool_result = false;
                }
                Message::ToolResult(_) => {
                    let mut images = Vec::new();
                    while let Some(Message::ToolResult(result)) = messages.get(i).map(|m| &**m) {
                        params.extend(
                            elements.of(&messages[i], || Some(tool_message(result, compat))),
                        );
                        if model.input.iter().any(|i| i == "image") {
                            images.extend(result.content.iter().filter_map(|b| match b {
                                ContentBlock::Image(img) => {
                                    Some(image_url(&img.mime_type, &img.data))
                                }
                                _ => None,
                            }));
                        }
                        i += 1;
                    }
                    if images.is_empty() {
                        last_was_tool_result = true;
                    } else {
                        if compat.requires_assistant_after_tool_result {
                            params.push(bridge());
                        }
                        let mut content = vec![
                            json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                        ];
                        content.extend(images);
                        params.push(Arc::new(object([
                            ("role", json!("user")),
                            ("content", Value::Array(content)),
                        ])));
                        last_was_tool_result = false;
                    }
                    continue;
                }
            }
            i += 1;
        }
    });
    params
}

/// A user message's element; `None` for blocks with nothing the API takes.
fn user_message(content: &UserContent) -> Option<Value> {
    match content {
        UserContent::Text(text) => Some(json!({"role": "user", "content": sanitize(text)})),
        UserContent::Blocks(blocks) => {
            let content: Vec<Value> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => {
                        Some(json!({"type": "text", "text": sanitize(&t.text)}))
                    }
                    ContentBlock::Image(img) => Some(image_url(&img.mime_type, &img.data)),
                    _ => None,
                })
                .collect();
            (!content.is_empty())
                .then(|| object([("role", json!("user")), ("content", Value::Array(content))]))
        }
    }
}

/// A tool result's element (its images, if the model takes them, follow in a user message).
fn tool_message(result: &ToolResultMessage, compat: &Compat) -> Value {
    let text: Vec<&str> = text_parts(&result.content).collect();
    let text = text.join("\n");
    let mut message = Map::new();
    message.insert("role".into(), json!("tool"));
    let content = if text.is_empty() {
        "(see attached image)".to_owned()
    } else {
        text
    };
    message.insert("content".into(), json!(sanitize(&content)));
    message.insert("tool_call_id".into(), json!(result.tool_call_id));
    if compat.requires_tool_result_name && !result.tool_name.is_empty() {
        message.insert("name".into(), json!(result.tool_name));
    }
    Value::Object(message)
}

fn assistant_message(
    model: &Model,
    assistant: &pi_core::message::AssistantMessage,
    compat: &Compat,
) -> Option<Value> {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        if compat.requires_assistant_after_tool_result {
            json!("")
        } else {
            Value::Null
        },
    );
    let text_parts: Vec<String> = text_parts(&assistant.content)
        .filter(|t| !t.trim().is_empty())
        .map(sanitize)
        .collect();
    let text = text_parts.concat();
    let thinking: Vec<&pi_core::message::ThinkingContent> = assistant
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => Some(t),
            _ => None,
        })
        .collect();
    if !thinking.is_empty() {
        if compat.requires_thinking_as_text {
            let joined: Vec<String> = thinking.iter().map(|t| sanitize(&t.thinking)).collect();
            let mut content = vec![json!({"type": "text", "text": joined.join("\n\n")})];
            content.extend(
                text_parts
                    .iter()
                    .map(|t| json!({"type": "text", "text": t})),
            );
            message.insert("content".into(), Value::Array(content));
        } else {
            if !text.is_empty() {
                message.insert("content".into(), json!(text));
            }
            if let Some(signature) = thinking[0]
                .thinking_signature
                .as_deref()
                .filter(|s| !s.is_empty())
            {
                let joined: Vec<&str> = thinking.iter().map(|t| t.thinking.as_str()).collect();
                message.insert(signature.to_owned(), json!(joined.join("\n")));
            }
        }
    } else if !text.is_empty() {
        message.insert("content".into(), json!(text));
    }
    let calls: Vec<&pi_core::message::ToolCall> = assistant.tool_calls().collect();
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name,
                    "arguments": pi_core::json::to_string(&c.arguments).unwrap_or_default(),
                }})
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(tool_calls));
        let details: Vec<Value> = calls
            .iter()
            .filter_map(|c| c.thought_signature.as_deref())
            .filter_map(|s| serde_json::from_str::<Value>(s).ok())
            .filter(|v| !v.is_null() && v != &json!(false) && v != &json!(0) && v != &json!(""))
            .collect();
        if !details.is_empty() {
            message.insert("reasoning_details".into(), Value::Array(details));
        }
    }
    if compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !message.contains_key("reasoning_content")
    {
        message.insert("reasoning_content".into(), json!(""));
    }
    let has_content = match message.get("content") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    (has_content || message.contains_key("tool_calls")).then_some(Value::Object(message))
}

fn convert_tools(tools: &[ToolDefinition], compat: &Compat) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = Map::new();
            function.insert("name".into(), json!(tool.name));
            function.insert("description".into(), json!(tool.description));
            let supports_strict = compat.supports_strict_mode;
            let strict = strict_parameters(
                &tool.parameters,
                tool.constrained_sampling.as_ref(),
                supports_strict,
            );
            let is_strict = strict.is_some();
            function.insert(
                "parameters".into(),
                strict.unwrap_or_else(|| tool.parameters.clone()),
            );
            if supports_strict {
                function.insert("strict".into(), json!(is_strict));
            }
            object([
                ("type", json!("function")),
                ("function", Value::Object(function)),
            ])
        })
        .collect()
}

fn has_tool_history(messages: &[Message]) -> bool {
    messages.iter().any(|m| match m {
        Message::ToolResult(_) => true,
        Message::Assistant(a) => a.tool_calls().next().is_some(),
        Message::User(_) => false,
    })
}

/// Anthropic-style `cache_control` on the system prompt, the last tool and the last user or
/// assistant text (OpenRouter's Anthropic models). A marked message is copied first: its
/// unmarked element stays shared with other requests.
fn apply_cache_control(
    messages: &mut [Arc<Value>],
    tools: Option<&mut Vec<Value>>,
    control: &Value,
) {
    fn markable(message: &Value) -> bool {
        match message.get("content") {
            Some(Value::String(text)) => !text.is_empty(),
            Some(Value::Array(parts)) => parts.iter().any(|p| p["type"] == "text"),
            _ => false,
        }
    }
    fn mark_text(message: &mut Value, control: &Value) {
        match message.get_mut("content") {
            Some(Value::String(text)) => {
                let text = std::mem::take(text);
                message["content"] =
                    json!([{"type": "text", "text": text, "cache_control": control}]);
            }
            Some(Value::Array(parts)) => {
                if let Some(part) = parts.iter_mut().rev().find(|p| p["type"] == "text") {
                    part["cache_control"] = control.clone();
                }
            }
            _ => {}
        }
    }
    let role_is = |message: &Value, roles: [&str; 2]| roles.iter().any(|r| message["role"] == *r);
    if let Some(system) = messages
        .iter_mut()
        .find(|m| role_is(m, ["system", "developer"]))
        .filter(|m| markable(m))
    {
        mark_text(Arc::make_mut(system), control);
    }
    if let Some(last) = tools.and_then(|t| t.last_mut()) {
        last["cache_control"] = control.clone();
    }
    if let Some(message) = messages
        .iter_mut()
        .rev()
        .find(|m| role_is(m, ["user", "assistant"]) && markable(m))
    {
        mark_text(Arc::make_mut(message), control);
    }
}

/// `buildParams`: the whole request body.
pub fn build_body(
    request: &ModelRequest,
    compat: &Compat,
    options: &CallOptions,
    now: u64,
) -> RequestBody {
    let model = &request.model;
    let mut messages = convert_messages(model, request, compat, now);
    let retention = options.cache_retention;
    let mut params = Map::new();
    params.insert("model".into(), json!(model.id));
    params.insert("messages".into(), Value::Null);
    params.insert("stream".into(), json!(true));
    let cache_key = (model.base_url.contains("api.openai.com")
        && retention != CacheRetention::None)
        || (retention == CacheRetention::Long && compat.supports_long_cache_retention);
    if let (true, Some(session)) = (cache_key, &request.session_id) {
        params.insert("prompt_cache_key".into(), json!(session));
    }
    if retention == CacheRetention::Long && compat.supports_long_cache_retention {
        params.insert("prompt_cache_retention".into(), json!("24h"));
    }
    if compat.supports_usage_in_streaming {
        params.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        params.insert("store".into(), json!(false));
    }
    let max_tokens = Some(max_tokens_152(request)).filter(|m| *m > 0);
    if let Some(max) = max_tokens {
        let field = if compat.use_max_tokens_field {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        params.insert(field.into(), json!(max));
    }
    if let Some(temperature) = options.temperature {
        params.insert("temperature".into(), json!(temperature));
    }
    let mut tools = if !request.tools.is_empty() {
        Some(convert_tools(&request.tools, compat))
    } else if has_tool_history(&request.messages) {
        Some(Vec::new())
    } else {
        None
    };
    let control =
        (compat.anthropic_cache_control && retention != CacheRetention::None).then(|| {
            if retention == CacheRetention::Long && compat.supports_long_cache_retention {
                json!({"type": "ephemeral", "ttl": "1h"})
            } else {
                json!({"type": "ephemeral"})
            }
        });
    if let Some(control) = &control {
        apply_cache_control(&mut messages, tools.as_mut(), control);
    }
    if let Some(tools) = tools {
        let non_empty = !tools.is_empty();
        params.insert("tools".into(), Value::Array(tools));
        if non_empty && compat.zai_tool_stream {
            params.insert("tool_stream".into(), json!(true));
        }
    }
    if let Some(choice) = &options.tool_choice {
        params.insert("tool_choice".into(), choice.clone());
    }
    reasoning_params(model, request.reasoning, compat, &mut params);
    if model.base_url.contains("openrouter.ai") {
        if let Some(routing) = model
            .compat
            .as_ref()
            .and_then(|c| c.get("openRouterRouting"))
        {
            params.insert("provider".into(), routing.clone());
        }
    }
    if model.base_url.contains("ai-gateway.vercel.sh") {
        let routing = &compat.vercel_gateway_routing;
        let mut gateway = Map::new();
        for key in ["only", "order"] {
            if let Some(v) = routing.get(key) {
                gateway.insert(key.into(), v.clone());
            }
        }
        if !gateway.is_empty() {
            params.insert("providerOptions".into(), json!({"gateway": gateway}));
        }
    }
    RequestBody::with_shared(params, "messages", messages)
}

fn reasoning_params(
    model: &Model,
    reasoning: Option<ThinkingLevel>,
    compat: &Compat,
    params: &mut Map<String, Value>,
) {
    let effort = reasoning
        .map(|level| clamp_thinking_level(model, level))
        .filter(|level| *level != ThinkingLevel::Off);
    let mapped = |level: ThinkingLevel| json!(mapped_level(model, level));
    if !model.reasoning {
        return;
    }
    match compat.thinking_format {
        ThinkingFormat::Zai | ThinkingFormat::Qwen => {
            params.insert("enable_thinking".into(), json!(effort.is_some()));
        }
        ThinkingFormat::QwenChatTemplate => {
            params.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        ThinkingFormat::DeepSeek => {
            params.insert(
                "thinking".into(),
                json!({"type": if effort.is_some() { "enabled" } else { "disabled" }}),
            );
            if let Some(level) = effort {
                params.insert("reasoning_effort".into(), mapped(level));
            }
        }
        ThinkingFormat::OpenRouter => {
            let off = model
                .thinking_level_map
                .as_ref()
                .and_then(|m| m.get(&ThinkingLevel::Off));
            match (effort, off) {
                (Some(level), _) => {
                    params.insert("reasoning".into(), json!({"effort": mapped(level)}));
                }
                (None, Some(None)) => {}
                (None, Some(Some(value))) => {
                    params.insert("reasoning".into(), json!({"effort": value}));
                }
                (None, None) => {
                    params.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
        ThinkingFormat::OpenAi if compat.supports_reasoning_effort => match effort {
            Some(level) => {
                params.insert("reasoning_effort".into(), mapped(level));
            }
            None => {
                if let Some(Some(off)) = model
                    .thinking_level_map
                    .as_ref()
                    .and_then(|m| m.get(&ThinkingLevel::Off))
                {
                    params.insert("reasoning_effort".into(), json!(off));
                }
            }
        },
        ThinkingFormat::OpenAi => {}
    }
}
