//! The Messages API request, key for key as pi-ai builds it (`buildParams`, `convertMessages`,
//! `convertTools`, and the thinking options of `streamSimpleAnthropic`).

use pi_core::agent::system::message_text;
use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{
    AssistantMessage, ContentBlock, Message, TextContent, ToolResultMessage, UserContent,
};
use pi_core::model::{Model, ThinkingLevel};
use serde_json::{json, Map, Value};

use crate::models::{clamp_max_tokens_to_context, max_tokens_152, named_level};
use crate::object::object;
use crate::strict_schema::{anthropic_strict_parameters, prefers_strict};
use crate::transform::transform_messages;
use crate::{compat_flag, CacheRetention, CallOptions};

use super::{effort, mid_convo};

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

/// The answer room a thinking budget leaves (pi-ai's `MIN_ANSWER_TOKENS`).
const MIN_ANSWER_TOKENS: u64 = 1024;

/// The betas a subscription (OAuth) request asks for.
const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];
/// Asked for when tool input does not stream eagerly.
pub(crate) const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";
/// Asked for with a thinking budget.
pub(crate) const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// Asked for when the model names fallback models.
const SERVER_SIDE_FALLBACK_BETA: &str = "server-side-fallback-2026-07-01";

/// The models Anthropic may answer with instead (`compat.allowedFallbackModels`: provider,
/// model and cost of each).
pub(crate) fn allowed_fallback_models(model: &Model) -> &[Value] {
    model
        .compat
        .as_ref()
        .and_then(|c| c.get("allowedFallbackModels"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Pi 1.5.2's stand-in for an error result's images, which follow the results.
const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

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

/// pi-ai's `splitErrorToolResultImages`: an error result's images become one placeholder text
/// per run of images, and are sent after the results with a caption naming the call.
fn split_error_images(result: &ToolResultMessage) -> Option<(Vec<ContentBlock>, Vec<Value>)> {
    if !result.is_error {
        return None;
    }
    let images: Vec<Value> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(img) => Some(image(&img.mime_type, &img.data)),
            _ => None,
        })
        .collect();
    if images.is_empty() {
        return None;
    }
    let mut content = Vec::new();
    let mut previous_was_placeholder = false;
    for block in &result.content {
        if let ContentBlock::Image(_) = block {
            if !previous_was_placeholder {
                content.push(ContentBlock::Text(TextContent {
                    text: ERROR_TOOL_IMAGE_PLACEHOLDER.into(),
                    ..TextContent::default()
                }));
            }
            previous_was_placeholder = true;
            continue;
        }
        previous_was_placeholder =
            matches!(block, ContentBlock::Text(t) if t.text == ERROR_TOOL_IMAGE_PLACEHOLDER);
        content.push(block.clone());
    }
    let caption = format!(
        "Images from the error result of tool call {} ({}):",
        result.tool_call_id, result.tool_name
    );
    let mut moved = vec![json!({"type": "text", "text": caption})];
    moved.extend(images);
    Some((content, moved))
}

fn assistant_blocks(
    message: &AssistantMessage,
    oauth: bool,
    allow_empty_signature: bool,
) -> Vec<Value> {
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
            ContentBlock::Thinking(t) => {
                let signature = t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !s.trim().is_empty());
                // Pi 1.5.2 keeps a signed block even when its text is blank.
                match signature {
                    Some(signature) => blocks.push(
                        json!({"type": "thinking", "thinking": t.thinking, "signature": signature}),
                    ),
                    None if t.thinking.trim().is_empty() => {}
                    None if allow_empty_signature => blocks
                        .push(json!({"type": "thinking", "thinking": t.thinking, "signature": ""})),
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
/// and the cache marker on the last user block. Only the model of the request shapes it, so a
/// caller converting a reply alone needs no request.
pub fn convert_messages(
    messages: &[Message],
    model: &Model,
    oauth: bool,
    cache: Option<&Value>,
    now: u64,
) -> Vec<Value> {
    convert_with_levels(messages, model, oauth, cache, now, false, Vec::new()).0
}

/// [`convert_messages`], and, when `levels` (mid-conversation effort), the index of each
/// converted answer that recorded an effort this request sends again, with the effort. Each of
/// `updates` (mid-conversation system messages, with how many kept answers precede each) goes
/// before the first later answer that converts to something, or last.
fn convert_with_levels(
    messages: &[Message],
    model: &Model,
    oauth: bool,
    cache: Option<&Value>,
    now: u64,
    levels: bool,
    updates: Vec<(usize, Value)>,
) -> (Vec<Value>, Vec<(usize, String)>) {
    let messages = transform_messages(messages, model, &|id, _| normalize_tool_call_id(id), now);
    let mut params: Vec<Value> = Vec::new();
    let mut recorded = Vec::new();
    let mut updates = updates.into_iter().peekable();
    let mut pending = Vec::new();
    let mut answers = 0;
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
                while let Some((_, update)) = updates.next_if(|(before, _)| *before <= answers) {
                    pending.push(update);
                }
                answers += 1;
                let allow_empty = compat_flag(model, "allowEmptySignature", false);
                let blocks = assistant_blocks(assistant, oauth, allow_empty);
                if !blocks.is_empty() {
                    params.append(&mut pending);
                    let level = effort::recorded(assistant, &model.provider).filter(|_| levels);
                    if let Some(level) = level {
                        recorded.push((params.len(), level.to_owned()));
                    }
                    params.push(object([
                        ("role", json!("assistant")),
                        ("content", Value::Array(blocks)),
                    ]));
                }
            }
            Message::ToolResult(_) => {
                let mut results = Vec::new();
                // Pi 1.5.2 moves the images of error results after the results, captioned.
                let mut error_images = Vec::new();
                while let Some(Message::ToolResult(result)) = messages.get(i).map(|m| &**m) {
                    let split = split_error_images(result);
                    let content = match &split {
                        Some((content, _)) => tool_result_content(content),
                        None => tool_result_content(&result.content),
                    };
                    results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": result.tool_call_id,
                        "content": content,
                        "is_error": result.is_error,
                    }));
                    if let Some((_, images)) = split {
                        error_images.extend(images);
                    }
                    i += 1;
                }
                results.extend(error_images);
                params.push(object([
                    ("role", json!("user")),
                    ("content", Value::Array(results)),
                ]));
                continue;
            }
        }
        i += 1;
    }
    params.extend(pending.into_iter().chain(updates.map(|(_, update)| update)));
    if let (Some(cache), Some(last)) = (cache, params.last_mut()) {
        mark_last_user_block(last, cache);
    }
    (params, recorded)
}

fn mark_last_user_block(message: &mut Value, cache: &Value) {
    if message["role"] != "user" && message["role"] != "system" {
        return;
    }
    match &mut message["content"] {
        Value::Array(blocks) => {
            if let Some(Value::Object(block)) = blocks.last_mut() {
                let kind = block.get("type").and_then(Value::as_str);
                if matches!(
                    kind,
                    Some("text" | "image" | "tool_result" | "tool_addition" | "tool_removal")
                ) {
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
    strict_tools: bool,
    without_preferred_strict: bool,
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
        let preferred = prefers_strict(tool.constrained_sampling.as_ref());
        let strict = anthropic_strict_parameters(
            &tool.parameters,
            tool.constrained_sampling.as_ref(),
            strict_tools && !(without_preferred_strict && preferred),
        );
        let schema = strict.as_ref().unwrap_or(&tool.parameters);
        let mut legacy = Map::new();
        legacy.insert("type".into(), json!("object"));
        legacy.insert(
            "properties".into(),
            schema
                .get("properties")
                .cloned()
                .unwrap_or_else(|| json!({})),
        );
        legacy.insert(
            "required".into(),
            schema.get("required").cloned().unwrap_or_else(|| json!([])),
        );
        for key in ["$defs", "definitions"] {
            if let Some(value) = schema.get(key) {
                legacy.insert(key.into(), value.clone());
            }
        }
        // A strict tool sends its strict schema with the legacy keys laid over it (in place,
        // as a JavaScript spread keeps them); any other the legacy keys alone.
        let input_schema = match strict {
            Some(Value::Object(mut strict)) => {
                out.insert("strict".into(), json!(true));
                strict.extend(legacy);
                strict
            }
            _ => legacy,
        };
        out.insert("input_schema".into(), Value::Object(input_schema));
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

/// How pi-ai's `streamSimple` asks for thinking.
enum Thinking {
    /// No level asked for (`thinkingEnabled: false`).
    Off,
    /// `compat.forceAdaptiveThinking`: the model decides, guided by an effort.
    Adaptive(String),
    /// A budget of thinking tokens.
    Budget(u64),
}

/// The token cap and thinking of `streamSimpleAnthropic`: a budget is added to the base cap (up
/// to the model's maximum, clamped to the context) and leaves at least 1,024 answer tokens.
fn thinking_and_max_tokens(request: &ModelRequest, options: &CallOptions) -> (u64, Thinking) {
    let model = &request.model;
    let base = max_tokens_152(request);
    let Some(level) = request.reasoning.filter(|l| *l != ThinkingLevel::Off) else {
        return (base, Thinking::Off);
    };
    if compat_flag(model, "forceAdaptiveThinking", false) {
        let effort = named_level(model, level).unwrap_or_else(|| {
            match level {
                ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
                ThinkingLevel::Medium => "medium",
                _ => "high",
            }
            .to_owned()
        });
        return (base, Thinking::Adaptive(effort));
    }
    let level = match level {
        // pi-ai's `clampReasoning`.
        ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
        other => other,
    };
    let custom = options.thinking_budgets.get(&level).copied();
    let mut budget = custom.unwrap_or_else(|| thinking_budget(level));
    let adjusted = base.saturating_add(budget).min(model.max_tokens);
    if adjusted <= budget {
        budget = budget.min(adjusted.saturating_sub(MIN_ANSWER_TOKENS));
    }
    let max_tokens = clamp_max_tokens_to_context(request, adjusted);
    let budget = budget.min(max_tokens.saturating_sub(MIN_ANSWER_TOKENS));
    (max_tokens, Thinking::Budget(budget))
}

/// pi-ai's `getBetaFeatures`: an `anthropic-beta` header configured on the model or the call
/// names them all; otherwise the subscription, tool-streaming, interleaved-thinking and
/// message-thread betas.
fn beta_features(
    request: &ModelRequest,
    options: &CallOptions,
    thinking: &Thinking,
    inline_tools: bool,
) -> Vec<String> {
    let model = &request.model;
    let configured = model
        .headers
        .iter()
        .flatten()
        .chain(options.headers.iter().map(|(name, value)| (name, value)))
        .filter(|(name, _)| name.eq_ignore_ascii_case("anthropic-beta"))
        .map(|(_, value)| value)
        .next_back();
    let mut features: Vec<String> = match configured {
        Some(value) => value
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect(),
        None => {
            let mut features = Vec::new();
            if is_oauth_token(&options.api_key) {
                features.extend(OAUTH_BETAS.map(str::to_owned));
            }
            if !request.tools.is_empty() && !supports_eager_tool_input_streaming(model) {
                features.push(FINE_GRAINED_TOOL_STREAMING_BETA.to_owned());
            }
            if model.reasoning && matches!(thinking, Thinking::Budget(_)) {
                features.push(INTERLEAVED_THINKING_BETA.to_owned());
            }
            if !allowed_fallback_models(model).is_empty() {
                features.push(SERVER_SIDE_FALLBACK_BETA.to_owned());
            }
            if effort::supported(request) {
                features.extend(effort::BETAS.map(str::to_owned));
            }
            if inline_tools {
                features.push(mid_convo::INLINE_TOOLS_BETA.to_owned());
            }
            if super::thread::threads_apply(request, options) {
                features.push(super::thread::MESSAGE_THREADS_BETA.to_owned());
            }
            features
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    features.retain(|f| seen.insert(f.clone()));
    features
}

/// Whether the request turns thinking off in so many words (`thinking: {type: "disabled"}`): a
/// reasoning model asked for no level, unless its map marks `off` unsupported (null).
fn thinking_disabled(model: &Model, thinking: &Thinking) -> bool {
    let off_unsupported = model
        .thinking_level_map
        .as_ref()
        .is_some_and(|m| matches!(m.get(&ThinkingLevel::Off), Some(None)));
    model.reasoning && matches!(thinking, Thinking::Off) && !off_unsupported
}

/// The effort a model with mid-conversation effort is asked for in the messages (see
/// [`effort`]), and which its answer records.
fn active_effort(request: &ModelRequest, thinking: &Thinking) -> Option<String> {
    let adaptive = match thinking {
        Thinking::Adaptive(level) => Some(level.as_str()),
        _ => None,
    };
    effort::active(
        request,
        thinking_disabled(&request.model, thinking),
        adaptive,
    )
}

/// The effort `request` asks for mid-conversation, which its answer records
/// (`providerThinkingLevel`); none for a model without mid-conversation effort.
pub(crate) fn requested_effort(request: &ModelRequest, options: &CallOptions) -> Option<String> {
    active_effort(request, &thinking_and_max_tokens(request, options).1)
}

/// The request body as pi-ai's payload hook sees it (`stream: true` and `betas` included; the
/// SDK sends the betas as the `anthropic-beta` header).
pub fn build_body(request: &ModelRequest, options: &CallOptions, now: u64) -> Value {
    build_body_with(request, options, now, strict_tools_given_up(request))
}

/// The diagnostic of an answer whose call went again without preferred strict tools.
pub(crate) const STRICT_TOOLS_FALLBACK: &str = "anthropic_strict_tools_fallback";

/// Whether the session's preferred strict tools go without strict: an earlier answer hit
/// Anthropic's strict-tool limits (Pi 1.5.2's `hasExceededStrictToolLimits`, kept per session
/// id, so never without one).
pub(crate) fn strict_tools_given_up(request: &ModelRequest) -> bool {
    request.session_id.is_some()
        && request
            .session_diagnostics
            .iter()
            .any(|d| d["type"] == STRICT_TOOLS_FALLBACK)
}

/// [`build_body`], the tools that prefer strict sent without it when
/// `without_preferred_strict` (Pi's `disablePreferredStrictTools`).
pub(crate) fn build_body_with(
    request: &ModelRequest,
    options: &CallOptions,
    now: u64,
    without_preferred_strict: bool,
) -> Value {
    let model = &request.model;
    let oauth = is_oauth_token(&options.api_key);
    let cache = cache_control(model, options.cache_retention);
    let cache = cache.as_ref();
    let (max_tokens, thinking) = thinking_and_max_tokens(request, options);
    let thinking_disabled = thinking_disabled(model, &thinking);
    let active_effort = active_effort(request, &thinking);

    let eager = supports_eager_tool_input_streaming(model);
    let strict_tools = compat_flag(model, "supportsStrictTools", false);
    let convert = |tools: &[ToolDefinition], cache: Option<&Value>| {
        convert_tools(
            tools,
            oauth,
            eager,
            strict_tools,
            without_preferred_strict,
            cache,
        )
    };
    let transcript = mid_convo::transcript(request);
    let inline_tools = transcript.as_ref().is_some_and(|t| t.inline_tools);
    let updates = transcript.as_ref().map_or_else(Vec::new, |transcript| {
        let convert_added = |tools: &[ToolDefinition]| convert(tools, None);
        let name = |name: &str| {
            if oauth {
                claude_code_name(name)
            } else {
                name.to_owned()
            }
        };
        let inline: Option<mid_convo::InlineTools<'_>> =
            inline_tools.then_some((&convert_added, &name));
        transcript
            .updates
            .iter()
            .filter_map(|(before, update)| {
                mid_convo::update_message(update, inline).map(|message| (*before, message))
            })
            .collect()
    });
    let mut params = Map::new();
    params.insert("model".into(), json!(model.id));
    let (messages, levels) = convert_with_levels(
        &request.messages,
        model,
        oauth,
        cache,
        now,
        active_effort.is_some(),
        updates,
    );
    let messages = match &active_effort {
        Some(active) => effort::with_level_messages(messages, &levels, active),
        None => messages,
    };
    params.insert("messages".into(), Value::Array(messages));
    params.insert("max_tokens".into(), json!(max_tokens));
    params.insert("stream".into(), json!(true));
    let betas = beta_features(request, options, &thinking, inline_tools);
    if !betas.is_empty() {
        params.insert("betas".into(), json!(betas));
    }
    let mut system = Vec::new();
    if oauth {
        system.push(text_block(CLAUDE_CODE_IDENTITY, cache));
    }
    let prompt = match &transcript {
        Some(transcript) => transcript.initial.map(message_text).unwrap_or_default(),
        None => request.system_prompt.clone(),
    };
    if !prompt.is_empty() {
        system.push(text_block(&prompt, cache));
    }
    if !system.is_empty() {
        params.insert("system".into(), Value::Array(system));
    }
    if let (Some(t), Thinking::Off) = (options.temperature, &thinking) {
        if compat_flag(model, "supportsTemperature", true) && !effort::supported(request) {
            params.insert("temperature".into(), json!(t));
        }
    }
    let tool_cache = cache.filter(|_| compat_flag(model, "supportsCacheControlOnTools", true));
    match transcript
        .as_ref()
        .and_then(|t| t.initial.filter(|_| t.inline_tools))
    {
        Some(initial) => {
            let initial = pi_core::agent::system::tool_definitions(
                initial.tools_added.as_deref().unwrap_or_default(),
            );
            let mut tools = match convert(&initial, tool_cache) {
                Value::Array(tools) => tools,
                _ => Vec::new(),
            };
            tools.push(mid_convo::deferred_placeholder());
            params.insert("tools".into(), Value::Array(tools));
        }
        None if !request.tools.is_empty() => {
            params.insert("tools".into(), convert(&request.tools, tool_cache));
        }
        None => {}
    }
    if thinking_disabled {
        params.insert("thinking".into(), json!({"type": "disabled"}));
    } else if active_effort.is_some() {
        params.insert("thinking".into(), effort::thinking());
        params.insert("output_config".into(), effort::output_config());
    } else if model.reasoning {
        match thinking {
            Thinking::Off => {}
            Thinking::Adaptive(level) => {
                params.insert(
                    "thinking".into(),
                    json!({"type": "adaptive", "display": "summarized"}),
                );
                params.insert("output_config".into(), json!({"effort": level}));
            }
            Thinking::Budget(budget) => {
                let budget = if budget > 0 { budget } else { 1024 };
                params.insert(
                    "thinking".into(),
                    json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"}),
                );
            }
        }
    }
    if let Some(choice) = &options.tool_choice {
        let choice = match choice {
            Value::String(kind) => json!({"type": kind}),
            other => other.clone(),
        };
        params.insert("tool_choice".into(), choice);
    }
    let fallbacks: Vec<Value> = allowed_fallback_models(model)
        .iter()
        .map(|fallback| json!({"model": fallback.get("model").cloned().unwrap_or(Value::Null)}))
        .collect();
    if !fallbacks.is_empty() {
        params.insert("fallbacks".into(), Value::Array(fallbacks));
    }
    Value::Object(params)
}
