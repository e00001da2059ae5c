//! The small JSON-with-comments dialect models.json accepts: `//` line comments and trailing
//! commas, nothing else (no block comments), with string literals left untouched.

/// Removes `//` comments, then commas that only precede a closing `}` or `]`.
///
/// Mirrors the original's two regex passes exactly, including their corner cases: a string
/// literal is only recognised when it is closed (an escape may not be followed by a line break),
/// and a quote that opens no complete literal is kept as an ordinary character.
pub fn strip_json_comments(input: &str) -> String {
    let without_comments = rewrite(input, |rest| {
        rest.starts_with("//")
            .then(|| rest.find('\n').unwrap_or(rest.len()))
            .map(|len| (len, ""))
    });
    rewrite(&without_comments, |rest| {
        let after_comma = rest.strip_prefix(',')?;
        let tail = after_comma.trim_start_matches(is_js_whitespace);
        tail.starts_with(['}', ']']).then_some((1, ""))
    })
}

/// Copies `input`, skipping complete string literals, and lets `replace` drop a match of
/// `len` bytes (replacing it by the given text) at any other position.
fn rewrite(input: &str, replace: impl Fn(&str) -> Option<(usize, &'static str)>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        let rest = &input[i..];
        if rest.starts_with('"') {
            if let Some(len) = string_literal_len(rest) {
                out.push_str(&rest[..len]);
                i += len;
                continue;
            }
        } else if let Some((len, with)) = replace(rest) {
            out.push_str(with);
            i += len;
            continue;
        }
        let ch_len = rest.chars().next().map_or(1, char::len_utf8);
        out.push_str(&rest[..ch_len]);
        i += ch_len;
    }
    out
}

/// Length of the closed literal `"(?:\\.|[^"\\])*"` at the start of `text`, if there is one.
fn string_literal_len(text: &str) -> Option<usize> {
    let mut chars = text.char_indices().skip(1);
    while let Some((at, ch)) = chars.next() {
        match ch {
            '"' => return Some(at + 1),
            '\\' => match chars.next() {
                Some((_, escaped)) if !is_line_terminator(escaped) => {}
                _ => return None,
            },
            _ => {}
        }
    }
    None
}

fn is_line_terminator(ch: char) -> bool {
    matches!(ch, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// JavaScript's `\s`.
fn is_js_whitespace(ch: char) -> bool {
    (ch.is_whitespace() && ch != '\u{85}') || ch == '\u{feff}'
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::strip_json_comments;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z/,\\\\\"\\]\\} \n]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z/,\\]}]{0,6}", inner), 0..4)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Plain JSON has no comments and no trailing commas, so nothing may change, however
        /// its strings look.
        #[test]
        fn plain_json_is_left_alone(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            prop_assert_eq!(strip_json_comments(&text), text);
        }
    }

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "{ // note\n \"a//b\": [1, 2, ],\n \"c\": \"x,}\", }";
        assert_eq!(
            strip_json_comments(text),
            "{ \n \"a//b\": [1, 2 ],\n \"c\": \"x,}\" }"
        );
    }

    #[test]
    fn an_unclosed_quote_does_not_protect_what_follows() {
        assert_eq!(strip_json_comments("\"abc // gone"), "\"abc ");
        assert_eq!(strip_json_comments("\"a\\\n\" // x"), "\"a\\\n\" ");
    }
}
