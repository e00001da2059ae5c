//! A trial's transcript (Pi's agent messages, as JSON) as HTML: user text, assistant text,
//! thinking, tool calls with their arguments and tool results, in order. The messages are
//! untyped JSON from whichever agent ran, so every field is optional here and anything
//! unrecognised is shown as JSON rather than dropped; every string is escaped.

use std::fmt::Write as _;

use serde_json::Value;

use super::escape::{html, truncate};
use super::format::count;

/// Longest text block shown, in characters: a whole file read or a build log would make the
/// report unreadable (and huge); the head is what a reader needs to see what happened.
const MAX_TEXT: usize = 20_000;

/// Most messages shown per trial.
const MAX_MESSAGES: usize = 1_000;

/// The messages as a sequence of `<div class="msg ...">` elements.
pub(crate) fn render(messages: &[Value], out: &mut String) {
    for message in messages.iter().take(MAX_MESSAGES) {
        match message.get("role").and_then(Value::as_str) {
            Some("user") => user(message, out),
            Some("assistant") => assistant(message, out),
            Some("toolResult") => tool_result(message, out),
            other => {
                let role = other.unwrap_or("message");
                let _ = write!(
                    out,
                    "<div class=\"msg msg-other\"><div class=\"msg-role\">{}</div>",
                    html(role)
                );
                json_block(message, out);
                out.push_str("</div>\n");
            }
        }
    }
    if messages.len() > MAX_MESSAGES {
        let _ = writeln!(
            out,
            "<p class=\"truncated\">… {} more messages not shown</p>",
            count((messages.len() - MAX_MESSAGES) as u64)
        );
    }
}

fn user(message: &Value, out: &mut String) {
    out.push_str("<div class=\"msg msg-user\"><div class=\"msg-role\">User</div>");
    content(message.get("content"), out);
    out.push_str("</div>\n");
}

fn assistant(message: &Value, out: &mut String) {
    out.push_str("<div class=\"msg msg-assistant\"><div class=\"msg-role\">Assistant");
    let mut meta: Vec<String> = Vec::new();
    if let Some(stop) = message.get("stopReason").and_then(Value::as_str) {
        meta.push(format!("stop: {}", html(stop)));
    }
    if let Some(usage) = message.get("usage") {
        let input = usage.get("input").and_then(Value::as_u64).unwrap_or(0);
        let output = usage.get("output").and_then(Value::as_u64).unwrap_or(0);
        meta.push(format!(
            "{} in / {} out tokens",
            count(input),
            count(output)
        ));
    }
    if !meta.is_empty() {
        let _ = write!(out, " <span class=\"msg-meta\">{}</span>", meta.join(" · "));
    }
    out.push_str("</div>");
    content(message.get("content"), out);
    if let Some(error) = message.get("errorMessage").and_then(Value::as_str) {
        out.push_str("<div class=\"msg-error\"><span class=\"label\">error</span>");
        text(error, "text", out);
        out.push_str("</div>");
    }
    out.push_str("</div>\n");
}

fn tool_result(message: &Value, out: &mut String) {
    let is_error = message
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let name = message
        .get("toolName")
        .and_then(Value::as_str)
        .unwrap_or("tool");
    // The call's id, as its tool call shows it: which call this answers.
    let id = message
        .get("toolCallId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let _ = write!(
        out,
        "<div class=\"msg msg-tool{}\"><div class=\"msg-role\">Tool result · <code>{}</code> \
         <span class=\"tool-id\">{}</span>{}</div>",
        if is_error { " is-error" } else { "" },
        html(name),
        html(id),
        if is_error {
            " <span class=\"badge status-failed\">error</span>"
        } else {
            ""
        }
    );
    content_as(message.get("content"), "output", out);
    out.push_str("</div>\n");
}

/// A message's `content`: a string or an array of blocks.
fn content(value: Option<&Value>, out: &mut String) {
    content_as(value, "text", out);
}

/// As [`content`], text shown with `class` (`text` for prose, `output` for tool output).
fn content_as(value: Option<&Value>, class: &str, out: &mut String) {
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => text(s, class, out),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                block(b, class, out);
            }
        }
        Some(other) => json_block(other, out),
    }
}

fn block(b: &Value, class: &str, out: &mut String) {
    let str_field = |name: &str| b.get(name).and_then(Value::as_str);
    match str_field("type") {
        Some("text") => text(str_field("text").unwrap_or_default(), class, out),
        Some("thinking") => {
            out.push_str("<div class=\"thinking\"><span class=\"label\">thinking</span>");
            text(str_field("thinking").unwrap_or_default(), "text", out);
            out.push_str("</div>");
        }
        Some("toolCall") => {
            let _ = write!(
                out,
                "<div class=\"tool-call\"><div class=\"tool-head\"><span class=\"label\">tool call</span> \
                 <code class=\"tool-name\">{}</code> <span class=\"tool-id\">{}</span></div>",
                html(str_field("name").unwrap_or("?")),
                html(str_field("id").unwrap_or_default())
            );
            match b.get("arguments") {
                Some(args) => json_block(args, out),
                None => out.push_str("<pre class=\"json\">{}</pre>"),
            }
            out.push_str("</div>");
        }
        Some("image") => {
            let mime = str_field("mimeType").unwrap_or("image");
            let size = str_field("data").map(str::len).unwrap_or(0);
            let _ = write!(
                out,
                "<div class=\"image\">[{} image, {} bytes of base64 not shown]</div>",
                html(mime),
                count(size as u64)
            );
        }
        _ => json_block(b, out),
    }
}

/// A text, escaped and cut at [`MAX_TEXT`] characters with a note of what was left out.
pub(crate) fn text(s: &str, class: &str, out: &mut String) {
    if s.is_empty() {
        return;
    }
    let (head, rest) = truncate(s, MAX_TEXT);
    let _ = write!(out, "<pre class=\"{class}\">{}</pre>", html(head));
    if rest > 0 {
        let _ = write!(
            out,
            "<div class=\"truncated\">… {} more characters not shown</div>",
            count(rest as u64)
        );
    }
}

/// Any JSON value, pretty-printed (keys in their original order) and cut like a text.
fn json_block(v: &Value, out: &mut String) {
    let pretty = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    text(&pretty, "json", out);
}
