//! Automatic retry of a failed model call: which failures are retried (Pi's transient-error
//! pattern, but never a context overflow, which compaction handles), and the backoff.

use std::sync::OnceLock;

use regex::Regex;

use crate::message::{AssistantMessage, StopReason};
use crate::overflow::is_context_overflow;

/// Failures worth another attempt: overload, rate limits, 5xx, network and timeout errors
/// (Pi's pattern, case-insensitive).
const RETRYABLE: &str = r"(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay";

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
}

impl Default for RetrySettings {
    /// Pi's defaults: on, 3 retries, 2 s doubling.
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
        }
    }
}

/// Whether Pi would retry after `message` (a failed response) with a model of this window.
pub fn is_retryable(message: &AssistantMessage, context_window: u64) -> bool {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    if message.stop_reason != StopReason::Error {
        return false;
    }
    let Some(text) = message.error_message.as_deref().filter(|t| !t.is_empty()) else {
        return false;
    };
    if is_context_overflow(message, Some(context_window)) {
        return false;
    }
    PATTERN
        .get_or_init(|| Regex::new(RETRYABLE).ok())
        .as_ref()
        .is_some_and(|p| p.is_match(text))
}

/// The wait before attempt `attempt` (1-based): `base · 2^(attempt − 1)`.
pub fn delay_ms(settings: &RetrySettings, attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(63);
    settings.base_delay_ms.saturating_mul(1u64 << doublings)
}
