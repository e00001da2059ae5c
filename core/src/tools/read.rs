//! What the read tool shows of a text file (the file's text is read by the interpreter): the
//! requested window (1-based `offset`, `limit` lines), cut to Pi's budgets, with the notice that
//! tells the model how to continue.

use super::truncate::{
    format_size, truncate_head, Limits, TruncatedBy, Truncation, DEFAULT_MAX_BYTES,
};

/// The tool result's text, and the truncation details when the budget cut it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadText {
    pub text: String,
    pub truncation: Option<Truncation>,
}

/// The offset names a line after the end; `Display` is Pi's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Offset {offset} is beyond end of file ({total_lines} lines total)")]
pub struct OffsetBeyondEnd {
    pub offset: i64,
    pub total_lines: usize,
}

/// The read tool's answer for a text file whose content is `content`, asked for as `path`.
pub fn read_text(
    content: &str,
    path: &str,
    offset: Option<i64>,
    limit: Option<i64>,
) -> Result<ReadText, OffsetBeyondEnd> {
    let lines: Vec<&str> = content.split('\n').collect();
    let total = lines.len() as i64;
    let start = match offset {
        Some(o) if o != 0 => o.saturating_sub(1).max(0),
        _ => 0,
    };
    if start >= total {
        return Err(OffsetBeyondEnd {
            offset: offset.unwrap_or(0),
            total_lines: lines.len(),
        });
    }
    let start_display = start + 1;
    let (selected, user_end) = match limit {
        Some(limit) => {
            let end = start.saturating_add(limit).min(total);
            let window = if end > start {
                &lines[start as usize..end as usize]
            } else {
                &[][..]
            };
            (window.join("\n"), Some(end))
        }
        None => (lines[start as usize..].join("\n"), None),
    };
    let truncation = truncate_head(&selected, Limits::default());
    let max = format_size(DEFAULT_MAX_BYTES as u64);
    if truncation.first_line_exceeds_limit {
        let size = format_size(lines[start as usize].len() as u64);
        let text = format!(
            "[Line {start_display} is {size}, exceeds {max} limit. Use bash: sed -n '{start_display}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        );
        return Ok(ReadText {
            text,
            truncation: Some(truncation),
        });
    }
    if truncation.truncated {
        let end_display = start_display + truncation.output_lines as i64 - 1;
        let next = end_display + 1;
        let notice = match truncation.truncated_by {
            Some(TruncatedBy::Lines) => format!(
                "[Showing lines {start_display}-{end_display} of {total}. Use offset={next} to continue.]"
            ),
            _ => format!(
                "[Showing lines {start_display}-{end_display} of {total} ({max} limit). Use offset={next} to continue.]"
            ),
        };
        return Ok(ReadText {
            text: format!("{}\n\n{notice}", truncation.content),
            truncation: Some(truncation),
        });
    }
    let text = match user_end {
        Some(end) if end < total => format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            truncation.content,
            total.saturating_sub(end),
            end.saturating_add(1)
        ),
        _ => truncation.content,
    };
    Ok(ReadText {
        text,
        truncation: None,
    })
}
