//! `pi --export <session.jsonl> [output.html]`: a session file as one self-contained HTML page
//! (no scripts, no network). Pi's page is an interactive viewer of the whole tree; ours renders
//! the active branch (root to leaf) with every message, tool call, tool result, summary and
//! model or thinking-level change. The input file is only read, never rewritten: a file that is
//! not a session exports as an empty session, where Pi would replace its content with a new
//! header.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use pi_core::session::entry::SessionEntry;
use pi_core::session::file::parse_session;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use serde_json::Value;

const STYLE: &str = "body{margin:0;background:#18181e;color:#e4e4e7;font:15px/1.5 system-ui,sans-serif}\
main{max-width:960px;margin:0 auto;padding:24px}\
header{border-bottom:1px solid #3f3f46;margin-bottom:16px}\
h1{font-size:20px;margin:0 0 4px}\
.meta{color:#a1a1aa;font-size:13px}\
.entry{background:#1e1e24;border-radius:8px;padding:12px 16px;margin:12px 0;border-left:4px solid #52525b}\
.user{border-color:#3b82f6}.assistant{border-color:#a855f7}.toolResult{border-color:#22c55e}\
.error{border-color:#ef4444}.note{background:transparent;color:#a1a1aa;font-size:13px;padding:4px 16px}\
.role{font-weight:600;font-size:13px;color:#a1a1aa;margin-bottom:6px}\
pre{white-space:pre-wrap;word-break:break-word;margin:6px 0;font:13px/1.45 ui-monospace,monospace}\
.thinking{color:#a1a1aa;font-style:italic}\
.call{background:#27272a;border-radius:6px;padding:6px 10px}\
img{max-width:100%;border-radius:6px}";

/// Writes the HTML page of `session_file` to `out` (default: `pi-session-<name>.html` in the
/// working directory) and returns the path written, as given. Errors are Pi's texts (without
/// its `Error: ` prefix).
pub fn export_html(session_file: &Path, out: Option<&Path>) -> Result<PathBuf, String> {
    if !session_file.exists() {
        return Err(format!("File not found: {}", session_file.display()));
    }
    let bytes = std::fs::read(session_file).map_err(|e| node_error(&e, "read", None))?;
    let text = String::from_utf8_lossy(&bytes);
    let html = render(&text);
    let out = export_path(session_file, out);
    std::fs::write(&out, html).map_err(|e| node_error(&e, "open", Some(&out)))?;
    Ok(out)
}

/// The path [`export_html`] writes `session_file`'s page to and answers with: `out`, else
/// `pi-session-<name>.html` (relative: in the working directory). Computed without touching
/// the disk, so a replay can answer with it and write nothing.
pub fn export_path(session_file: &Path, out: Option<&Path>) -> PathBuf {
    if let Some(path) = out {
        return path.to_path_buf();
    }
    let name = session_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = match name.strip_suffix(".jsonl") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => name,
    };
    PathBuf::from(format!("pi-session-{stem}.html"))
}

/// Node's wording of a failed `fs` call.
fn node_error(error: &std::io::Error, syscall: &str, path: Option<&Path>) -> String {
    let (code, text) = match error.kind() {
        ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
        ErrorKind::PermissionDenied => ("EACCES", "permission denied"),
        ErrorKind::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        ErrorKind::NotADirectory => ("ENOTDIR", "not a directory"),
        _ => return error.to_string(),
    };
    match path {
        Some(path) => format!("{code}: {text}, {syscall} '{}'", path.display()),
        None => format!("{code}: {text}, {syscall}"),
    }
}

/// The page for a session file's text.
fn render(text: &str) -> String {
    let parsed = parse_session(text, &mut IdGenerator::new(0)).ok();
    let mut body = String::new();
    let title = match &parsed {
        Some(session) => {
            let header = &session.header;
            let tree = SessionTree::from_entries(header.clone(), session.entries.clone(), true);
            let name = tree.name();
            body.push_str(&format!(
                "<header><h1>{}</h1><p class=\"meta\">Session {} &middot; {} &middot; {}</p></header>\n",
                escape(name.as_deref().unwrap_or("Session")),
                escape(&header.id),
                escape(&header.timestamp),
                escape(&header.cwd),
            ));
            for entry in tree.branch_path(None) {
                body.push_str(&render_entry(entry));
            }
            name.unwrap_or_else(|| format!("Session {}", header.id))
        }
        None => {
            body.push_str("<header><h1>Session</h1><p class=\"meta\">No entries</p></header>\n");
            "Session".to_owned()
        }
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(&title)
    )
}

fn render_entry(entry: &SessionEntry) -> String {
    let value = serde_json::to_value(entry).unwrap_or(Value::Null);
    let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
    match entry {
        SessionEntry::Message(_) => render_message(value.get("message").unwrap_or(&Value::Null)),
        SessionEntry::ModelChange(_) => note(&format!(
            "Model: {}/{}",
            field("provider"),
            field("modelId")
        )),
        SessionEntry::ThinkingLevelChange(_) => {
            note(&format!("Thinking level: {}", field("thinkingLevel")))
        }
        SessionEntry::Compaction(_) => {
            card("compaction", "Compaction summary", &pre(field("summary")))
        }
        SessionEntry::BranchSummary(_) => {
            card("compaction", "Branch summary", &pre(field("summary")))
        }
        SessionEntry::CustomMessage(_) => match value.get("display").and_then(Value::as_bool) {
            Some(false) => String::new(),
            _ => card(
                "custom",
                field("customType"),
                &content(value.get("content")),
            ),
        },
        SessionEntry::SessionInfo(_) => note(&format!("Name: {}", field("name"))),
        SessionEntry::Label(_)
        | SessionEntry::Custom(_)
        | SessionEntry::ContextEdit(_)
        | SessionEntry::Usage(_)
        | SessionEntry::Other(_) => String::new(),
    }
}

fn render_message(message: &Value) -> String {
    let text = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or("");
    match text("role") {
        "user" => card("user", "User", &content(message.get("content"))),
        "assistant" => {
            let mut inner = content(message.get("content"));
            let stop = text("stopReason");
            if stop == "error" || stop == "aborted" {
                let error = match text("errorMessage") {
                    "" => format!("Request {stop}"),
                    message => message.to_owned(),
                };
                inner.push_str(&pre(&error));
            }
            let class = if stop == "error" {
                "assistant error"
            } else {
                "assistant"
            };
            let label = format!("Assistant ({}/{})", text("provider"), text("model"));
            card(class, &label, &inner)
        }
        "toolResult" => {
            let error = message.get("isError").and_then(Value::as_bool) == Some(true);
            let class = if error {
                "toolResult error"
            } else {
                "toolResult"
            };
            card(
                class,
                &format!("Result: {}", text("toolName")),
                &content(message.get("content")),
            )
        }
        "bashExecution" => {
            let body = format!(
                "{}{}",
                pre(&format!("$ {}", text("command"))),
                pre(text("output"))
            );
            card("toolResult", "Bash", &body)
        }
        "compactionSummary" | "branchSummary" => {
            card("compaction", "Summary", &pre(text("summary")))
        }
        role => card("custom", role, &content(message.get("content"))),
    }
}

/// A message's content: a string, or text, thinking, image and tool-call blocks.
fn content(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => pre(text),
        Some(Value::Array(blocks)) => blocks.iter().map(block).collect(),
        _ => String::new(),
    }
}

fn block(block: &Value) -> String {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    match text("type") {
        "text" => pre(text("text")),
        "thinking" => format!("<pre class=\"thinking\">{}</pre>", escape(text("thinking"))),
        "image" => format!(
            "<img alt=\"image\" src=\"data:{};base64,{}\">",
            escape(text("mimeType")),
            escape(text("data"))
        ),
        "toolCall" => {
            let arguments = block
                .get("arguments")
                .and_then(|a| serde_json::to_string_pretty(a).ok())
                .unwrap_or_default();
            format!(
                "<div class=\"call\"><div class=\"role\">Tool call: {}</div>{}</div>",
                escape(text("name")),
                pre(&arguments)
            )
        }
        _ => String::new(),
    }
}

fn card(class: &str, label: &str, inner: &str) -> String {
    format!(
        "<section class=\"entry {class}\"><div class=\"role\">{}</div>{inner}</section>\n",
        escape(label)
    )
}

fn note(text: &str) -> String {
    format!("<div class=\"entry note\">{}</div>\n", escape(text))
}

fn pre(text: &str) -> String {
    format!("<pre>{}</pre>", escape(text))
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_escaped_and_the_branch_is_rendered() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"<b>hi</b>"}],"timestamp":1}}"#,
            "\n"
        );
        let html = render(text);
        assert!(html.contains("<pre>&lt;b&gt;hi&lt;/b&gt;</pre>"), "{html}");
        assert!(html.contains("Session s1"));
        assert!(!html.contains("<script"));
    }

    #[test]
    fn a_file_that_is_not_a_session_renders_empty() {
        assert!(render("garbage\n").contains("No entries"));
    }
}
