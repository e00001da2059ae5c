//! The `edit` tool: targeted replacements in one file. The matching and its errors are
//! `pi_core::tools::edit`, the diff and patch in the details `pi_core::tools::diff`; this side checks
//! the file can be read and written, keeps its byte-order mark and line endings, and takes its
//! turn in the file's mutation queue.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use pi_core::event::ToolResult;
use pi_core::message::ContentBlock;
use pi_core::tools::diff::{
    generate_diff_string, unified_patch, DiffString, DEFAULT_CONTEXT_LINES,
};
use pi_core::tools::edit::{
    apply_edits, apply_to_original, normalize_to_lf, strip_bom, Replacement,
};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::node_error::{errno_name, node_error};
use super::write::with_file_queue;
use super::{resolve, str_arg, PathUse, ToolContext, ToolEnv, OPERATION_ABORTED};

const INVALID_INPUT: &str =
    "Edit tool input is invalid. edits must contain at least one replacement.";

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let edits = replacements(args).ok_or(INVALID_INPUT)?;
    let raw = str_arg(args, "path").unwrap_or_default().to_owned();
    let path = resolve(env, &raw, PathUse::Other).map_err(|e| e.to_string())?;
    let work = with_file_queue(&path, async {
        if cx.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        let (raw, path, cancel) = (raw.clone(), path.clone(), cx.cancel.clone());
        tokio::task::spawn_blocking(move || edit_file(&raw, &path, &edits, &cancel))
            .await
            .map_err(|e| e.to_string())?
    });
    let (count, diff, patch) = tokio::select! {
        biased;
        () = cx.cancel.cancelled() => return Err(OPERATION_ABORTED.into()),
        result = work => result?,
    };
    let mut details = Map::new();
    details.insert("diff".into(), Value::String(diff.diff));
    details.insert("patch".into(), Value::String(patch));
    if let Some(line) = diff.first_changed_line {
        details.insert("firstChangedLine".into(), json!(line));
    }
    Ok(ToolResult {
        content: vec![ContentBlock::text(format!(
            "Successfully replaced {count} block(s) in {raw}."
        ))],
        details: Some(Value::Object(details)),
        ..ToolResult::default()
    })
}

/// The call's replacements as Pi's `prepareArguments` and input check see them: `edits` (also
/// as a JSON string), plus legacy top-level `oldText`/`newText`; `None` when there are none.
fn replacements(args: &Value) -> Option<Vec<Replacement>> {
    let mut edits = match args.get("edits") {
        Some(Value::Array(list)) => Some(list.clone()),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v.as_array().cloned()),
        _ => None,
    };
    if let (Some(old_text), Some(new_text)) = (str_arg(args, "oldText"), str_arg(args, "newText")) {
        edits
            .get_or_insert_with(Vec::new)
            .push(json!({ "oldText": old_text, "newText": new_text }));
    }
    let edits = edits.filter(|list| !list.is_empty())?;
    edits
        .iter()
        .map(|edit| {
            Some(Replacement {
                old_text: str_arg(edit, "oldText")?.to_owned(),
                new_text: str_arg(edit, "newText")?.to_owned(),
            })
        })
        .collect()
}

/// Reads, replaces and writes back; the number of edits and the diff and patch of the
/// LF-normalised texts. A cancellation seen before writing leaves the file untouched.
fn edit_file(
    raw: &str,
    path: &Path,
    edits: &[Replacement],
    cancel: &CancellationToken,
) -> Result<(usize, DiffString, String), String> {
    let bytes = read_for_edit(raw, path)?;
    let text = String::from_utf8_lossy(&bytes);
    let (bom, content) = strip_bom(&text);
    let normalized = normalize_to_lf(content);
    let applied = apply_edits(&normalized, edits, raw).map_err(|e| e.to_string())?;
    if cancel.is_cancelled() {
        return Err(OPERATION_ABORTED.into());
    }
    // Spliced into the text as read, so untouched lines keep their line endings.
    let body = if content == normalized {
        applied.result.clone()
    } else {
        apply_to_original(content, &applied.replacements)
    };
    let output = format!("{bom}{body}");
    let mut file = std::fs::File::create(path).map_err(|e| node_error(&e, "open", Some(path)))?;
    std::io::Write::write_all(&mut file, output.as_bytes())
        .map_err(|e| node_error(&e, "write", None))?;
    Ok((
        edits.len(),
        generate_diff_string(&applied.base, &applied.result, DEFAULT_CONTEXT_LINES),
        // Pi 1.5's `details.patch`, named by the path as the call gave it.
        unified_patch(raw, &applied.base, &applied.result, DEFAULT_CONTEXT_LINES),
    ))
}

/// The file's bytes. Pi first checks read and write access (`Could not edit file: <path>.
/// Error code: <code>.`); opening for both stands in for that check. A directory passes Pi's
/// check and fails when read.
fn read_for_edit(raw: &str, path: &Path) -> Result<Vec<u8>, String> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => {
            return Err(node_error(&e, "read", None));
        }
        Err(e) => {
            let code = errno_name(&e).map_or("UNKNOWN", |(code, _)| code);
            return Err(format!("Could not edit file: {raw}. Error code: {code}."));
        }
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| node_error(&e, "read", None))?;
    Ok(bytes)
}
