//! What an OpenAI-compatible server accepts: detected from the provider and base URL, overridden
//! field by field by the model's `compat` object (pi-ai `getCompat`).

use pi_core::model::Model;
use serde_json::Value;

/// How reasoning is requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinkingFormat {
    OpenAi,
    OpenRouter,
    DeepSeek,
    Zai,
    Qwen,
    QwenChatTemplate,
}

/// The resolved compatibility settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Compat {
    pub supports_store: bool,
    pub supports_developer_role: bool,
    pub supports_reasoning_effort: bool,
    pub supports_usage_in_streaming: bool,
    /// `max_tokens` instead of `max_completion_tokens`.
    pub use_max_tokens_field: bool,
    pub requires_tool_result_name: bool,
    pub requires_assistant_after_tool_result: bool,
    pub requires_thinking_as_text: bool,
    pub requires_reasoning_content_on_assistant_messages: bool,
    pub thinking_format: ThinkingFormat,
    pub open_router_routing: Value,
    pub vercel_gateway_routing: Value,
    pub zai_tool_stream: bool,
    pub supports_strict_mode: bool,
    pub anthropic_cache_control: bool,
    pub send_session_affinity_headers: bool,
    pub supports_long_cache_retention: bool,
}

fn detect(model: &Model) -> Compat {
    let provider = model.provider.as_str();
    let url = model.base_url.as_str();
    let is_zai = provider == "zai" || url.contains("api.z.ai");
    let is_moonshot =
        matches!(provider, "moonshotai" | "moonshotai-cn") || url.contains("api.moonshot.");
    let is_cf_workers = provider == "cloudflare-workers-ai" || url.contains("api.cloudflare.com");
    let is_cf_gateway =
        provider == "cloudflare-ai-gateway" || url.contains("gateway.ai.cloudflare.com");
    let non_standard = provider == "cerebras"
        || url.contains("cerebras.ai")
        || provider == "xai"
        || url.contains("api.x.ai")
        || url.contains("chutes.ai")
        || url.contains("deepseek.com")
        || is_zai
        || is_moonshot
        || provider == "opencode"
        || url.contains("opencode.ai")
        || is_cf_workers
        || is_cf_gateway;
    let is_grok = provider == "xai" || url.contains("api.x.ai");
    let is_deepseek = provider == "deepseek" || url.contains("deepseek.com");
    Compat {
        supports_store: !non_standard,
        supports_developer_role: !non_standard,
        supports_reasoning_effort: !is_grok && !is_zai && !is_moonshot && !is_cf_gateway,
        supports_usage_in_streaming: true,
        use_max_tokens_field: url.contains("chutes.ai") || is_moonshot || is_cf_gateway,
        requires_tool_result_name: false,
        requires_assistant_after_tool_result: false,
        requires_thinking_as_text: false,
        requires_reasoning_content_on_assistant_messages: is_deepseek,
        thinking_format: if is_deepseek {
            ThinkingFormat::DeepSeek
        } else if is_zai {
            ThinkingFormat::Zai
        } else if provider == "openrouter" || url.contains("openrouter.ai") {
            ThinkingFormat::OpenRouter
        } else {
            ThinkingFormat::OpenAi
        },
        open_router_routing: Value::Object(Default::default()),
        vercel_gateway_routing: Value::Object(Default::default()),
        zai_tool_stream: false,
        // Pi 1.5.2 sends `strict` only to models whose compat says `supportsStrictMode`.
        supports_strict_mode: false,
        anthropic_cache_control: provider == "openrouter" && model.id.starts_with("anthropic/"),
        send_session_affinity_headers: false,
        supports_long_cache_retention: !(is_cf_workers || is_cf_gateway),
    }
}

/// The compat settings of `model`: detected, then overridden by `model.compat`.
/// Whether the server's streams end with a `finish_reason` (pi-ai 1.5's
/// `compat.supportsFinishReason`, detected as true for every server): when they do, a stream
/// without one was cut short.
pub fn supports_finish_reason(model: &Model) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.get("supportsFinishReason"))
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

pub fn compat(model: &Model) -> Compat {
    let mut c = detect(model);
    let Some(Value::Object(o)) = &model.compat else {
        return c;
    };
    let flag = |key: &str, current: bool| o.get(key).and_then(Value::as_bool).unwrap_or(current);
    c.supports_store = flag("supportsStore", c.supports_store);
    c.supports_developer_role = flag("supportsDeveloperRole", c.supports_developer_role);
    c.supports_reasoning_effort = flag("supportsReasoningEffort", c.supports_reasoning_effort);
    c.supports_usage_in_streaming = flag("supportsUsageInStreaming", c.supports_usage_in_streaming);
    if let Some(field) = o.get("maxTokensField").and_then(Value::as_str) {
        c.use_max_tokens_field = field == "max_tokens";
    }
    c.requires_tool_result_name = flag("requiresToolResultName", c.requires_tool_result_name);
    c.requires_assistant_after_tool_result = flag(
        "requiresAssistantAfterToolResult",
        c.requires_assistant_after_tool_result,
    );
    c.requires_thinking_as_text = flag("requiresThinkingAsText", c.requires_thinking_as_text);
    c.requires_reasoning_content_on_assistant_messages = flag(
        "requiresReasoningContentOnAssistantMessages",
        c.requires_reasoning_content_on_assistant_messages,
    );
    if let Some(format) = o.get("thinkingFormat").and_then(Value::as_str) {
        c.thinking_format = match format {
            "openrouter" => ThinkingFormat::OpenRouter,
            "deepseek" => ThinkingFormat::DeepSeek,
            "zai" => ThinkingFormat::Zai,
            "qwen" => ThinkingFormat::Qwen,
            "qwen-chat-template" => ThinkingFormat::QwenChatTemplate,
            _ => ThinkingFormat::OpenAi,
        };
    }
    c.open_router_routing = o
        .get("openRouterRouting")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    if let Some(routing) = o.get("vercelGatewayRouting") {
        c.vercel_gateway_routing = routing.clone();
    }
    c.zai_tool_stream = flag("zaiToolStream", c.zai_tool_stream);
    c.supports_strict_mode = flag("supportsStrictMode", c.supports_strict_mode);
    if let Some(format) = o.get("cacheControlFormat").and_then(Value::as_str) {
        c.anthropic_cache_control = format == "anthropic";
    }
    c.send_session_affinity_headers = flag(
        "sendSessionAffinityHeaders",
        c.send_session_affinity_headers,
    );
    c.supports_long_cache_retention = flag(
        "supportsLongCacheRetention",
        c.supports_long_cache_retention,
    );
    c
}
