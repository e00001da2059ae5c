//! The text side of Pi's edit tool (`edit-diff.ts`): line endings, the fuzzy normalisation
//! (NFKC, trailing whitespace, typographic quotes, dashes and spaces), applying several
//! replacements at once against the same original, with Pi's error texts, and splicing the
//! result into the file as read, so that untouched lines keep their bytes (Pi 1.5.2).

use unicode_normalization::UnicodeNormalization;

/// Every `\r\n` and lone `\r` as `\n`.
pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
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
    /// The fuzzy-normalised text has another number of lines than the text (Pi refuses then
    /// rather than mix up lines).
    #[error(
        "Cannot preserve unchanged lines because the base content has a different line count."
    )]
    LineCount,
    #[error("Replacement range is outside the base content.")]
    OutsideContent,
}

/// A replacement of the byte range `index..index + len` of the LF text (Pi's `{matchIndex,
/// matchLength, newText}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Splice {
    pub index: usize,
    pub len: usize,
    pub new_text: String,
}

/// Edits applied: the LF text they were matched in, the result, and the replacements (sorted,
/// disjoint) that turn one into the other, for splicing into the file as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub base: String,
    pub result: String,
    pub replacements: Vec<Splice>,
}

/// Pi's `applyEditsToNormalizedContent` (content already LF-normalised). When an edit matched
/// only after fuzzy normalisation, the lines it touches are rewritten from the normalised text
/// and every other line keeps its own bytes.
pub fn apply_edits(content: &str, edits: &[Replacement], path: &str) -> Result<Applied, EditError> {
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
        matched.push((index, found, edit.new_text.clone()));
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
    let splices: Vec<Splice> = matched
        .into_iter()
        .map(|(_, found, new_text)| Splice {
            index: found.index,
            len: found.len,
            new_text,
        })
        .collect();
    let replacements = if any_fuzzy {
        widen_to_lines(content, &base, &splices)?
    } else {
        splices
    };
    let result = splice(content, &replacements, 0);
    if result == content {
        return Err(EditError::NoChange {
            path: path.to_owned(),
            edits: count,
        });
    }
    Ok(Applied {
        base: content.to_owned(),
        result,
        replacements,
    })
}

/// `content` (which starts at `offset` of the text the replacements index) with the sorted
/// replacements applied.
fn splice(content: &str, replacements: &[Splice], offset: usize) -> String {
    let mut result = content.to_owned();
    for r in replacements.iter().rev() {
        let at = r.index - offset;
        result.replace_range(at..at + r.len, &r.new_text);
    }
    result
}

/// Each line with its `\n` (the last one may have none), as byte ranges.
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, _) in content.match_indices('\n') {
        spans.push((start, i + 1));
        start = i + 1;
    }
    if start < content.len() {
        spans.push((start, content.len()));
    }
    spans
}

/// Replacements matched in `normalised` (the fuzzy view of `original`, line for line) turned
/// into replacements of `original`: each widened to the whole lines it touches, those lines
/// rewritten from the normalised text (Pi's `widenReplacementsToLines`).
fn widen_to_lines(
    original: &str,
    normalised: &str,
    replacements: &[Splice],
) -> Result<Vec<Splice>, EditError> {
    let original_lines = line_spans(original);
    let lines = line_spans(normalised);
    if original_lines.len() != lines.len() {
        return Err(EditError::LineCount);
    }
    // (first line, end line, replacements) per group of replacements sharing lines.
    let mut groups: Vec<(usize, usize, Vec<Splice>)> = Vec::new();
    for r in replacements {
        let first = lines
            .iter()
            .position(|&(start, end)| r.index >= start && r.index < end)
            .ok_or(EditError::OutsideContent)?;
        let mut last = first;
        while last < lines.len() && lines[last].1 < r.index + r.len {
            last += 1;
        }
        if last >= lines.len() {
            return Err(EditError::OutsideContent);
        }
        match groups.last_mut() {
            Some(group) if first < group.1 => {
                group.1 = group.1.max(last + 1);
                group.2.push(r.clone());
            }
            _ => groups.push((first, last + 1, vec![r.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, end, group)| {
            let (from, to) = (lines[first].0, lines[end - 1].1);
            let start = original_lines[first].0;
            Splice {
                index: start,
                len: original_lines[end - 1].1 - start,
                new_text: splice(&normalised[from..to], &group, from),
            }
        })
        .collect())
}

/// The replacements (made in `normalize_to_lf(original)`) applied to `original` itself: text
/// outside them keeps its bytes and line endings, and line breaks in a new text take the line
/// ending of the line the replaced range starts in (Pi 1.5.2's `applyReplacementsToOriginal`).
pub fn apply_to_original(original: &str, replacements: &[Splice]) -> String {
    // Only a CRLF changes length when normalised: the LF of the n-th CRLF (at p) is at p - n.
    let crlfs: Vec<usize> = original.match_indices("\r\n").map(|(i, _)| i).collect();
    let mut before = 0;
    let mut to_original = |offset: usize| {
        while before < crlfs.len() && crlfs[before] - before < offset {
            before += 1;
        }
        offset + before
    };
    let mut out = String::with_capacity(original.len());
    let mut position = 0;
    for r in replacements {
        let start = to_original(r.index);
        push(&mut out, &original[position..start]);
        let ending = line_ending_at(original, start);
        if ending == "\n" {
            push(&mut out, &r.new_text);
        } else {
            push(&mut out, &r.new_text.replace('\n', ending));
        }
        position = to_original(r.index + r.len);
    }
    push(&mut out, &original[position..]);
    out
}

/// Appends `part`; a CR before the seam and an LF after it would merge into one CRLF, so the
/// CR gets an LF of its own.
fn push(out: &mut String, part: &str) {
    if out.ends_with('\r') && part.starts_with('\n') {
        out.push('\n');
    }
    out.push_str(part);
}

/// The line ending of the line holding `offset`: its own, or the previous line's for an
/// unterminated last line; a lone CR counts only in a file without any LF.
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let bytes = content.as_bytes();
    let line_feed = bytes[offset.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| i + offset)
        .or_else(|| {
            bytes[..(offset + 1).min(bytes.len())]
                .iter()
                .rposition(|&b| b == b'\n')
        });
    match line_feed {
        None if content.contains('\r') => "\r",
        None => "\n",
        Some(lf) if lf > 0 && bytes[lf - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}
