//! TOML written as text: the suites this crate writes (a converted benchmark, a dataset's rows
//! as tasks) are read back by the same parser that reads the user's.

use std::fmt::Write;

/// `text` as a TOML basic string (in double quotes): `"` and `\` escaped, and every control
/// character TOML forbids raw (all but tab) escaped by name or as `\uXXXX`.
pub fn basic_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\t' => out.push('\t'),
            c if c <= '\u{1f}' || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
