//! The line diff of two texts that a report shows (a replay's divergence, the proxy's
//! unmatched request): bounded in lines, in bytes per line and in time, whatever was sent.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// `value` as pretty JSON for a line diff. Long texts (a system prompt, a tool result) break at
/// their newlines, so a diff shows the line of the text that changed rather than the whole text.
pub fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_default()
        .replace("\\n", "\\n\n  \u{21aa} ")
}

/// Lines of a diff shown, context included: a request body can be tens of megabytes (of one
/// line, or of a million), and a report must stay readable and small whatever was sent.
pub const MAX_LINES: usize = 200;

/// Bytes of one shown line (a path, a diff line) before it is cut.
pub const MAX_LINE_BYTES: usize = 1000;

/// How long one diff may take before it settles for a coarser answer.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(50);

/// The unified diff of `expected` against `actual` by lines, three lines of context around each
/// change, at most [`MAX_LINES`] lines of at most [`MAX_LINE_BYTES`] bytes, then how many lines
/// were left out.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(expected, actual);
    let mut out = String::new();
    let mut shown = 0;
    let mut hidden = 0u64;
    for group in diff.grouped_ops(3) {
        for op in &group {
            for change in diff.iter_changes(op) {
                if shown == MAX_LINES {
                    hidden += 1;
                    continue;
                }
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let line = change.value().strip_suffix('\n').unwrap_or(change.value());
                let _ = writeln!(out, "{sign}{}", clip(line));
                shown += 1;
            }
        }
        if shown < MAX_LINES {
            out.push_str("  ...\n");
        }
    }
    if hidden > 0 {
        let _ = writeln!(out, "  ... {hidden} more lines not shown");
    }
    out
}

/// `text` cut to [`MAX_LINE_BYTES`] (at a character boundary), saying how many bytes were cut.
pub fn clip(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}… ({} more bytes)",
        &text[..end],
        text.len() - end
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_diff_shows_at_most_its_lines_and_says_how_many_it_left_out() {
        let expected = "a\nb\nc\n";
        let actual: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let diff = line_diff(expected, &actual);
        assert_eq!(diff.lines().count(), MAX_LINES + 1, "{diff}");
        assert!(diff.ends_with("  ... 803 more lines not shown\n"), "{diff}");
        let small = line_diff("a\nb\n", "a\nc\n");
        assert_eq!(small, " a\n-b\n+c\n  ...\n");
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_LINE_BYTES);
        let cut = clip(&long);
        assert!(cut.starts_with(&"é".repeat(MAX_LINE_BYTES / 2)));
        assert!(
            cut.ends_with(&format!("… ({} more bytes)", MAX_LINE_BYTES)),
            "{cut}"
        );
        assert_eq!(clip("short"), "short");
        let diff = line_diff("x\n", &format!("{}\n", "y".repeat(10_000)));
        assert!(diff.len() < 2 * MAX_LINE_BYTES, "{diff}");
        assert!(diff.contains(&format!("({} more bytes)", 10_000 - MAX_LINE_BYTES)));
    }
}
