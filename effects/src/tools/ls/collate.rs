//! The order of ls: JavaScript's `localeCompare` on lowercased names, which Node answers with
//! ICU's root collation (CLDR). Names compare by their letters first, then by accents, then by
//! ligature spellings, and punctuation is not ignored: it sorts before digits and letters in
//! CLDR's order (`_` before `-` before `.`), so `a_b < a-b < a.b < a0 < ab`.
//!
//! This is an approximation of ICU: ASCII, Latin-1, Latin Extended-A, general punctuation,
//! currency signs, arrows and some math symbols carry their measured CLDR weights (`GROUPS`);
//! other symbols sort by code point between those and the currency signs; other letters sort
//! after Latin by script, then by code point. Control characters and format characters are
//! ignored, combining marks only count as accents.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Characters of equal primary weight, groups in ascending CLDR order; within a group, the
/// order of the accented forms (measured with Node's `localeCompare` on lowercase letters).
const GROUPS: &[&str] = &[
    " \u{a0}",
    "\u{203e}",
    "_",
    "\u{2017}",
    "-",
    "\u{2010}\u{2011}",
    "\u{2012}",
    "\u{2013}",
    "\u{2014}",
    "\u{2015}",
    "\u{2053}",
    ",",
    ";",
    "\u{204f}",
    ":",
    "!",
    "\u{203c}",
    "\u{2049}",
    "\u{a1}",
    "?",
    "\u{2048}",
    "\u{2047}",
    "\u{bf}",
    "\u{203d}",
    ".\u{2024}",
    "\u{2025}",
    "\u{2026}",
    "\u{b7}",
    "\u{2055}",
    "\u{2056}",
    "\u{2058}",
    "\u{2059}",
    "\u{205a}",
    "\u{205b}",
    "\u{205c}",
    "\u{205d}",
    "\u{205e}",
    "'\u{2018}\u{2019}\u{201a}\u{201b}",
    "\u{2039}",
    "\u{203a}",
    "\"\u{201c}\u{201d}\u{201e}\u{201f}",
    "\u{ab}",
    "\u{bb}",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "\u{2045}",
    "\u{2046}",
    "\u{2016}",
    "\u{a7}",
    "\u{b6}",
    "\u{204b}",
    "@",
    "*",
    "\u{204e}",
    "\u{2051}",
    "/",
    "\\",
    "&",
    "\u{204a}",
    "#",
    "%",
    "\u{2030}",
    "\u{2031}",
    "\u{2020}",
    "\u{2021}",
    "\u{2022}",
    "\u{2023}",
    "\u{2027}",
    "\u{2043}",
    "\u{204c}",
    "\u{204d}",
    "\u{2032}",
    "\u{2033}",
    "\u{2034}",
    "\u{2057}",
    "\u{2035}",
    "\u{2036}",
    "\u{2037}",
    "\u{2038}",
    "\u{203b}",
    "\u{203f}",
    "\u{2054}",
    "\u{2040}",
    "\u{2050}",
    "\u{2041}",
    "\u{2042}",
    "`",
    "\u{b4}",
    "^",
    "\u{af}",
    "\u{a8}",
    "\u{b8}",
    "\u{b0}",
    "\u{a9}",
    "\u{ae}",
    "\u{2190}",
    "\u{2192}",
    "\u{2191}",
    "\u{2193}",
    "\u{2194}",
    "\u{2195}",
    "\u{2196}",
    "\u{2197}",
    "\u{2198}",
    "\u{2199}",
    "\u{2200}",
    "\u{2201}",
    "\u{2202}",
    "\u{2203}\u{2204}",
    "\u{2205}",
    "\u{2206}",
    "\u{2207}",
    "\u{2208}\u{2209}",
    "\u{220a}",
    "\u{220b}\u{220c}",
    "\u{220d}",
    "\u{220e}",
    "\u{220f}",
    "+",
    "\u{b1}",
    "\u{f7}",
    "\u{d7}",
    "<",
    "=",
    ">",
    "\u{ac}",
    "|",
    "\u{a6}",
    "~",
    "\u{2052}",
    "\u{2044}",
    "\u{a4}",
    "\u{a2}",
    "$",
    "\u{a3}",
    "\u{a5}",
    "\u{20a0}",
    "\u{20a1}",
    "\u{20a2}",
    "\u{20a3}",
    "\u{20a4}",
    "\u{20a5}",
    "\u{20a6}",
    "\u{20a9}",
    "\u{20aa}",
    "\u{20ab}",
    "\u{20ac}",
    "\u{20ad}",
    "\u{20ae}",
    "\u{20af}",
    "\u{20b0}",
    "\u{20b1}",
    "\u{20b2}",
    "\u{20b3}",
    "\u{20b4}",
    "\u{20b5}",
    "\u{20b6}",
    "\u{20b7}",
    "\u{20b8}",
    "\u{20b9}",
    "\u{20ba}",
    "\u{20bb}",
    "\u{20bc}",
    "\u{20bd}",
    "\u{20be}",
    "\u{20bf}",
    "0",
    "1\u{b9}",
    "\u{bd}",
    "\u{bc}",
    "2\u{b2}",
    "3\u{b3}",
    "\u{be}",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "a\u{aa}\u{e1}\u{e0}\u{103}\u{e2}\u{e5}\u{e4}\u{e3}\u{105}\u{101}",
    "b",
    "c\u{107}\u{109}\u{10d}\u{10b}\u{e7}",
    "d\u{10f}\u{111}\u{f0}",
    "e\u{e9}\u{e8}\u{115}\u{ea}\u{11b}\u{eb}\u{117}\u{119}\u{113}",
    "f",
    "g\u{11f}\u{11d}\u{121}\u{123}",
    "h\u{125}\u{127}",
    "i\u{ed}\u{ec}\u{12d}\u{ee}\u{ef}\u{129}\u{12f}\u{12b}",
    "\u{131}",
    "j\u{135}",
    "k\u{137}",
    "l\u{13a}\u{13e}\u{13c}\u{142}\u{140}",
    "m",
    "n\u{144}\u{148}\u{f1}\u{146}",
    "\u{14b}",
    "o\u{ba}\u{f3}\u{f2}\u{14f}\u{f4}\u{f6}\u{151}\u{f5}\u{f8}\u{14d}",
    "p",
    "q",
    "\u{138}",
    "r\u{155}\u{159}\u{157}",
    "s\u{15b}\u{15d}\u{161}\u{15f}\u{17f}",
    "t\u{165}\u{163}",
    "\u{167}",
    "u\u{fa}\u{f9}\u{16d}\u{fb}\u{16f}\u{fc}\u{171}\u{169}\u{173}\u{16b}",
    "v",
    "w\u{175}",
    "x",
    "y\u{fd}\u{177}\u{ff}",
    "z\u{17a}\u{17e}\u{17c}",
    "\u{fe}",
];

/// Ligatures that sort as the letters they are made of, just after them.
const EXPANSIONS: &[(char, &str)] = &[
    ('\u{e6}', "ae"),
    ('\u{133}', "ij"),
    ('\u{153}', "oe"),
    ('\u{df}', "ss"),
    ('\u{20a7}', "pts"),
    ('\u{20a8}', "rs"),
];

/// The first group of currency signs: symbols without a table entry sort just before it.
const CURRENCY: char = '\u{a4}';

/// A name's collation key; keys compare as ICU compares the names (primary weights first,
/// then accents, then ligatures).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SortKey {
    primary: Vec<u64>,
    secondary: Vec<u16>,
    tertiary: Vec<u8>,
}

struct Table {
    weights: HashMap<char, (u64, u16)>,
    symbols: u64,
    others: u64,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut weights = HashMap::new();
        let mut symbols = 0;
        for (group, chars) in GROUPS.iter().enumerate() {
            let primary = (group as u64 + 1) << 32;
            if chars.starts_with(CURRENCY) {
                symbols = group as u64 + 1;
            }
            for (accent, c) in chars.chars().enumerate() {
                weights.insert(c, (primary, accent as u16));
            }
        }
        Table {
            weights,
            symbols: symbols << 32,
            others: (GROUPS.len() as u64 + 1) << 32,
        }
    })
}

/// The key of `name` (already lowercased, as Pi compares).
pub(super) fn sort_key(name: &str) -> SortKey {
    let table = table();
    let mut key = SortKey {
        primary: Vec::with_capacity(name.len()),
        secondary: Vec::with_capacity(name.len()),
        tertiary: Vec::with_capacity(name.len()),
    };
    for c in name.chars() {
        if ignorable(c) {
            continue;
        }
        if ('\u{300}'..='\u{36f}').contains(&c) {
            key.secondary.push(c as u16 - 0x2ff);
            continue;
        }
        if let Some((_, letters)) = EXPANSIONS.iter().find(|(ligature, _)| *ligature == c) {
            for letter in letters.chars() {
                let (primary, _) = table.weights.get(&letter).copied().unwrap_or_default();
                key.push(primary, 0, 1);
            }
            continue;
        }
        match table.weights.get(&c) {
            Some(&(primary, accent)) => key.push(primary, accent, 0),
            None if c.is_alphanumeric() => {
                let (c, variant) = fold(c);
                key.push(table.others + (script(c) << 24) + c as u64, 0, variant);
            }
            None => key.push(table.symbols + 1 + c as u64, 0, 0),
        }
    }
    key
}

impl SortKey {
    fn push(&mut self, primary: u64, secondary: u16, tertiary: u8) {
        self.primary.push(primary);
        self.secondary.push(secondary);
        self.tertiary.push(tertiary);
    }
}

/// Characters ICU gives no weight at all: controls, soft hyphen, zero-width and format marks.
fn ignorable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// Letters that sort as another, just after it: katakana as the hiragana of the same sound,
/// the micro sign as Greek mu.
fn fold(c: char) -> (char, u8) {
    match c {
        '\u{30a1}'..='\u{30f6}' => (char::from_u32(c as u32 - 0x60).unwrap_or(c), 1),
        '\u{b5}' => ('\u{3bc}', 1),
        _ => (c, 0),
    }
}

/// CLDR's order of scripts after Latin (letters outside the table and these scripts come first).
fn script(c: char) -> u64 {
    match c as u32 {
        0x370..=0x3ff | 0x1f00..=0x1fff => 1,
        0x400..=0x52f => 2,
        0x10a0..=0x10ff => 3,
        0x530..=0x58f => 4,
        0x590..=0x5ff => 5,
        0x600..=0x6ff | 0x750..=0x77f => 6,
        0x900..=0xdff => 7,
        0xe00..=0xeff => 8,
        0x1100..=0x11ff | 0x3130..=0x318f | 0xac00..=0xd7af => 9,
        0x3040..=0x30ff => 10,
        0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0x20000.. => 11,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(names: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
        names.sort_by_cached_key(|n| sort_key(n));
        names
    }

    #[test]
    fn punctuation_sorts_before_digits_and_letters_in_cldr_order() {
        assert_eq!(
            sorted(&["ab", "a0", "a.b", "a-b", "a_b", "a b", "a", "_a", ".a", "-a"]),
            ["_a", "-a", ".a", "a", "a b", "a_b", "a-b", "a.b", "a0", "ab"]
        );
    }

    #[test]
    fn accents_and_ligatures_count_after_the_letters() {
        assert_eq!(
            sorted(&[
                "resumf", "résumé", "resume", "eb", "éa", "af", "æ", "ae", "st", "ß", "ss"
            ]),
            ["ae", "æ", "af", "éa", "eb", "resume", "résumé", "resumf", "ss", "ß", "st"]
        );
    }

    #[test]
    fn other_scripts_and_symbols_take_their_places() {
        assert_eq!(
            sorted(&["中", "я", "ω", "z", "1", "$", "😀", "~"]),
            ["~", "😀", "$", "1", "z", "ω", "я", "中"]
        );
    }
}
