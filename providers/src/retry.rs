//! The retry rules of the original's OpenAI and Anthropic SDKs (the two are identical), which
//! [`crate::call::ModelCall`] applies when [`crate::CallOptions::max_retries`] asks for retries:
//! which failures are tried again, and how long to wait first; and the [`RetryClock`] through
//! which a call reads the time, draws the jitter and waits, so that it reads neither the wall
//! clock nor randomness itself.

use std::sync::{Mutex, PoisonError};

use crate::transport::BoxFuture;

/// Time and chance for the SDK retries of one call, given by its caller: the live interpreter
/// passes the real clock, random jitter and real waits; tests and replays pass fixed ones, so
/// that a retry sequence is the same every time.
pub trait RetryClock: Send + Sync {
    /// Milliseconds since the epoch (compared with a `retry-after` date).
    fn now_ms(&self) -> u64;
    /// A number in `[0, 1)` shortening the backoff (the SDKs use `Math.random()`).
    fn jitter(&self) -> f64;
    /// Waits `ms` milliseconds before the next attempt.
    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()>;
}

/// A clock that stands still: a fixed time and jitter, and waits that are noted instead of
/// slept, for tests and replays.
#[derive(Debug, Default)]
pub struct FixedClock {
    now_ms: u64,
    jitter: f64,
    waits: Mutex<Vec<u64>>,
}

impl FixedClock {
    /// A clock at `now_ms` whose jitter is always `jitter`.
    pub fn new(now_ms: u64, jitter: f64) -> Self {
        FixedClock {
            now_ms,
            jitter,
            waits: Mutex::new(Vec::new()),
        }
    }

    /// The waits asked for so far, in milliseconds, in order.
    pub fn waits(&self) -> Vec<u64> {
        self.waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl RetryClock for FixedClock {
    fn now_ms(&self) -> u64 {
        self.now_ms
    }

    fn jitter(&self) -> f64 {
        self.jitter
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'_, ()> {
        self.waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(ms);
        Box::pin(std::future::ready(()))
    }
}

/// Whether requests of `api` are retried by the original's SDK (the Google SDK does not retry,
/// and pi-ai gives it neither a retry count nor a timeout).
pub fn applies_to(api: &str) -> bool {
    matches!(
        api,
        "openai-completions" | "openai-responses" | "anthropic-messages"
    )
}

/// Whether a response with `status` is worth another attempt: the server's `x-should-retry`
/// header when it says `true` or `false`, else 408, 409, 429 and every 5xx.
pub fn should_retry(status: u16, headers: &[(String, String)]) -> bool {
    match header(headers, "x-should-retry") {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// How long to wait before the next attempt, in milliseconds. The server's `retry-after-ms`,
/// else `retry-after` (seconds, or an HTTP date compared with `now_ms`), is obeyed as given;
/// without either, 0.5 s doubling with each retry up to 8 s, shortened by up to a quarter:
/// `jitter` in `[0, 1)` picks how much. `headers` is `None` after a connection error.
pub fn delay_ms(
    headers: Option<&[(String, String)]>,
    retries_remaining: u32,
    max_retries: u32,
    now_ms: u64,
    jitter: f64,
) -> u64 {
    let headers = headers.unwrap_or(&[]);
    let mut wait = header(headers, "retry-after-ms")
        .filter(|v| !v.is_empty())
        .and_then(parse_float);
    if wait.is_none() || wait == Some(0.0) {
        if let Some(value) = header(headers, "retry-after").filter(|v| !v.is_empty()) {
            wait = Some(match parse_float(value) {
                Some(seconds) => seconds * 1000.0,
                // Unparsable dates make the SDK wait NaN ms, which timers treat as no wait.
                None => http_date_ms(value).map_or(0.0, |at| at as f64 - now_ms as f64),
            });
        }
    }
    let wait = wait.unwrap_or_else(|| {
        let done = max_retries.saturating_sub(retries_remaining);
        let seconds = (0.5 * 2f64.powi(done.min(16) as i32)).min(8.0);
        seconds * (1.0 - jitter.clamp(0.0, 1.0) * 0.25) * 1000.0
    });
    if wait.is_finite() && wait > 0.0 {
        wait as u64
    } else {
        0
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// JavaScript's `parseFloat`: the longest leading decimal number (after whitespace), or `None`
/// where it gives `NaN`.
fn parse_float(text: &str) -> Option<f64> {
    let text = text.trim_start();
    if let Some(rest) = text.strip_prefix(['+', '-']) {
        if rest.starts_with("Infinity") {
            return Some(if text.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
    } else if text.starts_with("Infinity") {
        return Some(f64::INFINITY);
    }
    let bytes = text.as_bytes();
    let mut end = 0;
    let mut best = None;
    while end < bytes.len() && b"+-0123456789.eE".contains(&bytes[end]) {
        end += 1;
        if let Ok(value) = text[..end].parse::<f64>() {
            best = Some(value);
        }
    }
    best
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, what HTTP servers send) in epoch ms.
fn http_date_ms(text: &str) -> Option<i64> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let year: i64 = year.parse().ok()?;
    let clock: Vec<i64> = time
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [hours, minutes, seconds] = clock.as_slice() else {
        return None;
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_sdks_retry_these_statuses_unless_the_server_says_otherwise() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(should_retry(status, &[]), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!should_retry(status, &[]), "{status}");
        }
        assert!(!should_retry(500, &headers(&[("X-Should-Retry", "false")])));
        assert!(should_retry(400, &headers(&[("x-should-retry", "true")])));
        assert!(should_retry(500, &headers(&[("x-should-retry", "maybe")])));
    }

    #[test]
    fn the_server_sets_the_wait_else_it_backs_off_exponentially() {
        let h = headers(&[("retry-after-ms", "250")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 0, 0.5), 250);
        let h = headers(&[("retry-after", "1.5")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 0, 0.5), 1500);
        // retry-after-ms of 0 falls through to retry-after.
        let h = headers(&[("retry-after-ms", "0"), ("retry-after", "2")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 0, 0.5), 2000);
        let h = headers(&[("retry-after", "0")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 0, 0.5), 0);
        let h = headers(&[("retry-after", "Thu, 01 Jan 1970 00:00:10 GMT")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 4_000, 0.5), 6_000);
        let h = headers(&[("retry-after", "soon")]);
        assert_eq!(delay_ms(Some(&h), 2, 2, 0, 0.5), 0);
        // No header: 0.5 s, 1 s, 2 s, ... 8 s at most, up to a quarter shorter.
        assert_eq!(delay_ms(None, 3, 3, 0, 0.0), 500);
        assert_eq!(delay_ms(None, 2, 3, 0, 0.0), 1000);
        assert_eq!(delay_ms(None, 1, 3, 0, 0.0), 2000);
        assert_eq!(delay_ms(None, 1, 10, 0, 0.0), 8000);
        assert_eq!(delay_ms(None, 3, 3, 0, 0.999_999), 375);
    }

    #[test]
    fn numbers_parse_as_javascript_parses_them() {
        assert_eq!(parse_float(" 12.5s"), Some(12.5));
        assert_eq!(parse_float("1e3"), Some(1000.0));
        assert_eq!(parse_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float("abc"), None);
        assert_eq!(
            http_date_ms("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777_000)
        );
    }
}
