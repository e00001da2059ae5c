//! The `mcp_servers` system-prompt section, as Pi 1.5.2's MCP extension renders it
//! (`renderServersSection`): every enabled server some of whose tools are not declared to the
//! model (`codemode` or `deferred` exposure), sorted by name as JavaScript's `localeCompare`
//! sorts them, with how its tools are reached and one line from its configured `description`
//! or, once it connected, from its instructions. The model learns of those servers only from
//! this section. Lengths are counted in UTF-16 code units, as JavaScript counts them.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::naming::mcp_namespace;

/// The section's name in the system prompt (`<mcp_servers>`).
pub const SECTION_NAME: &str = "mcp_servers";

/// The section's first line, before what the listed servers' ways of reach add to it.
const INTRO: &str = "MCP servers whose tools are not declared to you.";
/// Added to the intro when a listed server is reached through codemode.
const INTRO_CODEMODE: &str = " Call the tools of `codemode` servers from codemode scripts.";
/// Added to the intro when a listed server is reached through `tool_search`.
const INTRO_TOOL_SEARCH: &str = " Load the tools of `tool_search` servers with `tool_search`.";
/// Characters of one server's summary at most (Pi's `MAX_SERVER_DESCRIPTION_CHARS`).
const MAX_SERVER_DESCRIPTION_CHARS: i64 = 250;
/// Characters of the whole section at most (Pi's `MAX_SERVERS_SECTION_CHARS`).
const MAX_SERVERS_SECTION_CHARS: i64 = 4096;

/// Pi's warning when some enabled server's tools can be reached only through `codemode` or
/// `tool_search` and neither tool is active to reach them.
pub const UNREACHABLE_WARNING: &str = "MCP tools are only reachable from the codemode or tool_search tool, but neither is active; they cannot be called.";

/// The same, when codemode would reach them but the configuration's `autoEnableCodemode` is
/// false.
pub const UNREACHABLE_NOT_ENABLED_WARNING: &str = "MCP tools are only reachable from the codemode or tool_search tool, but neither is active (autoEnableCodemode is false); they cannot be called.";

/// One server as the section sees it: its name, its config as written, and the first line of
/// its instructions once it connected.
#[derive(Clone, Copy, Debug)]
pub struct SectionServer<'a> {
    pub name: &'a str,
    pub config: &'a Map<String, Value>,
    pub instructions: Option<&'a str>,
}

impl SectionServer<'_> {
    fn enabled(&self) -> bool {
        self.config.get("enabled").and_then(Value::as_bool) != Some(false)
    }

    /// Pi's `configuredExposures`: the server's exposure (default `codemode`) and every
    /// `toolExposure` value, known before the server connects.
    fn exposures(&self) -> Vec<&str> {
        let own = self
            .config
            .get("exposure")
            .and_then(Value::as_str)
            .unwrap_or("codemode");
        let per_tool = self
            .config
            .get("toolExposure")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|map| map.values().filter_map(Value::as_str));
        std::iter::once(own).chain(per_tool).collect()
    }

    /// Whether some of its tools are `direct`: the servers the first prompt waits for.
    pub fn has_direct_tools(&self) -> bool {
        self.exposures().contains(&"direct")
    }

    /// Whether some of its tools are reached through codemode or `tool_search`.
    fn indirect(&self) -> bool {
        self.exposures()
            .iter()
            .any(|e| matches!(*e, "codemode" | "deferred"))
    }

    /// Pi's `serverSummary`: the first line of the trimmed description, else of the
    /// instructions, trimmed.
    fn summary(&self) -> String {
        let described = self
            .config
            .get("description")
            .and_then(Value::as_str)
            .map(js_trim)
            .filter(|d| !d.is_empty());
        let text = described.or(self.instructions).unwrap_or("");
        js_trim(text.split('\n').next().unwrap_or("")).to_owned()
    }
}

/// The session's custom system-prompt sections for `section` (the rendered `mcp_servers`
/// section, when some server is reached indirectly): what the binary and the SDK hand the
/// session options alike.
pub fn custom_sections(section: Option<&str>) -> Vec<(String, String)> {
    section
        .map(|text| (SECTION_NAME.to_owned(), text.to_owned()))
        .into_iter()
        .collect()
}

/// Whether some enabled server has tools only `codemode` or `tool_search` could reach, which
/// is when Pi warns (once) that they cannot be called without either tool.
pub fn has_unreachable_tools(servers: &[SectionServer<'_>]) -> bool {
    servers.iter().any(|s| s.enabled() && s.indirect())
}

/// Whether some enabled server's configured exposures include `deferred`, which is when Pi
/// activates `tool_search` at session start (`ensureDiscoveryActive`).
pub fn needs_tool_search(servers: &[SectionServer<'_>]) -> bool {
    servers
        .iter()
        .any(|s| s.enabled() && s.exposures().contains(&"deferred"))
}

/// Whether some enabled server's configured exposures include `codemode`, which is when Pi
/// activates its codemode tool at session start (`ensureDiscoveryActive`).
pub fn needs_codemode(servers: &[SectionServer<'_>]) -> bool {
    servers
        .iter()
        .any(|s| s.enabled() && s.exposures().contains(&"codemode"))
}

/// The section's text, or `None` when no enabled server has such tools.
pub fn render_servers_section(servers: &[SectionServer<'_>]) -> Option<String> {
    let mut listed: Vec<&SectionServer<'_>> = servers
        .iter()
        .filter(|s| s.enabled() && s.indirect())
        .collect();
    if listed.is_empty() {
        return None;
    }
    listed.sort_by(|a, b| locale_compare(a.name, b.name));
    let reaches: Vec<&str> = listed
        .iter()
        .map(|s| {
            if s.exposures().contains(&"codemode") {
                "codemode"
            } else {
                "tool_search"
            }
        })
        .collect();
    let mut intro = INTRO.to_owned();
    if reaches.contains(&"codemode") {
        intro.push_str(INTRO_CODEMODE);
    }
    if reaches.contains(&"tool_search") {
        intro.push_str(INTRO_TOOL_SEARCH);
    }
    let heads: Vec<String> = listed
        .iter()
        .zip(&reaches)
        .map(|(s, reach)| format!("- {} ({reach})", mcp_namespace(s.name)))
        .collect();
    let omitted = |count: usize| -> Option<String> {
        (count > 0).then(|| {
            let plural = if count == 1 { "" } else { "s" };
            format!("- … {count} more server{plural}; find their tools with searchTools()")
        })
    };
    // The intro, the first `kept` server lines without summaries, and the omission line.
    let size = |kept: usize| -> i64 {
        let lines = std::iter::once(intro.as_str())
            .chain(heads[..kept].iter().map(String::as_str))
            .map(utf16_len)
            .chain(omitted(listed.len() - kept).as_deref().map(utf16_len));
        let (count, total) = lines.fold((0, 0), |(n, t), len| (n + 1, t + len));
        total + count - 1
    };
    let mut kept = listed.len();
    while kept > 0 && size(kept) > MAX_SERVERS_SECTION_CHARS {
        kept -= 1;
    }
    // Each summary also takes a ": " separator.
    let per_server = if kept == 0 {
        0
    } else {
        MAX_SERVER_DESCRIPTION_CHARS
            .min((MAX_SERVERS_SECTION_CHARS - size(kept)).div_euclid(kept as i64) - 2)
    };
    let mut lines = vec![intro.clone()];
    for (server, head) in listed.iter().zip(&heads).take(kept) {
        let summary = if per_server > 0 {
            truncate(&server.summary(), per_server)
        } else {
            String::new()
        };
        lines.push(if summary.is_empty() {
            head.clone()
        } else {
            format!("{head}: {summary}")
        });
    }
    lines.extend(omitted(listed.len() - kept));
    Some(lines.join("\n"))
}

fn utf16_len(text: &str) -> i64 {
    text.encode_utf16().count() as i64
}

/// Pi's `truncate`: at most `max` UTF-16 units, the cut text ending in `…`, never splitting a
/// surrogate pair (`sliceHead`).
fn truncate(text: &str, max: i64) -> String {
    if utf16_len(text) <= max {
        return text.to_owned();
    }
    if max <= 1 {
        return String::new();
    }
    let mut units = 0;
    let head: String = text
        .chars()
        .take_while(|c| {
            units += c.len_utf16() as i64;
            units < max
        })
        .collect();
    format!("{}…", js_trim_end(&head))
}

/// JavaScript's white space and line terminators, which `trim` removes.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_space)
}

fn js_trim_end(text: &str) -> &str {
    text.trim_end_matches(is_js_space)
}

/// `a.localeCompare(b)` for the names Pi allows (ASCII letters, digits, `_`, `-`) under the
/// root collation: first by letters case-blind, with `_` before `-` before digits before
/// letters, then lowercase before uppercase from the left.
fn locale_compare(a: &str, b: &str) -> Ordering {
    fn primary(c: char) -> (u8, char) {
        match c {
            '_' => (0, c),
            '-' => (1, c),
            '0'..='9' => (2, c),
            c if c.is_ascii_alphabetic() => (3, c.to_ascii_lowercase()),
            c => (4, c),
        }
    }
    let tertiary = |c: char| c.is_ascii_uppercase();
    a.chars()
        .map(primary)
        .cmp(b.chars().map(primary))
        .then_with(|| a.chars().map(tertiary).cmp(b.chars().map(tertiary)))
        .then_with(|| a.cmp(b))
}
