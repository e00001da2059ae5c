//! JavaScript's `localeCompare` as Node answers it (ICU's root collation) for the ASCII text of
//! provider names and model ids: letters compare case-insensitively first, punctuation is not
//! ignored and sorts before digits and letters in CLDR's order, and case only breaks ties
//! (lowercase first). Other characters sort after ASCII by code point, an approximation that
//! model ids do not reach.

use std::cmp::Ordering;

/// CLDR's order of the ASCII punctuation and symbols.
const PUNCTUATION: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// The primary weight of one character: punctuation, then digits, then letters, then the rest.
fn primary(c: char) -> u32 {
    if let Some(index) = PUNCTUATION.find(c) {
        return index as u32;
    }
    let base = PUNCTUATION.len() as u32;
    match c {
        '0'..='9' => base + (c as u32 - '0' as u32),
        'a'..='z' => base + 10 + (c as u32 - 'a' as u32),
        'A'..='Z' => base + 10 + (c as u32 - 'A' as u32),
        _ => 0x1000 + c as u32,
    }
}

/// `a.localeCompare(b)` for the texts `pi` sorts (provider names and model ids).
pub fn locale_compare(a: &str, b: &str) -> Ordering {
    let primaries = |s: &str| s.chars().map(primary).collect::<Vec<_>>();
    primaries(a)
        .cmp(&primaries(b))
        .then_with(|| {
            let case = |s: &str| {
                s.chars()
                    .map(|c| c.is_ascii_uppercase())
                    .collect::<Vec<_>>()
            };
            case(a).cmp(&case(b))
        })
        .then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_digits_letters_then_case() {
        let mut ids = vec!["ab", "a0", "a.b", "a-b", "a_b", "MiniMax-M2", "mimo", "Ab"];
        ids.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(
            ids,
            ["a_b", "a-b", "a.b", "a0", "ab", "Ab", "mimo", "MiniMax-M2"]
        );
    }
}
