//! The text side of Pi's edit tool (`edit-diff.ts`): line endings, the fuzzy normalisation
//! (NFKC, trailing whitespace, typographic quotes, dashes and spaces), and applying several
//! replacements at once against the same original, with Pi's error texts.

use unicode_normalization::UnicodeNormalization;

/// `\r\n` when the first line break is one, else `\n`.
pub fn detect_line_ending(content: &str) -> &'static str {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) if crlf < lf => "\r\n",
        _ => "\n",
    }
}

/// Every `\r\n` and lone `\r` as `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// `\n` back to `ending`.
pub fn restore_line_endings(text: &str, ending: &str) -> String {
    if ending == "\r\n" {
        text.replace('\n', "\r\n")
    } else {
        text.to_owned()
    }
}

/// The text without a leading byte-order mark, and the mark if there was one.
pub fn strip_bom(content: &str) -> (&'static str, &str) {
    match content.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", content),
    }
}

/// JavaScript's whitespace for `trimEnd`: Unicode spaces, line terminators and U+FEFF, not U+0085.
fn is_js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// Pi's `normalizeForFuzzyMatch`.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc
        .split('\n')
        .map(|line| line.trim_end_matches(is_js_space))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Where `old_text` was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Byte offset in the searched text (the normalised one after a fuzzy match).
    pub index: usize,
    pub len: usize,
    pub fuzzy: bool,
}

/// Exact match first, then a match in fuzzy-normalised space.
pub fn fuzzy_find_text(content: &str, old_text: &str) -> Option<Found> {
    if let Some(index) = content.find(old_text) {
        return Some(Found {
            index,
            len: old_text.len(),
            fuzzy: false,
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    fuzzy_content.find(&fuzzy_old).map(|index| Found {
        index,
        len: fuzzy_old.len(),
        fuzzy: true,
    })
}

/// One replacement of an edit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    pub old_text: String,
    pub new_text: String,
}

/// Why the edits cannot be applied; `Display` is Pi's text. `edits` is how many the call had
/// (the wording differs for one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{}", if *edits == 1 { format!("oldText must not be empty in {path}.") } else { format!("edits[{index}].oldText must not be empty in {path}.") })]
    EmptyOldText {
        path: String,
        index: usize,
        edits: usize,
    },
    #[error("{}", if *edits == 1 { format!("Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines.") } else { format!("Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace and newlines.") })]
    NotFound {
        path: String,
        index: usize,
        edits: usize,
    },
    #[error("{}", if *edits == 1 { format!("Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique.") } else { format!("Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must be unique. Please provide more context to make it unique.") })]
    NotUnique {
        path: String,
        index: usize,
        edits: usize,
        occurrences: usize,
    },
    #[error("edits[{first}] and edits[{second}] overlap in {path}. Merge them into one edit or target disjoint regions.")]
    Overlap {
        path: String,
        first: usize,
        second: usize,
    },
    #[error("{}", if *edits == 1 { format!("No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.") } else { format!("No changes made to {path}. The replacements produced identical content.") })]
    NoChange { path: String, edits: usize },
}

/// The content the edits were matched in (fuzzy-normalised if any edit needed it) and the
/// result: Pi's `applyEditsToNormalizedContent` (content already LF-normalised).
pub fn apply_edits(
    content: &str,
    edits: &[Replacement],
    path: &str,
) -> Result<(String, String), EditError> {
    let count = edits.len();
    let edits: Vec<Replacement> = edits
        .iter()
        .map(|e| Replacement {
            old_text: normalize_to_lf(&e.old_text),
            new_text: normalize_to_lf(&e.new_text),
        })
        .collect();
    if let Some(index) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(EditError::EmptyOldText {
            path: path.to_owned(),
            index,
            edits: count,
        });
    }
    let any_fuzzy = edits
        .iter()
        .any(|e| fuzzy_find_text(content, &e.old_text).is_some_and(|f| f.fuzzy));
    let base = if any_fuzzy {
        normalize_for_fuzzy_match(content)
    } else {
        content.to_owned()
    };
    let fuzzy_base = normalize_for_fuzzy_match(&base);
    let mut matched = Vec::with_capacity(count);
    for (index, edit) in edits.iter().enumerate() {
        let Some(found) = fuzzy_find_text(&base, &edit.old_text) else {
            return Err(EditError::NotFound {
                path: path.to_owned(),
                index,
                edits: count,
            });
        };
        let pattern = normalize_for_fuzzy_match(&edit.old_text);
        // JavaScript splits on an empty pattern between UTF-16 units.
        let occurrences = if pattern.is_empty() {
            fuzzy_base.encode_utf16().count().saturating_sub(1)
        } else {
            fuzzy_base.matches(&pattern).count()
        };
        if occurrences > 1 {
            return Err(EditError::NotUnique {
                path: path.to_owned(),
                index,
                edits: count,
                occurrences,
            });
        }
        matched.push((index, found, &edit.new_text));
    }
    matched.sort_by_key(|(_, found, _)| found.index);
    for pair in matched.windows(2) {
        let ((first, previous, _), (second, current, _)) = (&pair[0], &pair[1]);
        if previous.index + previous.len > current.index {
            return Err(EditError::Overlap {
                path: path.to_owned(),
                first: *first,
                second: *second,
            });
        }
    }
    let mut result = base.clone();
    for (_, found, new_text) in matched.iter().rev() {
        result.replace_range(found.index..found.index + found.len, new_text);
    }
    if result == base {
        return Err(EditError::NoChange {
            path: path.to_owned(),
            edits: count,
        });
    }
    Ok((base, result))
}
