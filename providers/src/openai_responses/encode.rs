//! The Responses API request body, key for key as pi-ai builds it (`buildParams`,
//! `convertResponsesMessages`, `convertResponsesTools`).

use std::collections::BTreeMap;

use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{text_parts, AssistantMessage, ContentBlock, Message, UserContent};
use pi_core::model::{Model, ThinkingLevel};
use serde_json::{json, Map, Value};

use super::{grammar, transcript};
use crate::hash::short_hash;
use crate::models::{clamp_thinking_level, max_tokens_152};

/// The smallest `max_output_tokens` Pi 1.5.2 asks for (`OPENAI_RESPONSES_MIN_OUTPUT_TOKENS`).
const MIN_OUTPUT_TOKENS: u64 = 16;
use crate::object::object;
use crate::strict_schema::strict_parameters;
use crate::transform::transform_messages;
use crate::{compat_flag, CacheRetention, CallOptions};

/// Providers whose tool-call ids carry a Responses item id (`call|item`).
const ITEM_ID_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];

/// The effort a request asks for in its settings when its level goes mid-conversation (Pi
/// 1.5.2's `CONFIGURATION_UPDATE_REQUEST_EFFORT`).
const CONFIGURATION_UPDATE_REQUEST_EFFORT: &str = "medium";

/// The address of OpenAI's own API, where a key that is not an API key is a ChatGPT sign-in.
const OPENAI_API_BASE_URL: &str = "https://api.openai.com/v1";

/// Whether the call signs in with ChatGPT (Pi's `isChatGPTSignIn`): OpenAI's own API with a
/// token that is not an `sk-` key. Such calls leave out the fields that sign-in refuses.
fn chatgpt_sign_in(model: &Model, api_key: &str) -> bool {
    model.provider == "openai"
        && model.base_url == OPENAI_API_BASE_URL
        && !api_key.starts_with("sk-")
}

/// The effort `request` asks for mid-conversation (Pi 1.5.2's `getConfigurationUpdateEffort`):
/// with `compat.supportsMidConvoEffort`, a level (clamped, not off) and no ChatGPT sign-in, the
/// level as the model's map names it. It goes as a trailing `configuration_update` item, and the
/// answer records it (`providerThinkingLevel`).
pub fn requested_effort(request: &ModelRequest, options: &CallOptions) -> Option<String> {
    let model = &request.model;
    if !compat_flag(model, "supportsMidConvoEffort", false)
        || chatgpt_sign_in(model, &options.api_key)
    {
        return None;
    }
    let level = request
        .reasoning
        .map(|level| clamp_thinking_level(model, level))
        .filter(|level| *level != ThinkingLevel::Off)?;
    let mapped = model
        .thinking_level_map
        .as_ref()
        .and_then(|map| map.get(&level).cloned().flatten());
    Some(mapped.unwrap_or_else(|| level.as_str().to_owned()))
}

fn configuration_update(effort: &str) -> Value {
    json!({"type": "configuration_update", "reasoning": {"effort": effort}})
}

/// Whether the session id goes out as a `session_id` header.
pub fn sends_session_id_header(model: &Model) -> bool {
    compat_flag(model, "sendSessionIdHeader", true)
}

fn normalize_id_part(part: &str) -> String {
    // Per UTF-16 unit, as the original's regex sees the string; the result is ASCII.
    let cleaned: String = part
        .encode_utf16()
        .map(|unit| match char::from_u32(u32::from(unit)) {
            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => c,
            _ => '_',
        })
        .take(64)
        .collect();
    cleaned.trim_end_matches('_').to_owned()
}

fn normalize_tool_call_id(model: &Model, id: &str, source: &AssistantMessage) -> String {
    if !ITEM_ID_PROVIDERS.contains(&model.provider.as_str()) {
        return normalize_id_part(id);
    }
    let Some((call_id, rest)) = id.split_once('|') else {
        return normalize_id_part(id);
    };
    let item_id = rest.split('|').next().unwrap_or(rest);
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item = if foreign {
        let hashed = format!("fc_{}", short_hash(item_id));
        hashed.chars().take(64).collect()
    } else {
        normalize_id_part(item_id)
    };
    if !item.starts_with("fc_") {
        item = normalize_id_part(&format!("fc_{item}"));
    }
    format!("{}|{item}", normalize_id_part(call_id))
}

/// A text block's signature: the output item id and phase, as JSON (v1) or a bare legacy id.
fn parse_text_signature(signature: Option<&str>) -> Option<(String, Option<String>)> {
    let signature = signature.filter(|s| !s.is_empty())?;
    if signature.starts_with('{') {
        if let Ok(parsed) = serde_json::from_str::<Value>(signature) {
            if let (Some(1), Some(id)) = (
                parsed.get("v").and_then(Value::as_f64).map(|v| v as i64),
                parsed.get("id").and_then(Value::as_str),
            ) {
                let phase = parsed
                    .get("phase")
                    .and_then(Value::as_str)
                    .filter(|p| matches!(*p, "commentary" | "final_answer"))
                    .map(str::to_owned);
                return Some((id.to_owned(), phase));
            }
        }
    }
    Some((signature.to_owned(), None))
}

fn input_image(mime_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime_type};base64,{data}")})
}

/// The items of `message`, preceded, when the request sends its level mid-conversation
/// (`efforts`), by a `configuration_update` with the level an answer of the same model recorded.
fn assistant_items(
    model: &Model,
    message: &AssistantMessage,
    index: usize,
    grammar_inputs: &BTreeMap<String, String>,
    efforts: bool,
    out: &mut Vec<Value>,
) {
    let start = out.len();
    answer_items(model, message, index, grammar_inputs, out);
    let same_model =
        message.provider == model.provider && message.api == model.api && message.model == model.id;
    if let (true, true, Some(level)) = (
        efforts && same_model,
        out.len() > start,
        &message.provider_thinking_level,
    ) {
        out.insert(start, configuration_update(level));
    }
}

fn answer_items(
    model: &Model,
    message: &AssistantMessage,
    index: usize,
    grammar_inputs: &BTreeMap<String, String>,
    out: &mut Vec<Value>,
) {
    let different_model =
        message.model != model.id && message.provider == model.provider && message.api == model.api;
    // Pi 1.5.2 counts every text block of the message for the fallback ids of unsigned ones.
    let mut text_index = 0usize;
    for block in &message.content {
        match block {
            ContentBlock::Thinking(t) => {
                let item = t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .and_then(|s| serde_json::from_str::<Value>(s).ok());
                out.extend(item);
            }
            ContentBlock::Text(t) => {
                let parsed = parse_text_signature(t.text_signature.as_deref());
                let (id, phase) = match parsed {
                    Some((id, phase)) if id.encode_utf16().count() > 64 => {
                        (format!("msg_{}", short_hash(&id)), phase)
                    }
                    Some((id, phase)) => (id, phase),
                    None if text_index == 0 => (format!("msg_pi_{index}"), None),
                    None => (format!("msg_pi_{index}_{text_index}"), None),
                };
                text_index += 1;
                let mut item = json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": t.text, "annotations": []}],
                    "status": "completed",
                    "id": id,
                });
                if let (Some(phase), Some(fields)) = (phase, item.as_object_mut()) {
                    fields.insert("phase".into(), json!(phase));
                }
                out.push(item);
            }
            ContentBlock::ToolCall(call) => {
                let mut parts = call.id.split('|');
                let call_id = parts.next().unwrap_or_default();
                let property = grammar_inputs.get(&call.name);
                // Pi 1.5.2 keeps the item id only for the same model and the item's own prefix.
                let prefix = if property.is_some() { "ctc_" } else { "fc_" };
                let item_id = parts
                    .next()
                    .filter(|item| !different_model && item.starts_with(prefix));
                let mut fields = Map::new();
                let kind = if property.is_some() {
                    "custom_tool_call"
                } else {
                    "function_call"
                };
                fields.insert("type".into(), json!(kind));
                if let Some(item) = item_id {
                    fields.insert("id".into(), json!(item));
                }
                fields.insert("call_id".into(), json!(call_id));
                fields.insert("name".into(), json!(call.name));
                match property {
                    Some(property) => {
                        let input = call.arguments.get(property).and_then(Value::as_str);
                        fields.insert("input".into(), json!(input.unwrap_or_default()));
                    }
                    None => {
                        let arguments =
                            pi_core::json::to_string(&call.arguments).unwrap_or_default();
                        fields.insert("arguments".into(), json!(arguments));
                    }
                }
                out.push(Value::Object(fields));
            }
            ContentBlock::Image(_) => {}
        }
    }
}

/// Why Pi 1.5.2 fails `request` before sending it, if it does: a grammar tool it refuses, else
/// the first call of such a tool, in the conversation as sent, whose input is not a string.
pub fn refusal(request: &ModelRequest, now: u64) -> Option<String> {
    let model = &request.model;
    if let Some(refused) = grammar::refused_tool(model, &request.tools) {
        return Some(refused);
    }
    let grammar_inputs = grammar::input_properties(model, &request.tools);
    if grammar_inputs.is_empty() {
        return None;
    }
    let messages = transform_messages(
        &request.messages,
        model,
        &|id, source| normalize_tool_call_id(model, id, source),
        now,
    );
    let calls = messages.iter().flat_map(|message| match &**message {
        Message::Assistant(assistant) => assistant.content.as_slice(),
        _ => &[],
    });
    calls
        .filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
        .find_map(|call| {
            let property = grammar_inputs.get(&call.name)?;
            grammar::call_input(&call.name, &call.arguments, property).err()
        })
}

/// `convertResponsesMessages`: the system prompt (as `developer` for reasoning models whose
/// compat allows it) and the transformed conversation as Responses input items.
pub fn convert_messages(request: &ModelRequest, now: u64) -> Vec<Value> {
    convert_with_effort(request, now, None, transcript::transcript(request).as_ref())
}

/// [`convert_messages`] for a request that asks for `effort` mid-conversation: earlier levels
/// before their answers, and the effort last; `transcript` is the request's, resolved once by
/// the caller, which places its tools too.
fn convert_with_effort(
    request: &ModelRequest,
    now: u64,
    effort: Option<&str>,
    transcript: Option<&transcript::Transcript<'_>>,
) -> Vec<Value> {
    let model = &request.model;
    let messages = transform_messages(
        &request.messages,
        model,
        &|id, source| normalize_tool_call_id(model, id, source),
        now,
    );
    let grammar_inputs = grammar::input_properties(model, &request.tools);
    let mut items = Vec::new();
    // pi-ai's `instructionRole`: a reasoning model's instructions are the developer's, unless its
    // compat says the endpoint has no such role.
    let role = if model.reasoning && compat_flag(model, "supportsDeveloperRole", true) {
        "developer"
    } else {
        "system"
    };
    let starts = match transcript {
        Some(_) => {
            let transformed: Vec<&Message> = messages.iter().map(|m| &**m).collect();
            transcript::places(&request.messages, &transformed)
        }
        None => Vec::new(),
    };
    let mut emitter = transcript.map(transcript::Emitter::new);
    let (strict, grammar_tools) = (
        compat_flag(model, "supportsStrictMode", false),
        grammar::supported(model),
    );
    let convert =
        |tools: &[ToolDefinition], defer: bool| convert_tools(tools, strict, grammar_tools, defer);
    if emitter.is_none() && !request.system_prompt.is_empty() {
        items.push(json!({"role": role, "content": request.system_prompt}));
    }
    let mut index = 0;
    for (position, message) in messages.iter().map(|m| &**m).enumerate() {
        if let Some(emitter) = &mut emitter {
            emitter.emit(
                Some(position),
                &starts,
                role,
                &mut index,
                &convert,
                &mut items,
            );
        }
        let before = items.len();
        match message {
            Message::User(user) => {
                let content: Vec<Value> = match &user.content {
                    UserContent::Text(text) => vec![json!({"type": "input_text", "text": text})],
                    UserContent::Blocks(blocks) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => {
                                Some(json!({"type": "input_text", "text": t.text}))
                            }
                            ContentBlock::Image(img) => {
                                Some(input_image(&img.mime_type, &img.data))
                            }
                            _ => None,
                        })
                        .collect(),
                };
                if !content.is_empty() {
                    items.push(object([
                        ("role", json!("user")),
                        ("content", Value::Array(content)),
                    ]));
                }
            }
            Message::Assistant(assistant) => assistant_items(
                model,
                assistant,
                index,
                &grammar_inputs,
                effort.is_some(),
                &mut items,
            ),
            Message::ToolResult(result) => {
                let text = text_parts(&result.content).collect::<Vec<_>>().join(
                    "
",
                );
                let has_images = result
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Image(_)));
                let call_id = result.tool_call_id.split('|').next().unwrap_or_default();
                let output = if has_images && model.input.iter().any(|i| i == "image") {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "input_text", "text": text}));
                    }
                    parts.extend(result.content.iter().filter_map(|b| match b {
                        ContentBlock::Image(img) => Some(input_image(&img.mime_type, &img.data)),
                        _ => None,
                    }));
                    Value::Array(parts)
                } else if text.is_empty() {
                    json!("(see attached image)")
                } else {
                    json!(text)
                };
                let kind = if grammar_inputs.contains_key(&result.tool_name) {
                    "custom_tool_call_output"
                } else {
                    "function_call_output"
                };
                items.push(json!({"type": kind, "call_id": call_id, "output": output}));
            }
        }
        // A message that produced nothing does not count towards the `msg_pi_<n>` fallback ids.
        if items.len() > before {
            index += 1;
        }
    }
    if let Some(emitter) = &mut emitter {
        emitter.emit(None, &starts, role, &mut index, &convert, &mut items);
    }
    items.extend(effort.map(configuration_update));
    items
}

/// `convertResponsesTools`: `strict` only when the model's compat says `supportsStrictMode`; a
/// grammar tool as a `custom` tool when it says `supportsOpenAIGrammarTools`; `defer` marks
/// each `defer_loading` (a tool search's result).
fn convert_tools(
    tools: &[ToolDefinition],
    supports_strict: bool,
    supports_grammar: bool,
    defer: bool,
) -> Value {
    tools
        .iter()
        .map(|tool| {
            if let Some(g) = grammar::grammar(tool)
                .ok()
                .flatten()
                .filter(|_| supports_grammar)
            {
                let mut custom = json!({
                    "type": "custom",
                    "name": tool.name,
                    "description": tool.description,
                    "format": {"type": "grammar", "syntax": g.syntax, "definition": g.definition},
                });
                if let (true, Some(fields)) = (defer, custom.as_object_mut()) {
                    fields.insert("defer_loading".into(), json!(true));
                }
                return custom;
            }
            let strict = strict_parameters(
                &tool.parameters,
                tool.constrained_sampling.as_ref(),
                supports_strict,
            );
            let is_strict = strict.is_some();
            let mut out = json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": strict.unwrap_or_else(|| tool.parameters.clone()),
            });
            if let (true, Some(fields)) = (defer, out.as_object_mut()) {
                fields.insert("defer_loading".into(), json!(true));
            }
            if let (true, Some(fields)) = (supports_strict, out.as_object_mut()) {
                fields.insert("strict".into(), json!(is_strict));
            }
            out
        })
        .collect()
}

/// The request body (`stream: true`, `store: false`).
pub fn build_body(request: &ModelRequest, options: &CallOptions, now: u64) -> Value {
    let model = &request.model;
    let update_effort = requested_effort(request, options);
    let sign_in = chatgpt_sign_in(model, &options.api_key);
    let mut params = Map::new();
    params.insert("model".into(), json!(model.id));
    let transcript = transcript::transcript(request);
    let input = convert_with_effort(request, now, update_effort.as_deref(), transcript.as_ref());
    params.insert("input".into(), Value::Array(input));
    params.insert("stream".into(), json!(true));
    if options.cache_retention != CacheRetention::None {
        if let Some(session) = &request.session_id {
            params.insert("prompt_cache_key".into(), json!(session));
        }
    }
    if options.cache_retention == CacheRetention::Long
        && compat_flag(model, "supportsLongCacheRetention", true)
        && !sign_in
    {
        params.insert("prompt_cache_retention".into(), json!("24h"));
    }
    params.insert("store".into(), json!(false));
    // Pi 1.5.2: the request's cap or the model's own maximum, clamped to the context
    // (`buildBaseOptions`), never below the API's minimum, unless the compat says the endpoint
    // takes none.
    let max_tokens = max_tokens_152(request);
    if max_tokens > 0 && compat_flag(model, "supportsMaxOutputTokens", true) && !sign_in {
        params.insert(
            "max_output_tokens".into(),
            json!(max_tokens.max(MIN_OUTPUT_TOKENS)),
        );
    }
    if let (Some(t), false) = (options.temperature, sign_in) {
        params.insert("temperature".into(), json!(t));
    }
    let tools = transcript.as_ref().map_or(&request.tools, |t| &t.tools);
    if !tools.is_empty() {
        params.insert(
            "tools".into(),
            convert_tools(
                tools,
                compat_flag(model, "supportsStrictMode", false),
                grammar::supported(model),
                false,
            ),
        );
    }
    if model.reasoning {
        let effort = request
            .reasoning
            .map(|level| clamp_thinking_level(model, level))
            .filter(|level| *level != ThinkingLevel::Off);
        let map = model.thinking_level_map.as_ref();
        match effort {
            Some(level) => {
                let value = match &update_effort {
                    Some(_) => CONFIGURATION_UPDATE_REQUEST_EFFORT.to_owned(),
                    None => map
                        .and_then(|m| m.get(&level).cloned().flatten())
                        .unwrap_or_else(|| level.as_str().to_owned()),
                };
                params.insert(
                    "reasoning".into(),
                    json!({"effort": value, "summary": "auto"}),
                );
                params.insert("include".into(), json!(["reasoning.encrypted_content"]));
            }
            None => {
                let off = map.and_then(|m| m.get(&ThinkingLevel::Off));
                if model.provider != "github-copilot" && !matches!(off, Some(None)) {
                    let value = off.cloned().flatten().unwrap_or_else(|| "none".to_owned());
                    params.insert("reasoning".into(), json!({"effort": value}));
                }
            }
        }
    }
    Value::Object(params)
}
