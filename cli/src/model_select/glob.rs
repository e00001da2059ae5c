//! The part of `minimatch` (with `nocase`) that `--models` patterns use: `*` and `?` within one
//! path segment, `**` as a whole segment across segments, and `[...]` classes with ranges and
//! `!`/`^` negation.

/// Whether `text` matches the glob `pattern`, ignoring case.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.to_lowercase().chars().collect();
    let text: Vec<char> = text.to_lowercase().chars().collect();
    matches(&pattern, &text, true)
}

/// `segment_start`: the pattern position begins a path segment (where `**` is a globstar).
fn matches(pattern: &[char], text: &[char], segment_start: bool) -> bool {
    let Some((&first, rest)) = pattern.split_first() else {
        return text.is_empty();
    };
    match first {
        '*' if segment_start
            && rest.first() == Some(&'*')
            && matches!(rest.get(1), None | Some('/')) =>
        {
            let Some((_, tail)) = rest[1..].split_first() else {
                return true;
            };
            (0..=text.len()).any(|skip| {
                (skip == 0 || text[skip - 1] == '/') && matches(tail, &text[skip..], true)
            })
        }
        '*' => {
            let rest = skip_stars(rest);
            (0..=text.len())
                .take_while(|&skip| !text[..skip].contains(&'/'))
                .any(|skip| matches(rest, &text[skip..], false))
        }
        '?' => text
            .split_first()
            .is_some_and(|(&c, tail)| c != '/' && matches(rest, tail, false)),
        '[' => match class(rest) {
            Some((set, after)) => text.split_first().is_some_and(|(&c, tail)| {
                c != '/' && set.contains(c) && matches(after, tail, false)
            }),
            None => literal('[', rest, text),
        },
        '\\' if !rest.is_empty() => literal(rest[0], &rest[1..], text),
        c => literal(c, rest, text),
    }
}

fn literal(c: char, rest: &[char], text: &[char]) -> bool {
    text.split_first()
        .is_some_and(|(&t, tail)| t == c && matches(rest, tail, c == '/'))
}

fn skip_stars(pattern: &[char]) -> &[char] {
    let stars = pattern.iter().take_while(|&&c| c == '*').count();
    &pattern[stars..]
}

/// A bracket class: its members and the pattern after the closing `]`; `None` when unclosed.
struct Class {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

fn class(pattern: &[char]) -> Option<(Class, &[char])> {
    let (negated, mut i) = match pattern.first() {
        Some('!' | '^') => (true, 1),
        _ => (false, 0),
    };
    let mut ranges = Vec::new();
    let start = i;
    while i < pattern.len() {
        let c = pattern[i];
        if c == ']' && i > start {
            return Some((Class { negated, ranges }, &pattern[i + 1..]));
        }
        if pattern.get(i + 1) == Some(&'-') && pattern.get(i + 2).is_some_and(|&e| e != ']') {
            ranges.push((c, pattern[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_stay_in_their_segment() {
        assert!(glob_match("*sonnet*", "claude-sonnet-4-5"));
        assert!(!glob_match("*sonnet*", "anthropic/claude-sonnet-4-5"));
        assert!(glob_match("anthropic/*", "anthropic/claude-sonnet-4-5"));
        assert!(!glob_match("**sonnet*", "anthropic/claude-sonnet-4-5"));
        assert!(glob_match("**/*sonnet*", "anthropic/claude-sonnet-4-5"));
        assert!(glob_match("**", "a/b"));
        assert!(!glob_match("*", "a/b"));
        assert!(glob_match("Mock/MOCK-?odel", "mock/mock-model"));
    }

    #[test]
    fn classes() {
        assert!(glob_match("gpt-[45]*", "gpt-4o"));
        assert!(!glob_match("gpt-[!45]*", "gpt-4o"));
        assert!(glob_match("gpt-[a-z]*", "gpt-oss"));
        assert!(glob_match("a[b", "a[b"));
    }
}
