//! An MCP `CallToolResult` as Pi 1.5.2's tool result (`extensions/mcp/tools.js`
//! `convertMcpResult`, pi-mcp's `toLlmContent` and `limitMcpContent`): text and images reach the
//! model, other blocks become one line of text, text over 20 KB keeps its start and end around a
//! `…N chars truncated…` marker with the whole text saved to a file, and `isError` is an error
//! result. The result is read as JSON so that what the server sent is converted as Pi's
//! JavaScript converts it, fields rmcp does not model included.

use pi_core::event::ToolResult;
use pi_core::message::{ContentBlock, Extra, ImageContent};
use serde_json::{json, Map, Value};

/// Text results longer than this many UTF-8 bytes are cut in the middle.
pub const MAX_TEXT_BYTES: usize = 20_480;

/// What one MCP tool call gives Pi's loop.
#[derive(Clone, Debug, PartialEq)]
pub struct McpToolOutput {
    /// The model-facing content.
    pub content: Vec<ContentBlock>,
    /// `{server, tool, fullOutputPath?}`.
    pub details: Value,
    /// The whole `CallToolResult` without `_meta`, which codemode scripts receive.
    pub structured_content: Value,
    /// The server's `isError`: Pi reports the call as failed.
    pub is_error: bool,
}

impl McpToolOutput {
    /// The object Pi's MCP tool returns to the loop: `content`, `details`, `structuredContent`
    /// and, for a server's `isError`, `isError: true` (which Pi 1.5.2's loop reads as a failed
    /// call that keeps its content).
    pub fn tool_result(self) -> ToolResult {
        let mut extra = Extra::default();
        extra.insert("structuredContent".to_string(), self.structured_content);
        if self.is_error {
            extra.insert("isError".to_string(), Value::Bool(true));
        }
        ToolResult {
            content: self.content,
            details: Some(self.details),
            terminate: None,
            extra,
        }
    }
}

/// Saves a text or binary payload to a file and returns its path (Pi writes temp files named
/// `pi-mcp-…`); an error is worded into the result instead.
pub type SaveOutput<'a> = &'a mut (dyn FnMut(&[u8], &str) -> Result<String, String> + Send);

/// Pi's `formatSize`.
fn format_size(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes}B")
    } else if bytes < 1024.0 * 1024.0 {
        format!("{:.1}KB", bytes / 1024.0)
    } else {
        format!("{:.1}MB", bytes / (1024.0 * 1024.0))
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

pub(crate) fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::text(text)
}

fn image(data: &str, mime_type: &str) -> ContentBlock {
    ContentBlock::Image(ImageContent {
        data: data.to_string(),
        mime_type: mime_type.to_string(),
        ..ImageContent::default()
    })
}

fn is_text_mime_type(mime: Option<&str>) -> bool {
    let Some(mime) = mime else { return false };
    let kind = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    kind.starts_with("text/")
        || kind == "application/json"
        || kind.ends_with("+json")
        || kind.ends_with("+xml")
}

fn extension_of(uri: &str) -> String {
    let path = url::Url::parse(uri)
        .map(|u| u.path().to_string())
        .unwrap_or_else(|_| uri.to_string());
    let ext = path.rfind('.').map(|at| &path[at..]).filter(|ext| {
        (2..=9).contains(&ext.len()) && ext[1..].chars().all(|c| c.is_ascii_alphanumeric())
    });
    ext.unwrap_or(".bin").to_string()
}

/// pi-mcp's `blockToLlmContent`.
fn block_to_llm(block: &Value) -> ContentBlock {
    match str_of(block, "type").unwrap_or("") {
        "text" => text(str_of(block, "text").unwrap_or("")),
        "image" => image(
            str_of(block, "data").unwrap_or(""),
            str_of(block, "mimeType").unwrap_or(""),
        ),
        "audio" => text(format!(
            "[audio {} omitted]",
            str_of(block, "mimeType").unwrap_or("undefined")
        )),
        "resource_link" => text(format!(
            "{}: {}",
            str_of(block, "name").unwrap_or("undefined"),
            str_of(block, "uri").unwrap_or("undefined")
        )),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let mime = str_of(&resource, "mimeType");
            if let Some(t) = str_of(&resource, "text") {
                text(t)
            } else if mime.is_some_and(|m| m.starts_with("image/")) {
                image(str_of(&resource, "blob").unwrap_or(""), mime.unwrap_or(""))
            } else {
                text(format!(
                    "[binary resource {} ({}) omitted]",
                    str_of(&resource, "uri").unwrap_or("undefined"),
                    mime.unwrap_or("unknown type")
                ))
            }
        }
        other => text(format!("[unsupported MCP content {other}]")),
    }
}

/// The MCP extension's `blockToContent`: resource links and non-image binary resources worded
/// by Pi, the rest as pi-mcp converts them.
pub(crate) fn block_to_content(
    server: &str,
    block: &Value,
    readable_resources: bool,
    save: SaveOutput,
) -> ContentBlock {
    let kind = str_of(block, "type").unwrap_or("");
    if kind == "resource_link" {
        let mut details = Vec::new();
        if let Some(mime) = str_of(block, "mimeType").filter(|m| !m.is_empty()) {
            details.push(mime.to_string());
        }
        if let Some(size) = block.get("size").and_then(Value::as_f64) {
            details.push(format_size(size));
        }
        let read = if readable_resources {
            format!(". Read it with read_mcp_resource (server \"{server}\")")
        } else {
            String::new()
        };
        let description = str_of(block, "description")
            .filter(|d| !d.is_empty())
            .map(|d| format!(": {d}"));
        let title = str_of(block, "title")
            .or(str_of(block, "name"))
            .unwrap_or("undefined");
        let details = if details.is_empty() {
            String::new()
        } else {
            format!(" ({})", details.join(", "))
        };
        return text(format!(
            "[Resource {} \"{title}\"{details}{}{read}]",
            str_of(block, "uri").unwrap_or("undefined"),
            description.unwrap_or_default()
        ));
    }
    if let (true, Some(resource)) = (kind == "resource", block.get("resource")) {
        let mime = str_of(resource, "mimeType");
        if let (Some(blob), false) = (
            str_of(resource, "blob"),
            mime.is_some_and(|m| m.starts_with("image/")),
        ) {
            let uri = str_of(resource, "uri").unwrap_or("undefined");
            let data = decode_base64(blob);
            if is_text_mime_type(mime) {
                return text(String::from_utf8_lossy(&data).into_owned());
            }
            let what = format!(
                "{}, {}",
                mime.unwrap_or("unknown type"),
                format_size(data.len() as f64)
            );
            return match save(&data, &extension_of(uri)) {
                Ok(path) => text(format!("[Binary resource {uri} ({what}) saved to {path}]")),
                Err(reason) => text(format!(
                    "[Binary resource {uri} ({what}) could not be saved: {reason}]"
                )),
            };
        }
    }
    block_to_llm(block)
}

/// Node's lenient base64 decoding: characters outside the alphabet are skipped.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().take_while(|&c| c != b'=') {
        let Some(v) = value(c) else { continue };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// pi-mcp's `truncateMiddle`: the first and last halves of `max` bytes on character boundaries.
fn truncate_middle(text: &str, max: usize) -> Option<(String, usize, usize)> {
    let bytes = text.as_bytes();
    if bytes.len() <= max {
        return None;
    }
    let mut head_end = max / 2;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = bytes.len() - (max - max / 2);
    while tail_start < bytes.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = text[head_end..tail_start].chars().count();
    let lines = text.split('\n').count() - usize::from(text.ends_with('\n'));
    let cut = format!(
        "{}\u{2026}{removed} chars truncated\u{2026}{}",
        &text[..head_end],
        &text[tail_start..]
    );
    Some((cut, bytes.len(), lines))
}

/// pi-mcp's `limitMcpContent`: the content, and the path the whole text was saved to.
pub(crate) fn limit_content(
    content: Vec<ContentBlock>,
    save: SaveOutput,
) -> (Vec<ContentBlock>, Option<String>) {
    let combined = text_of(&content);
    let Some((cut, total_bytes, total_lines)) = truncate_middle(&combined, MAX_TEXT_BYTES) else {
        return (content, None);
    };
    let (path, where_) = match save(combined.as_bytes(), ".txt") {
        Ok(path) => {
            let where_ = format!("\n\n[Full output: {path} (read it with offset/limit)]");
            (Some(path), where_)
        }
        Err(reason) => (
            None,
            format!("\n\n[Could not save the full output: {reason}]"),
        ),
    };
    let mut limited = vec![text(format!(
        "Warning: truncated output (original token count: {})\nTotal output lines: {total_lines}\n\n{cut}{where_}",
        total_bytes.div_ceil(4)
    ))];
    limited.extend(
        content
            .into_iter()
            .filter(|b| matches!(b, ContentBlock::Image(_))),
    );
    (limited, path)
}

/// Converts `result` (a `CallToolResult` as JSON) of `tool` on `server`. `readable_resources`
/// says whether the server's resources can be read with `read_mcp_resource`; `save` stores
/// truncated text and binary resources.
pub fn convert_result(
    server: &str,
    tool: &str,
    result: &Value,
    readable_resources: bool,
    save: SaveOutput,
) -> McpToolOutput {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut converted: Vec<ContentBlock> = blocks
        .iter()
        .map(|block| block_to_content(server, block, readable_resources, &mut *save))
        .collect();
    if converted.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            let pretty = pi_core::json::to_string_pretty(structured).unwrap_or_default();
            converted.push(text(pretty));
        }
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if is_error && text_of(&converted).is_empty() {
        converted.push(text(format!("MCP tool {server}/{tool} returned an error")));
    }
    let (content, full_output_path) = limit_content(converted, save);
    let mut details = Map::new();
    details.insert("server".into(), json!(server));
    details.insert("tool".into(), json!(tool));
    if let Some(path) = full_output_path {
        details.insert("fullOutputPath".into(), json!(path));
    }
    let mut structured = result.as_object().cloned().unwrap_or_default();
    structured.remove("_meta");
    McpToolOutput {
        content,
        details: Value::Object(details),
        structured_content: Value::Object(structured),
        is_error,
    }
}
