//! Text from a cassette made safe for a terminal or a CI log. A cassette may come from anyone
//! (a pull request), and what a check prints about it (a divergence, a line it cannot read, the
//! command that records it again, its file name) is that cassette's text: an escape sequence in
//! it could clear the screen, retitle the terminal, hide lines of the log or reorder what is
//! read (Unicode's bidirectional overrides). Such characters are written as `\u{..}` escapes.

use std::borrow::Cow;

/// `text` with every control character but newline and tab, and every bidirectional override
/// or isolate, written as a `\u{..}` escape.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn unsafe_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_overrides_are_written_out_and_plain_text_is_kept() {
        assert!(matches!(printable("plain\ttext\nnext"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}[2Jb\u{7}c\u{9b}d\u{202e}e\r"),
            "a\\u{1b}[2Jb\\u{7}c\\u{9b}d\\u{202e}e\\u{d}"
        );
    }
}
