//! The `read` tool: a text file's requested window (`pi_core::tools::read`) or an image as an
//! attachment, with Pi's texts for files that cannot be read.
//!
//! Also home of the file-system error texts the file tools share: Pi passes Node's errors
//! through, so a missing file reads `ENOENT: no such file or directory, access '<path>'`.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use pi_core::event::ToolResult;
use pi_core::message::{ContentBlock, ImageContent};
use pi_core::tools::read::read_text;
use serde_json::{json, Value};

use super::image::{self, SNIFF_BYTES};
use super::node_error::node_error;
use super::{num_arg, resolve, str_arg, PathUse, ToolContext, ToolEnv, OPERATION_ABORTED};

/// Appended when an image could not be brought under the inline limit.
const IMAGE_OMITTED: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";

/// Appended when an image of a type that is not sent inline (BMP) could not be made a PNG.
const IMAGE_NOT_CONVERTED: &str =
    "[Image omitted: could not be converted to a supported inline image format.]";

/// Pi's note when the current model does not take images.
const NON_VISION_NOTE: &str =
    "[Current model does not support images. The image will be omitted from this request.]";

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let raw = str_arg(args, "path").unwrap_or_default();
    let path = resolve(env, raw, PathUse::Read).map_err(|e| e.to_string())?;
    if cx.cancel.is_cancelled() {
        return Err(OPERATION_ABORTED.into());
    }
    let window = Window {
        offset: num_arg(args, "offset").map(js_integer),
        limit: num_arg(args, "limit").map(js_integer),
    };
    tokio::select! {
        biased;
        () = cx.cancel.cancelled() => Err(OPERATION_ABORTED.into()),
        result = read(path, raw, window, env) => result,
    }
}

/// The lines asked for (1-based offset).
#[derive(Clone, Copy, Debug)]
struct Window {
    offset: Option<i64>,
    limit: Option<i64>,
}

/// Line numbers arrive as JSON numbers; fractions are cut off (Pi would slice with them).
fn js_integer(n: f64) -> i64 {
    n as i64
}

async fn read(
    path: PathBuf,
    raw: &str,
    window: Window,
    env: &ToolEnv,
) -> Result<ToolResult, String> {
    let load = tokio::task::spawn_blocking(move || load(&path));
    let bytes = load.await.map_err(|e| e.to_string())??;
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    match image::detect_mime(head) {
        Some(mime) => {
            let note = (!env.model_accepts_images).then_some(NON_VISION_NOTE);
            image_result(bytes, mime, env.auto_resize_images, note).await
        }
        None => text_result(&bytes, raw, window),
    }
}

/// The file's bytes, failing as Node's `access` (the file cannot be opened) or `read` does.
/// Non-blocking so that a FIFO without a writer does not hang the tool.
fn load(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| node_error(&e, "access", Some(path)))?;
    let too_large = |size: u64| format!("File size ({size}) is greater than 2 GiB");
    if let Ok(meta) = file.metadata() {
        if meta.len() > MAX_FILE_BYTES {
            return Err(too_large(meta.len()));
        }
    }
    // Devices and pipes report no size: stop at the same bound instead of reading forever.
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| node_error(&e, "read", None))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Node's `readFile` limit (`ERR_FS_FILE_TOO_LARGE`), which Pi's read tool runs into.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

fn text_result(bytes: &[u8], raw: &str, window: Window) -> Result<ToolResult, String> {
    let text = String::from_utf8_lossy(bytes);
    let read = read_text(&text, raw, window.offset, window.limit).map_err(|e| e.to_string())?;
    Ok(ToolResult {
        content: vec![ContentBlock::text(read.text)],
        details: read.truncation.map(|t| json!({ "truncation": t })),
        ..ToolResult::default()
    })
}

/// Pi 1.5's `processImage`: a type that is not sent inline (BMP) becomes a PNG first (and says
/// so), then the image is resized unless that is switched off.
async fn image_result(
    bytes: Vec<u8>,
    mime: &'static str,
    auto_resize: bool,
    note: Option<&str>,
) -> Result<ToolResult, String> {
    let with_note = |mut text: String| {
        if let Some(note) = note {
            text.push('\n');
            text.push_str(note);
        }
        text
    };
    let omitted = |why: &str| ToolResult {
        content: vec![ContentBlock::text(with_note(format!(
            "Read image file [{mime}]\n{why}"
        )))],
        ..ToolResult::default()
    };
    let inline = mime != image::BMP;
    let process = move || {
        let (bytes, mime) = if inline {
            (bytes, mime)
        } else {
            (image::to_png(&bytes)?, "image/png")
        };
        let base64 = STANDARD.encode(&bytes);
        if !auto_resize {
            return Some(Ok((base64, mime.to_owned(), None)));
        }
        Some(
            match image::resize(&bytes, &base64, mime, image::Limits::default()) {
                Some(resized) => {
                    let dimensions = image::dimension_note(&resized);
                    Ok((resized.data, resized.mime_type, dimensions))
                }
                None => Err(()),
            },
        )
    };
    let processed = tokio::task::spawn_blocking(process)
        .await
        .map_err(|e| e.to_string())?;
    let (data, sent_mime, dimensions) = match processed {
        None => return Ok(omitted(IMAGE_NOT_CONVERTED)),
        Some(Err(())) => return Ok(omitted(IMAGE_OMITTED)),
        Some(Ok(processed)) => processed,
    };
    let mut text = format!("Read image file [{sent_mime}]");
    if !inline {
        text.push_str(&format!("\n[Image converted from {mime} to {sent_mime}.]"));
    }
    if let Some(dimensions) = dimensions {
        text.push('\n');
        text.push_str(&dimensions);
    }
    Ok(image_content(with_note(text), data, sent_mime))
}

/// The result with Pi 1.5's `structuredContent` (`toReadOutput`), what programmatic callers
/// read: the text, or for an image `{type: "image", data, mimeType, note}` with the text as note.
pub(super) fn with_structured_content(mut result: ToolResult) -> ToolResult {
    let text = result
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let image = result.content.iter().find_map(|block| match block {
        ContentBlock::Image(image) => Some(image),
        _ => None,
    });
    let output = match image {
        Some(image) => json!({
            "type": "image",
            "data": image.data,
            "mimeType": image.mime_type,
            "note": text,
        }),
        None => Value::String(text),
    };
    result.extra.insert("structuredContent".into(), output);
    result
}

fn image_content(text: String, data: String, mime_type: String) -> ToolResult {
    ToolResult {
        content: vec![
            ContentBlock::text(text),
            ContentBlock::Image(ImageContent {
                data,
                mime_type,
                ..ImageContent::default()
            }),
        ],
        ..ToolResult::default()
    }
}
