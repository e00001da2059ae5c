//! The `ls` tool: one directory's entries, dotfiles included, sorted as Pi sorts them (ICU
//! collation of the lowercased names, see `collate`), directories marked with `/`.

mod collate;

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use pi_core::event::ToolResult;
use serde_json::Value;

use super::listing::{
    effective_limit, js_text, listing_result, listing_root, run_blocking, text_result, LimitReached,
};
use super::node_error::node_error;
use super::{ToolContext, ToolEnv, OPERATION_ABORTED};

/// Entries listed when the call gives no limit.
const DEFAULT_LIMIT: f64 = 500.0;

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let root = listing_root(env, args, cx)?;
    let limit = effective_limit(args, DEFAULT_LIMIT);
    let dir = root;
    run_blocking(cx, move |stop| list(&dir, limit, stop)).await
}

fn list(dir: &Path, limit: f64, stop: &AtomicBool) -> Result<ToolResult, String> {
    let Ok(meta) = fs::metadata(dir) else {
        return Err(format!("Path not found: {}", dir.display()));
    };
    if !meta.is_dir() {
        return Err(format!("Not a directory: {}", dir.display()));
    }
    let mut names = read_names(dir)?;
    names.sort_by_cached_key(|name| collate::sort_key(&name.to_lowercase()));
    let mut shown = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if stop.load(Ordering::Relaxed) {
            return Err(OPERATION_ABORTED.into());
        }
        if shown.len() as f64 >= limit {
            limit_reached = true;
            break;
        }
        // Like Pi, follow symlinks and leave out what cannot be stat'ed (broken links).
        match fs::metadata(dir.join(&name)) {
            Ok(meta) if meta.is_dir() => shown.push(format!("{name}/")),
            Ok(_) => shown.push(name),
            Err(_) => {}
        }
    }
    if shown.is_empty() {
        return Ok(text_result("(empty directory)".into(), None));
    }
    let limit = limit_reached.then(|| LimitReached {
        notice: format!(
            "{} entries limit reached. Use limit={} for more",
            js_text(limit),
            js_text(limit * 2.0)
        ),
        key: "entryLimitReached",
        limit,
    });
    Ok(listing_result(&shown, limit, None))
}

/// The names in directory order, decoded as Node decodes them (invalid UTF-8 becomes U+FFFD,
/// so such entries later fail to stat and are skipped, as in Pi).
fn read_names(dir: &Path) -> Result<Vec<String>, String> {
    let cannot_read = |err: std::io::Error| {
        format!(
            "Cannot read directory: {}",
            node_error(&err, "scandir", Some(dir))
        )
    };
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(cannot_read)? {
        let entry = entry.map_err(cannot_read)?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}
