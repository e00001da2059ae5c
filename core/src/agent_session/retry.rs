//! Automatic retry of a failed model call: which failures are retried (Pi's transient-error
//! patterns, but never a spent quota, and never a context overflow, which compaction handles),
//! and the backoff, capped.

use std::sync::OnceLock;

use regex::Regex;

use crate::message::{AssistantMessage, StopReason};
use crate::overflow::is_context_overflow;

/// Pi 1.5.2's patterns as data: failures never retried (spent quotas and budgets), then the
/// failures worth another attempt (overload, rate limits, 5xx, network and timeout errors).
const PATTERNS: &str = include_str!("retry_patterns.json");

/// The longest wait before a retry (Pi's `DEFAULT_MAX_AGENT_RETRY_DELAY_MS`), unless the
/// settings' `retry.maxAgentDelayMs` says otherwise.
pub const DEFAULT_MAX_DELAY_MS: u64 = 60_000;

/// The two patterns, each list joined into one case-insensitive regex.
struct Patterns {
    never: Regex,
    retryable: Regex,
}

fn patterns() -> Option<&'static Patterns> {
    static CELL: OnceLock<Option<Patterns>> = OnceLock::new();
    CELL.get_or_init(|| {
        let data: serde_json::Value = serde_json::from_str(PATTERNS).ok()?;
        let join = |key: &str| -> Option<Regex> {
            let list: Vec<&str> = data
                .get(key)?
                .as_array()?
                .iter()
                .filter_map(serde_json::Value::as_str)
                .collect();
            Regex::new(&format!("(?i){}", list.join("|"))).ok()
        };
        Some(Patterns {
            never: join("nonRetryable")?,
            retryable: join("retryable")?,
        })
    })
    .as_ref()
}

/// Retry settings (`retry` in Pi's settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrySettings {
    /// Retry at all (`retry.enabled`).
    pub enabled: bool,
    /// Attempts after the first failure (`retry.maxRetries`).
    pub max_retries: u32,
    /// The first wait; each further one doubles (`retry.baseDelayMs`).
    pub base_delay_ms: u64,
    /// The longest wait (`retry.maxAgentDelayMs`); left out when it is the default.
    #[serde(
        default = "default_max_delay_ms",
        skip_serializing_if = "is_default_max_delay_ms"
    )]
    pub max_delay_ms: u64,
}

fn default_max_delay_ms() -> u64 {
    DEFAULT_MAX_DELAY_MS
}

fn is_default_max_delay_ms(ms: &u64) -> bool {
    *ms == DEFAULT_MAX_DELAY_MS
}

impl Default for RetrySettings {
    /// Pi's defaults: on, 3 retries, 2 s doubling, at most 60 s.
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
            max_delay_ms: DEFAULT_MAX_DELAY_MS,
        }
    }
}

/// Whether Pi would retry after `message` (a failed response) with a model of this window.
pub fn is_retryable(message: &AssistantMessage, context_window: u64) -> bool {
    if message.stop_reason != StopReason::Error {
        return false;
    }
    let Some(text) = message.error_message.as_deref().filter(|t| !t.is_empty()) else {
        return false;
    };
    if is_context_overflow(message, Some(context_window)) {
        return false;
    }
    patterns().is_some_and(|p| !p.never.is_match(text) && p.retryable.is_match(text))
}

/// The wait before attempt `attempt` (1-based): `base · 2^(attempt − 1)`, at most
/// `max_delay_ms` (Pi's `retryDelayMs`).
pub fn delay_ms(settings: &RetrySettings, attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(63);
    settings
        .base_delay_ms
        .saturating_mul(1u64 << doublings)
        .min(settings.max_delay_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(text: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(text.to_owned()),
            ..AssistantMessage::default()
        }
    }

    #[test]
    fn the_patterns_load_and_tell_transient_failures_from_spent_quotas() {
        assert!(patterns().is_some());
        for text in [
            r#"500: {"message":"mock error 500"}"#,
            "520 web server returned an unknown error",
            "getaddrinfo ENOTFOUND api.example.com",
            "Stream ended without finish_reason",
            "server_busy",
            "Please retry your request later",
        ] {
            assert!(is_retryable(&failed(text), 128_000), "{text}");
        }
        for text in [
            r#"429: {"message":"You exceeded your current quota","type":"insufficient_quota"}"#,
            "Monthly usage limit reached",
            r#"429 {"code": 1308, "message": "busy"}"#,
            "model 5200 is unknown",
            "invalid api key",
        ] {
            assert!(!is_retryable(&failed(text), 128_000), "{text}");
        }
        assert!(is_retryable(&failed(r#"{"code": 13080} 503"#), 128_000));
    }

    #[test]
    fn the_wait_doubles_up_to_the_cap() {
        let settings = RetrySettings::default();
        let waits: Vec<u64> = (1..=7).map(|a| delay_ms(&settings, a)).collect();
        assert_eq!(waits, [2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
        let huge = RetrySettings {
            base_delay_ms: u64::MAX,
            max_delay_ms: 5,
            ..settings
        };
        assert_eq!(delay_ms(&huge, 64), 5);
    }
}
