//! Recognising a context overflow in a finished assistant message (pi-ai `isContextOverflow`),
//! which is what makes Pi compact and retry instead of failing the turn.
//!
//! Providers say "too long" in their own words, so this is a list of their phrasings; a few
//! providers say nothing and either overrun the window silently or truncate the input, which
//! the usage figures give away.

use std::sync::OnceLock;

use regex::RegexSet;

use crate::message::{AssistantMessage, StopReason};

/// Provider phrasings of "the input is larger than the context window" (Pi 1.5.2's
/// `OVERFLOW_PATTERNS`, in its order).
const OVERFLOW: &[&str] = &[
    r"prompt (?:is )?too long",               // Anthropic (tokens), Ollama
    r"prompt exceeds max length",             // generic
    r"request_too_large",                     // Anthropic (bytes, HTTP 413)
    r"input is too long for requested model", // Amazon Bedrock
    r"exceeds the context window",            // OpenAI
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"context window exceeded",                 // generic
    r"input token count.*exceeds the maximum",  // Google Gemini
    r"maximum prompt length is [0-9]+",         // xAI
    r"reduce the length of the messages",       // Groq
    r"maximum context length is [0-9]+ tokens", // OpenRouter
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of [0-9]+",        // GitHub Copilot
    r"exceeds the available context size", // llama.cpp server
    r"greater than the context length",    // LM Studio
    r"context window exceeds limit",       // MiniMax
    r"exceeded model token limit",         // Kimi For Coding
    r"too large for model with [0-9]+ maximum context length", // Mistral
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    r"model_context_window_exceeded",                     // z.ai
    r"prompt too long; exceeded (?:max )?context length", // Ollama
    r"range of input length should be",                   // Qwen
    r"context[_ ]length[_ ]exceeded",                     // generic
    r"too many tokens",                                   // generic
    r"token limit exceeded",                              // generic
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",     // HTTP 413 with or without a body
];

/// Cerebras answers an overflow with a bare 400 or 413; from any other provider that says
/// nothing about size.
const CEREBRAS_BODYLESS: &[&str] = &[r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)"];

/// Errors that match an overflow phrasing but are about load, not size.
const NOT_OVERFLOW: &[&str] = &[
    r"^(?:Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

fn set(
    patterns: &'static [&'static str],
    cell: &'static OnceLock<Option<RegexSet>>,
) -> Option<&'static RegexSet> {
    cell.get_or_init(|| RegexSet::new(patterns.iter().map(|p| format!("(?i){p}"))).ok())
        .as_ref()
}

/// Whether `message` failed, or silently suffered, because its input did not fit. Without a
/// context window only the error text is looked at.
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    static OVERFLOW_SET: OnceLock<Option<RegexSet>> = OnceLock::new();
    static NOT_OVERFLOW_SET: OnceLock<Option<RegexSet>> = OnceLock::new();
    static CEREBRAS_SET: OnceLock<Option<RegexSet>> = OnceLock::new();
    if message.stop_reason == StopReason::Error {
        if let Some(text) = message.error_message.as_deref().filter(|t| !t.is_empty()) {
            let excluded = set(NOT_OVERFLOW, &NOT_OVERFLOW_SET).is_some_and(|s| s.is_match(text));
            let phrased = set(OVERFLOW, &OVERFLOW_SET).is_some_and(|s| s.is_match(text))
                || (message.provider == "cerebras"
                    && set(CEREBRAS_BODYLESS, &CEREBRAS_SET).is_some_and(|s| s.is_match(text)));
            if !excluded && phrased {
                return true;
            }
        }
    }
    let Some(window) = context_window.filter(|w| *w > 0) else {
        return false;
    };
    let input = message.usage.input + message.usage.cache_read;
    match message.stop_reason {
        StopReason::Stop => input > window,
        StopReason::Length => message.usage.output == 0 && input as f64 >= window as f64 * 0.99,
        _ => false,
    }
}
