//! Escaping of user-provided text (task names, check details, transcripts) for each output
//! format. Everything a report prints that came from a suite, a model or a command goes through
//! here, so a transcript can never break the markup around it.

/// Whether `c` may appear in a report at all. XML 1.0 forbids most C0 controls and U+FFFE/U+FFFF
/// (a parser rejects the whole file); HTML treats them and the C1 controls as parse errors.
/// Tab, newline and carriage return stay.
fn is_allowed(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => true,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => false,
        '\u{fffe}' | '\u{ffff}' => false,
        _ => true,
    }
}

/// Whether `c` is a bidirectional formatting character (embeddings, overrides, isolates, and
/// the marks). Obeyed, one in a transcript or a check's detail reorders what the report shows
/// after it (the "Trojan Source" trick: `exit 0` drawn as `0 tixe`, a comment drawn over code).
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// `s` with every character that `replace` maps written as its replacement, bidirectional
/// controls shown as their code point (`⟨U+202E⟩`), and the other characters kept when
/// [`is_allowed`], dropped when not.
fn escape(s: &str, replace: impl Fn(char) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("⟨U+{:04X}⟩", u32::from(c)));
            continue;
        }
        match replace(c) {
            Some(replacement) => out.push_str(replacement),
            None if is_allowed(c) => out.push(c),
            None => {}
        }
    }
    out
}

/// The entities every markup language here needs: `&`, `<` and `>`.
fn markup(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        _ => None,
    }
}

/// Text for XML character data and attribute values: the five special characters become
/// entities and forbidden characters are dropped. Tab, newline and carriage return become
/// character references so attribute values keep them (a parser would turn them into spaces).
pub(crate) fn xml(s: &str) -> String {
    escape(s, |c| match c {
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        '\t' => Some("&#9;"),
        '\n' => Some("&#10;"),
        '\r' => Some("&#13;"),
        c => markup(c),
    })
}

/// Text for XML element content: as [`xml`] but newlines and tabs stay literal, so a failure
/// body reads as lines in a CI log. (`]]>` is harmless: its `>` is escaped.)
pub(crate) fn xml_text(s: &str) -> String {
    escape(s, |c| match c {
        '\r' => Some("&#13;"),
        c => markup(c),
    })
}

/// Text for HTML element content and quoted attribute values. Escaping `<` makes `</script>`
/// and every other tag inert; escaping both quotes makes attribute values safe.
pub(crate) fn html(s: &str) -> String {
    escape(s, |c| match c {
        '"' => Some("&quot;"),
        '\'' => Some("&#39;"),
        c => markup(c),
    })
}

/// Text for a Markdown table cell or list item (GitHub-flavoured): newlines become spaces, `|`
/// and the characters that start emphasis, code or links are backslash-escaped, and `<`, `>`,
/// `&` become entities so text such as `Vec<T>` is not taken for an HTML tag and dropped.
pub(crate) fn markdown(s: &str) -> String {
    escape(s, |c| match c {
        '\n' | '\r' | '\t' => Some(" "),
        '|' => Some("\\|"),
        '\\' => Some("\\\\"),
        '`' => Some("\\`"),
        '*' => Some("\\*"),
        '_' => Some("\\_"),
        '[' => Some("\\["),
        ']' => Some("\\]"),
        '#' => Some("\\#"),
        '~' => Some("\\~"),
        c => markup(c),
    })
}

/// `s` cut to at most `max` characters (not bytes, so never inside a character), and how many
/// characters were left out.
pub(crate) fn truncate(s: &str, max: usize) -> (&str, usize) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], s[at..].chars().count()),
        None => (s, 0),
    }
}

/// `s` on one line and at most `max` characters, with an ellipsis when cut: for a short
/// mention (a failure message, a Markdown list item) of a text that may be a whole log.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (head, rest) = truncate(&flat, max);
    if rest > 0 {
        format!("{head}…")
    } else {
        flat
    }
}

/// `s` at most `max` characters, cut in the middle when longer (`task-number-1…ve-name`): names
/// in a series often differ only at the end, which an end cut would hide.
pub(crate) fn shorten_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 3 {
        return s.to_string();
    }
    let tail = (max - 1) / 2;
    let head = max - 1 - tail;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_and_strips() {
        assert_eq!(
            xml("a<b>&\"'\u{1}\u{ffff}\n"),
            "a&lt;b&gt;&amp;&quot;&apos;&#10;"
        );
        assert_eq!(xml_text("]]>\u{7}x\ny"), "]]&gt;x\ny");
    }

    #[test]
    fn html_makes_script_inert() {
        assert_eq!(
            html("</script><script>alert(1)</script>"),
            "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }

    #[test]
    fn markdown_escapes_cells() {
        assert_eq!(markdown("a|b\nc<T>"), "a\\|b c&lt;T&gt;");
        assert_eq!(markdown("\\`*_[]#~\u{7}"), "\\\\\\`\\*\\_\\[\\]\\#\\~");
        assert_eq!(html("'\"\u{85}"), "&#39;&quot;");
    }

    #[test]
    fn bidi_controls_are_shown() {
        assert_eq!(html("a\u{202e}b\u{2066}"), "a⟨U+202E⟩b⟨U+2066⟩");
        assert_eq!(markdown("\u{61c}"), "⟨U+061C⟩");
        assert_eq!(xml("\u{200f}"), "⟨U+200F⟩");
    }

    #[test]
    fn truncate_counts_characters() {
        assert_eq!(truncate("héllo", 2), ("hé", 3));
        assert_eq!(truncate("hé", 5), ("hé", 0));
        assert_eq!(one_line("a\n  b c", 3), "a b…");
        assert_eq!(shorten_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(shorten_middle("abc", 5), "abc");
    }
}
