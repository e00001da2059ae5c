//! What grep, find and ls share: their results are lists of lines cut to Pi's byte budget, with
//! the notices Pi appends and the `details` keys it sets, and they run their walk on a blocking
//! thread that the abort signal can stop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pi_core::event::ToolResult;
use pi_core::json::format_number;
use pi_core::message::ContentBlock;
use pi_core::tools::truncate::{format_size, truncate_head, Limits, DEFAULT_MAX_BYTES};
use serde_json::{Map, Number, Value};

use super::{resolve, str_arg, PathUse, ToolContext, ToolEnv, OPERATION_ABORTED};

/// JavaScript's `Number.MAX_SAFE_INTEGER`: the listing tools cut by bytes only, and Pi passes this
/// as the line budget (it shows up in `details.truncation.maxLines`).
const NO_LINE_LIMIT: usize = 9_007_199_254_740_991;

/// A limit the tool stopped at: the notice text and the `details` key that carries the limit.
pub(super) struct LimitReached {
    pub notice: String,
    pub key: &'static str,
    pub limit: f64,
}

/// Pi's result for a listing: the lines joined, cut to 50 KiB, then the notices in Pi's order
/// (limit, size, long lines) inside one `[...]` suffix. `details` is left out when nothing was cut.
pub(super) fn listing_result(
    lines: &[String],
    limit: Option<LimitReached>,
    lines_truncated: Option<String>,
) -> ToolResult {
    let raw = lines.join("\n");
    let truncation = truncate_head(
        &raw,
        Limits {
            max_lines: NO_LINE_LIMIT,
            max_bytes: DEFAULT_MAX_BYTES,
        },
    );
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if let Some(limit) = limit {
        notices.push(limit.notice);
        details.insert(limit.key.into(), js_number(limit.limit));
    }
    if truncation.truncated {
        notices.push(format!(
            "{} limit reached",
            format_size(DEFAULT_MAX_BYTES as u64)
        ));
        details.insert(
            "truncation".into(),
            serde_json::to_value(&truncation).unwrap_or(Value::Null),
        );
    }
    if let Some(notice) = lines_truncated {
        notices.push(notice);
        details.insert("linesTruncated".into(), Value::Bool(true));
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    text_result(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    )
}

/// A result with one text block and the given details (`None`: Pi's `undefined`).
pub(super) fn text_result(text: String, details: Option<Value>) -> ToolResult {
    ToolResult {
        content: vec![ContentBlock::text(text)],
        details,
        terminate: None,
        extra: Default::default(),
    }
}

/// Pi 1.5's `Math.max(1, Math.floor(limit ?? default))`: a fractional limit is rounded down and
/// one below 1 means 1 (0.73.1 used it as given, so a limit of 0 listed nothing).
pub(super) fn effective_limit(args: &Value, default: f64) -> f64 {
    super::num_arg(args, "limit")
        .unwrap_or(default)
        .floor()
        .max(1.0)
}

/// A number as JavaScript prints it in a notice (`100`, `2.5`).
pub(super) fn js_text(value: f64) -> String {
    format_number(value)
}

/// A number as JavaScript puts it in JSON: integers stay integers.
pub(super) fn js_number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.007_199_254_740_992e15 {
        return Value::Number(Number::from(value as i64));
    }
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// Runs `work` on a blocking thread. When the call is aborted first, the work is told to stop
/// (through the flag it receives) and Pi's abort error is returned at once.
pub(super) async fn run_blocking<T, F>(cx: &ToolContext, work: F) -> Result<T, String>
where
    T: Send + 'static,
    F: FnOnce(&AtomicBool) -> Result<T, String> + Send + 'static,
{
    if cx.cancel.is_cancelled() {
        return Err(OPERATION_ABORTED.into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let task = tokio::task::spawn_blocking(move || work(&flag));
    tokio::select! {
        joined = task => joined.map_err(|err| err.to_string())?,
        () = cx.cancel.cancelled() => {
            stop.store(true, Ordering::Relaxed);
            Err(OPERATION_ABORTED.into())
        }
    }
}

/// The directory (or file) a listing tool works on: its `path` argument (the cwd when absent or
/// empty) resolved and confined, after the abort check each of them starts with.
pub(super) fn listing_root(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<PathBuf, String> {
    if cx.cancel.is_cancelled() {
        return Err(OPERATION_ABORTED.into());
    }
    let raw = str_arg(args, "path")
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    resolve(env, raw, PathUse::Other).map_err(|err| err.to_string())
}
