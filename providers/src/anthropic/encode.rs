//! The Messages API request, key for key as pi-ai builds it (`buildParams`, `convertMessages`,
//! `convertTools`, and the thinking options of `streamSimpleAnthropic`).

use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{AssistantMessage, ContentBlock, Message, UserContent};
use pi_core::model::{Model, ThinkingLevel};
use serde_json::{json, Map, Value};

use crate::models::{base_max_tokens, named_level};
use crate::object::object;
use crate::transform::transform_messages;
use crate::{compat_flag, CacheRetention, CallOptions};

/// Tool names as Claude Code spells them; subscription (OAuth) requests must use them.
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// The identity a subscription (OAuth) request's system prompt must open with.
const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// Thinking budgets per level for models without adaptive thinking (pi-ai's defaults).
fn thinking_budget(level: ThinkingLevel) -> u64 {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 16384,
    }
}

/// Whether the key is a subscription token rather than an API key.
pub fn is_oauth_token(api_key: &str) -> bool {
    api_key.contains("sk-ant-oat")
}

/// Opus 4.6+/Sonnet 4.6 decide how much to think themselves (with an effort level).
pub fn supports_adaptive_thinking(model_id: &str) -> bool {
    [
        "opus-4-6",
        "opus-4.6",
        "opus-4-7",
        "opus-4.7",
        "sonnet-4-6",
        "sonnet-4.6",
    ]
    .iter()
    .any(|m| model_id.contains(m))
}

/// Whether tool input streams eagerly (else the fine-grained streaming beta is requested).
pub fn supports_eager_tool_input_streaming(model: &Model) -> bool {
    compat_flag(model, "supportsEagerToolInputStreaming", true)
}

fn cache_control(model: &Model, retention: CacheRetention) -> Option<Value> {
    match retention {
        CacheRetention::None => None,
        CacheRetention::Long if compat_flag(model, "supportsLongCacheRetention", true) => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        _ => Some(json!({"type": "ephemeral"})),
    }
}

fn claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_owned(), |t| (*t).to_owned())
}

fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn image(mime_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

/// A tool result's content: one string when it is all text, else blocks (with a placeholder
/// text when there are only images).
fn tool_result_content(content: &[ContentBlock]) -> Value {
    let has_images = content.iter().any(|b| matches!(b, ContentBlock::Image(_)));
    if !has_images {
        let texts: Vec<&str> = content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.as_str(),
                _ => "",
            })
            .collect();
        return Value::String(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
            ContentBlock::Image(img) => Some(image(&img.mime_type, &img.data)),
            _ => None,
        })
        .collect();
    if !blocks.iter().any(|b| b["type"] == "text") {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

fn assistant_blocks(message: &AssistantMessage, oauth: bool) -> Vec<Value> {
    let mut blocks = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                blocks.push(json!({"type": "text", "text": t.text}));
            }
            ContentBlock::Thinking(t) if t.redacted == Some(true) => {
                let mut redacted = json!({"type": "redacted_thinking"});
                if let (Some(data), Some(fields)) =
                    (&t.thinking_signature, redacted.as_object_mut())
                {
                    fields.insert("data".into(), json!(data));
                }
                blocks.push(redacted);
            }
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                match t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !s.trim().is_empty())
                {
                    Some(signature) => blocks.push(
                        json!({"type": "thinking", "thinking": t.thinking, "signature": signature}),
                    ),
                    None => blocks.push(json!({"type": "text", "text": t.thinking})),
                }
            }
            ContentBlock::ToolCall(call) => {
                let name = if oauth {
                    claude_code_name(&call.name)
                } else {
                    call.name.clone()
                };
                let input = if call.arguments.is_null() {
                    json!({})
                } else {
                    call.arguments.clone()
                };
                blocks.push(object([
                    ("type", json!("tool_use")),
                    ("id", json!(call.id)),
                    ("name", json!(name)),
                    ("input", input),
                ]));
            }
            _ => {}
        }
    }
    blocks
}

/// `convertMessages`: the transformed conversation, tool results grouped into one user turn,
/// and the cache marker on the last user block.
pub fn convert_messages(
    request: &ModelRequest,
    oauth: bool,
    cache: Option<&Value>,
    now: u64,
) -> Vec<Value> {
    let messages = transform_messages(
        &request.messages,
        &request.model,
        &|id, _| normalize_tool_call_id(id),
        now,
    );
    let mut params: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &*messages[i] {
            Message::User(user) => match &user.content {
                UserContent::Text(text) if !text.trim().is_empty() => {
                    params.push(json!({"role": "user", "content": text}));
                }
                UserContent::Text(_) => {}
                UserContent::Blocks(blocks) => {
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                                Some(json!({"type": "text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => Some(image(&img.mime_type, &img.data)),
                            _ => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        params.push(object([
                            ("role", json!("user")),
                            ("content", Value::Array(content)),
                        ]));
                    }
                }
            },
            Message::Assistant(assistant) => {
                let blocks = assistant_blocks(assistant, oauth);
                if !blocks.is_empty() {
                    params.push(object([
                        ("role", json!("assistant")),
                        ("content", Value::Array(blocks)),
                    ]));
                }
            }
            Message::ToolResult(_) => {
                let mut results = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(i).map(|m| &**m) {
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": result.tool_call_id,
                        "content": tool_result_content(&result.content),
                        "is_error": result.is_error,
                    }));
                    i += 1;
                }
                params.push(object([
                    ("role", json!("user")),
                    ("content", Value::Array(results)),
                ]));
                continue;
            }
        }
        i += 1;
    }
    if let (Some(cache), Some(last)) = (cache, params.last_mut()) {
        mark_last_user_block(last, cache);
    }
    params
}

fn mark_last_user_block(message: &mut Value, cache: &Value) {
    if message["role"] != "user" {
        return;
    }
    match &mut message["content"] {
        Value::Array(blocks) => {
            if let Some(Value::Object(block)) = blocks.last_mut() {
                let kind = block.get("type").and_then(Value::as_str);
                if matches!(kind, Some("text" | "image" | "tool_result")) {
                    block.insert("cache_control".into(), cache.clone());
                }
            }
        }
        content @ Value::String(_) => {
            let text = content.take();
            *content = json!([{"type": "text", "text": text, "cache_control": cache}]);
        }
        _ => {}
    }
}

fn convert_tools(
    tools: &[ToolDefinition],
    oauth: bool,
    eager: bool,
    cache: Option<&Value>,
) -> Value {
    let last = tools.len().saturating_sub(1);
    let tools = tools.iter().enumerate().map(|(index, tool)| {
        let mut out = Map::new();
        let name = if oauth {
            claude_code_name(&tool.name)
        } else {
            tool.name.clone()
        };
        out.insert("name".into(), json!(name));
        out.insert("description".into(), json!(tool.description));
        if eager {
            out.insert("eager_input_streaming".into(), json!(true));
        }
        let schema = &tool.parameters;
        out.insert(
            "input_schema".into(),
            json!({
                "type": "object",
                "properties": schema.get("properties").cloned().unwrap_or_else(|| json!({})),
                "required": schema.get("required").cloned().unwrap_or_else(|| json!([])),
            }),
        );
        if let (Some(cache), true) = (cache, index == last) {
            out.insert("cache_control".into(), cache.clone());
        }
        Value::Object(out)
    });
    Value::Array(tools.collect())
}

fn text_block(text: &str, cache: Option<&Value>) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if let (Some(cache), Some(fields)) = (cache, block.as_object_mut()) {
        fields.insert("cache_control".into(), cache.clone());
    }
    block
}

/// The request body (`stream: true` included).
pub fn build_body(request: &ModelRequest, options: &CallOptions, now: u64) -> Value {
    let model = &request.model;
    let oauth = is_oauth_token(&options.api_key);
    let cache = cache_control(model, options.cache_retention);
    let cache = cache.as_ref();
    let base_max_tokens = base_max_tokens(request);
    let level = request.reasoning.filter(|l| *l != ThinkingLevel::Off);
    let adaptive = supports_adaptive_thinking(&model.id);
    let (max_tokens, budget) = match level {
        Some(level) if !adaptive => {
            let level = match level {
                // pi-ai's `clampReasoning`.
                ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
                other => other,
            };
            let custom = options.thinking_budgets.get(&level).copied();
            let mut budget = custom.unwrap_or_else(|| thinking_budget(level));
            let max = (base_max_tokens.unwrap_or(0) + budget).min(model.max_tokens);
            if max <= budget {
                budget = max.saturating_sub(1024);
            }
            (Some(max), Some(budget))
        }
        _ => (base_max_tokens, None),
    };

    let mut params = Map::new();
    params.insert("model".into(), json!(model.id));
    params.insert(
        "messages".into(),
        Value::Array(convert_messages(request, oauth, cache, now)),
    );
    let max_tokens = max_tokens
        .filter(|m| *m > 0)
        .unwrap_or(model.max_tokens / 3);
    params.insert("max_tokens".into(), json!(max_tokens));
    params.insert("stream".into(), json!(true));
    let mut system = Vec::new();
    if oauth {
        system.push(text_block(CLAUDE_CODE_IDENTITY, cache));
    }
    if !request.system_prompt.is_empty() {
        system.push(text_block(&request.system_prompt, cache));
    }
    if !system.is_empty() {
        params.insert("system".into(), Value::Array(system));
    }
    if let (Some(t), None) = (options.temperature, level) {
        params.insert("temperature".into(), json!(t));
    }
    if !request.tools.is_empty() {
        let eager = supports_eager_tool_input_streaming(model);
        params.insert(
            "tools".into(),
            convert_tools(&request.tools, oauth, eager, cache),
        );
    }
    if model.reasoning {
        let mut effort_config = None;
        let thinking = match level {
            Some(level) if adaptive => {
                let effort = match named_level(model, level) {
                    Some(value) => value,
                    None => match level {
                        ThinkingLevel::Minimal | ThinkingLevel::Low => "low".to_owned(),
                        ThinkingLevel::Medium => "medium".to_owned(),
                        _ => "high".to_owned(),
                    },
                };
                effort_config = Some(json!({"effort": effort}));
                json!({"type": "adaptive", "display": "summarized"})
            }
            Some(_) => json!({
                "type": "enabled",
                "budget_tokens": budget.filter(|b| *b > 0).unwrap_or(1024),
                "display": "summarized",
            }),
            None => json!({"type": "disabled"}),
        };
        params.insert("thinking".into(), thinking);
        if let Some(config) = effort_config {
            params.insert("output_config".into(), config);
        }
    }
    if let Some(choice) = &options.tool_choice {
        let choice = match choice {
            Value::String(kind) => json!({"type": kind}),
            other => other.clone(),
        };
        params.insert("tool_choice".into(), choice);
    }
    Value::Object(params)
}
