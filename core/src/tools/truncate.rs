//! Output truncation as Pi's tools do it (`truncate.ts`): keep the head (read, grep, find, ls)
//! or the tail (bash) of a text within a line and a byte budget, and report what was cut so the
//! tool can say so.

use serde::Serialize;

/// Lines a tool shows at most by default.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Bytes (UTF-8) a tool shows at most by default.
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Characters (UTF-16 units) of one grep match line.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which budget cut the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// A truncated text and what was cut (Pi's `TruncationResult`, field for field).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    /// The tail's only line was itself cut (bash output with one huge line).
    pub last_line_partial: bool,
    /// The head's first line alone is over the byte budget, so nothing is shown.
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

/// The budgets; `Default` is Pi's (2,000 lines, 50 KiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// The lines a text counts as (Pi 1.5.2's `splitLinesForCounting`): none for an empty text, and
/// a final newline ends the last line rather than starting an empty one.
fn counted_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<&str> = content.split('\n').collect();
    if content.ends_with('\n') {
        lines.pop();
    }
    lines
}

fn untouched(content: &str, total_lines: usize, limits: Limits) -> Truncation {
    Truncation {
        content: content.to_owned(),
        truncated: false,
        truncated_by: None,
        total_lines,
        total_bytes: content.len(),
        output_lines: total_lines,
        output_bytes: content.len(),
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: limits.max_lines,
        max_bytes: limits.max_bytes,
    }
}

/// Keeps whole lines from the start. A first line over the byte budget yields nothing (the tool
/// then suggests reading with an offset).
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let lines = counted_lines(content);
    let total_lines = lines.len();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return untouched(content, total_lines, limits);
    }
    let first_line = lines.first().copied().unwrap_or("");
    if first_line.len() > limits.max_bytes {
        return Truncation {
            content: String::new(),
            truncated: true,
            truncated_by: Some(TruncatedBy::Bytes),
            output_lines: 0,
            output_bytes: 0,
            first_line_exceeds_limit: true,
            ..untouched(content, total_lines, limits)
        };
    }
    let mut kept = 0;
    let mut bytes = 0;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().take(limits.max_lines).enumerate() {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += cost;
    }
    if kept >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    let output = lines[..kept].join("\n");
    Truncation {
        output_lines: kept,
        output_bytes: output.len(),
        content: output,
        truncated: true,
        truncated_by: Some(by),
        ..untouched(content, total_lines, limits)
    }
}

/// Keeps whole lines from the end (a cut text loses its final newline); when even the last line
/// is over the byte budget, keeps its end (cut at a character boundary).
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let lines = counted_lines(content);
    let total_lines = lines.len();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return untouched(content, total_lines, limits);
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut partial: Option<&str> = None;
    let mut bytes = 0;
    let mut by = TruncatedBy::Lines;
    for line in lines.iter().rev() {
        if kept.len() >= limits.max_lines {
            break;
        }
        let cost = line.len() + usize::from(!kept.is_empty());
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if kept.is_empty() {
                let end = tail_within(line, limits.max_bytes);
                bytes = end.len();
                partial = Some(end);
            }
            break;
        }
        kept.push(line);
        bytes += cost;
    }
    let output: Vec<&str> = partial.into_iter().chain(kept.into_iter().rev()).collect();
    if output.len() >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    let joined = output.join("\n");
    Truncation {
        output_lines: output.len(),
        output_bytes: joined.len(),
        content: joined,
        truncated: true,
        truncated_by: Some(by),
        last_line_partial: partial.is_some(),
        ..untouched(content, total_lines, limits)
    }
}

/// The longest end of `text` within `max_bytes`, starting at a character boundary.
fn tail_within(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// A grep match line cut to `max_chars` UTF-16 units, with Pi's marker. A character whose
/// surrogate pair the cut would split is left out whole (Pi 1.5.2's `sliceHead`).
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    let units: Vec<u16> = line.encode_utf16().collect();
    if units.len() <= max_chars {
        return (line.to_owned(), false);
    }
    let splits_pair = max_chars > 0 && (0xD800..=0xDBFF).contains(&units[max_chars - 1]);
    let end = if splits_pair {
        max_chars - 1
    } else {
        max_chars
    };
    let head = String::from_utf16_lossy(&units[..end]);
    (format!("{head}... [truncated]"), true)
}

/// Pi's human size: `512B`, `1.5KB`, `2.0MB` (one decimal, halves rounded up as JavaScript's
/// `toFixed` does).
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let tenths = |unit: u64| {
        let scaled = u128::from(bytes) * 10;
        let unit = u128::from(unit);
        let (whole, rest) = (scaled / unit, scaled % unit);
        let rounded = if rest * 2 >= unit { whole + 1 } else { whole };
        format!("{}.{}", rounded / 10, rounded % 10)
    };
    if bytes < KIB {
        format!("{bytes}B")
    } else if bytes < MIB {
        format!("{}KB", tenths(KIB))
    } else {
        format!("{}MB", tenths(MIB))
    }
}
