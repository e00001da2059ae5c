//! The `streamGenerateContent` request body as the Google SDK sends what pi-ai builds
//! (`convertMessages`, `convertTools`, `buildParams`, the thinking options of
//! `streamSimpleGoogle`), with the SDK's key order.

use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{
    text_parts, AssistantMessage, ContentBlock, Message, ToolResultMessage, UserContent,
};
use pi_core::model::{Model, ThinkingLevel};
use serde_json::{json, Map, Value};

use crate::models::{clamp_thinking_level, max_tokens_152, named_level};
use crate::object::object;
use crate::strict_schema::strict_parameters;
use crate::transform::transform_messages;
use crate::CallOptions;

/// Models that need tool-call ids echoed (Claude and gpt-oss served by Google).
pub fn requires_tool_call_id(model_id: &str) -> bool {
    model_id.starts_with("claude-") || model_id.starts_with("gpt-oss-")
}

fn gemini_major_version(model_id: &str) -> Option<u32> {
    let id = model_id.to_lowercase();
    let rest = id.strip_prefix("gemini-")?;
    let rest = rest.strip_prefix("live-").unwrap_or(rest);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Gemini before 3 cannot take images inside a function response.
fn supports_multimodal_function_response(model_id: &str) -> bool {
    gemini_major_version(model_id).is_none_or(|major| major >= 3)
}

fn is_valid_signature(signature: &str) -> bool {
    let body = signature.trim_end_matches('=');
    !signature.is_empty()
        && signature.len() % 4 == 0
        && signature.len() - body.len() <= 2
        && !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn signature_for(same: bool, signature: Option<&str>) -> Option<String> {
    signature
        .filter(|s| same && is_valid_signature(s))
        .map(str::to_owned)
}

fn text_part(text: &str, thought: bool, signature: Option<String>) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), json!(text));
    if thought {
        part.insert("thought".into(), json!(true));
    }
    if let Some(signature) = signature {
        part.insert("thoughtSignature".into(), json!(signature));
    }
    Value::Object(part)
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"data": data, "mimeType": mime_type}})
}

fn model_parts(model: &Model, message: &AssistantMessage) -> Vec<Value> {
    let same = message.provider == model.provider && message.model == model.id;
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                let signature = signature_for(same, t.text_signature.as_deref());
                parts.push(text_part(&t.text, false, signature));
            }
            ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                let signature = signature_for(same, t.thinking_signature.as_deref());
                parts.push(text_part(&t.thinking, same, signature));
            }
            ContentBlock::ToolCall(call) => {
                let mut function_call = Map::new();
                let args = if call.arguments.is_null() {
                    json!({})
                } else {
                    call.arguments.clone()
                };
                function_call.insert("args".into(), args);
                // Pi 1.5.2 writes the id after the arguments.
                if requires_tool_call_id(&model.id) {
                    function_call.insert("id".into(), json!(call.id));
                }
                function_call.insert("name".into(), json!(call.name));
                let mut part = Map::new();
                part.insert("functionCall".into(), Value::Object(function_call));
                if let Some(signature) = signature_for(same, call.thought_signature.as_deref()) {
                    part.insert("thoughtSignature".into(), json!(signature));
                }
                parts.push(Value::Object(part));
            }
            _ => {}
        }
    }
    parts
}

fn push_tool_result(model: &Model, result: &ToolResultMessage, contents: &mut Vec<Value>) {
    let text = text_parts(&result.content).collect::<Vec<_>>().join(
        "
",
    );
    let images: Vec<(&str, &str)> = if model.input.iter().any(|i| i == "image") {
        result
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Image(img) => Some((img.mime_type.as_str(), img.data.as_str())),
                _ => None,
            })
            .collect()
    } else {
        Vec::new()
    };
    let multimodal = supports_multimodal_function_response(&model.id);
    let value = if !text.is_empty() {
        text
    } else if !images.is_empty() {
        "(see attached image)".to_owned()
    } else {
        String::new()
    };
    let mut response = Map::new();
    response.insert("name".into(), json!(result.tool_name));
    let key = if result.is_error { "error" } else { "output" };
    response.insert("response".into(), object([(key, Value::String(value))]));
    if !images.is_empty() && multimodal {
        let parts: Vec<Value> = images
            .iter()
            .map(|(mime, data)| json!({"inlineData": {"mimeType": mime, "data": data}}))
            .collect();
        response.insert("parts".into(), Value::Array(parts));
    }
    if requires_tool_call_id(&model.id) {
        response.insert("id".into(), json!(result.tool_call_id));
    }
    let part = object([("functionResponse", Value::Object(response))]);
    let joins_last = contents.last().is_some_and(|last| {
        last["role"] == "user"
            && last["parts"]
                .as_array()
                .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
    });
    match contents
        .last_mut()
        .and_then(|last| last["parts"].as_array_mut())
    {
        Some(parts) if joins_last => parts.push(part),
        _ => contents.push(json!({"parts": [part], "role": "user"})),
    }
    if !images.is_empty() && !multimodal {
        let mut parts = vec![json!({"text": "Tool result image:"})];
        parts.extend(images.iter().map(|(mime, data)| inline_data(mime, data)));
        contents.push(object([
            ("parts", Value::Array(parts)),
            ("role", json!("user")),
        ]));
    }
}

/// `convertMessages`: the transformed conversation as `contents`.
pub fn convert_messages(request: &ModelRequest, now: u64) -> Vec<Value> {
    let model = &request.model;
    let normalize = |id: &str, _: &AssistantMessage| {
        if !requires_tool_call_id(&model.id) {
            return id.to_owned();
        }
        id.encode_utf16()
            .map(|unit| match char::from_u32(u32::from(unit)) {
                Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => c,
                _ => '_',
            })
            .take(64)
            .collect()
    };
    let messages = transform_messages(&request.messages, model, &normalize, now);
    let mut contents = Vec::new();
    for message in messages.iter().map(|m| &**m) {
        match message {
            Message::User(user) => {
                let parts: Vec<Value> = match &user.content {
                    UserContent::Text(text) => vec![json!({"text": text})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(json!({"text": t.text})),
                            ContentBlock::Image(img) => {
                                Some(inline_data(&img.mime_type, &img.data))
                            }
                            _ => None,
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(object([
                        ("parts", Value::Array(parts)),
                        ("role", json!("user")),
                    ]));
                }
            }
            Message::Assistant(assistant) => {
                let parts = model_parts(model, assistant);
                if !parts.is_empty() {
                    contents.push(object([
                        ("parts", Value::Array(parts)),
                        ("role", json!("model")),
                    ]));
                }
            }
            Message::ToolResult(result) => push_tool_result(model, result, &mut contents),
        }
    }
    contents
}

/// The function declarations, and whether any is strict: Pi 1.5.2 makes the schema of a tool
/// that prefers constrained sampling strict for Gemini 3 and later
/// (`supportsGoogleStrictToolSampling`).
fn convert_tools(tools: &[ToolDefinition], supports_strict: bool) -> (Value, bool) {
    let mut any_strict = false;
    let declarations: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let strict = strict_parameters(
                &tool.parameters,
                tool.constrained_sampling.as_ref(),
                supports_strict,
            );
            any_strict |= strict.is_some();
            json!({
                "name": tool.name,
                "description": tool.description,
                "parametersJsonSchema": strict.unwrap_or_else(|| tool.parameters.clone()),
            })
        })
        .collect();
    (json!([{"functionDeclarations": declarations}]), any_strict)
}

/// `getGeminiMajorVersion` >= 3: the model id's major version after `gemini-` or
/// `gemini-live-`.
fn supports_strict_tools(model: &Model) -> bool {
    let id = lower_id(model);
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"));
    let digits: String = rest
        .unwrap_or("")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u64>().is_ok_and(|major| major >= 3)
}

fn lower_id(model: &Model) -> String {
    model.id.to_lowercase()
}

/// pi-ai 1.5.2's `usesGoogleThinkingLevel`: models that take a named level, not a budget.
fn uses_thinking_level(model: &Model) -> bool {
    let id = lower_id(model);
    family_match(&id, "-pro")
        || family_match(&id, "-flash")
        || gemini_4_or_later(&id)
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || id.contains("gemma4")
        || id.contains("gemma-4")
}

/// `/gemini-3(?:\.\d+)?<suffix>/` anywhere in the id.
fn family_match(id: &str, suffix: &str) -> bool {
    id.match_indices("gemini-3").any(|(at, m)| {
        let rest = &id[at + m.len()..];
        let rest = match rest.strip_prefix('.') {
            Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => {
                after.trim_start_matches(|c: char| c.is_ascii_digit())
            }
            _ => rest,
        };
        rest.starts_with(suffix)
    })
}

/// `/gemini-(?:[4-9]|[1-9]\d)/` anywhere in the id.
fn gemini_4_or_later(id: &str) -> bool {
    id.match_indices("gemini-").any(|(at, m)| {
        let mut digits = id[at + m.len()..].chars();
        match (digits.next(), digits.next()) {
            (Some('4'..='9'), _) => true,
            (Some('1'..='9'), Some(second)) => second.is_ascii_digit(),
            _ => false,
        }
    })
}

/// pi-ai's `resolveGoogleThinkingLevel`: the model's map (lower-cased) or the level itself, one
/// of the four levels Google knows. pi-ai refuses any other mapping with an error; the nearest
/// level Google knows is sent instead.
fn resolve_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    use ThinkingLevel::*;
    let mapped = named_level(model, level).map(|name| name.to_lowercase());
    let name = mapped.as_deref().unwrap_or(level.as_str());
    match name {
        "minimal" => Minimal,
        "low" => Low,
        "medium" => Medium,
        _ => High,
    }
}

/// The name the API takes for a resolved level.
fn level_name(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Minimal => "MINIMAL",
        ThinkingLevel::Low => "LOW",
        ThinkingLevel::Medium => "MEDIUM",
        _ => "HIGH",
    }
}

/// pi-ai's `getGoogleBudget` for a resolved level: the caller's, else the family's table, else
/// -1 (dynamic).
fn thinking_budget(model: &Model, level: ThinkingLevel, options: &CallOptions) -> i64 {
    use ThinkingLevel::*;
    if let Some(custom) = options.thinking_budgets.get(&level) {
        return i64::try_from(*custom).unwrap_or(i64::MAX);
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        Minimal => table[0],
        Low => table[1],
        Medium => table[2],
        _ => table[3],
    }
}

/// pi-ai 1.5.2's `getDisabledGoogleThinkingConfig`: a zero budget, or, for a level model that
/// cannot turn thinking off, its lowest level.
fn disabled_thinking(model: &Model) -> Value {
    if !uses_thinking_level(model) {
        return json!({"thinkingBudget": 0});
    }
    match clamp_thinking_level(model, ThinkingLevel::Off) {
        ThinkingLevel::Off => json!({"thinkingBudget": 0}),
        fallback => json!({"thinkingLevel": level_name(resolve_level(model, fallback))}),
    }
}

fn thinking_config(model: &Model, request: &ModelRequest, options: &CallOptions) -> Option<Value> {
    if !model.reasoning {
        return None;
    }
    let clamped = request
        .reasoning
        .filter(|l| *l != ThinkingLevel::Off)
        .map(|l| clamp_thinking_level(model, l));
    let level = match clamped {
        None | Some(ThinkingLevel::Off) => return Some(disabled_thinking(model)),
        Some(level) => resolve_level(model, level),
    };
    Some(if uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": level_name(level)})
    } else {
        json!({"includeThoughts": true, "thinkingBudget": thinking_budget(model, level, options)})
    })
}

/// The request body.
pub fn build_body(request: &ModelRequest, options: &CallOptions, now: u64) -> Value {
    let model = &request.model;
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_messages(request, now)),
    );
    if !request.system_prompt.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": request.system_prompt}], "role": "user"}),
        );
    }
    if !request.tools.is_empty() {
        let (tools, any_strict) = convert_tools(&request.tools, supports_strict_tools(model));
        body.insert("tools".into(), tools);
        let choice = options.tool_choice.as_ref().and_then(Value::as_str);
        // A strict declaration asks for validated calls unless the choice names none or any.
        let mode = match choice {
            Some("none") => Some("NONE"),
            Some("any") => Some("ANY"),
            _ if any_strict => Some("VALIDATED"),
            Some(_) => Some("AUTO"),
            None => None,
        };
        if let Some(mode) = mode {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": mode}}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    // Pi 1.5.2 always sends a cap: the request's or the model's, clamped to the context.
    generation.insert("maxOutputTokens".into(), json!(max_tokens_152(request)));
    if let Some(config) = thinking_config(model, request, options) {
        generation.insert("thinkingConfig".into(), config);
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}
