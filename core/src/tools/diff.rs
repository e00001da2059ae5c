//! The edit tool's diff (`generateDiffString` of Pi's `edit-diff.ts`) over a line diff that
//! reproduces the `diff` package's `diffLines` (jsdiff 8): Myers' algorithm with jsdiff's
//! pruned diagonals and tie-breaking, so that among equally short diffs the same one is chosen
//! and the numbered lines the model sees are the original's.

/// One run of the line diff: lines common to both texts, added in the new one or removed from
/// the old one (jsdiff's change object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The lines of the run, each with its line break (`\n` or `\r\n`) when it had one.
    pub value: String,
    /// How many lines the run has.
    pub count: usize,
    pub added: bool,
    pub removed: bool,
}

/// The edit tool's `details`: the numbered diff and where the new file first differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffString {
    pub diff: String,
    /// 1-based line of the new text at the first change; `None` when the texts are equal.
    pub first_changed_line: Option<usize>,
}

/// Context lines Pi shows around a change.
pub const DEFAULT_CONTEXT_LINES: usize = 4;

/// jsdiff's line tokens: each line with its terminator; a final empty line is not a token.
fn tokenize(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A node of jsdiff's backwards-linked list of runs.
#[derive(Clone, Copy, Debug)]
struct Component {
    count: usize,
    added: bool,
    removed: bool,
    previous: Option<usize>,
}

/// The furthest point reached on one diagonal, and the runs that led there.
#[derive(Clone, Copy, Debug)]
struct PathHead {
    old_pos: i64,
    last: Option<usize>,
}

struct Search<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    components: Vec<Component>,
}

impl Search<'_> {
    fn push(&mut self, component: Component) -> Option<usize> {
        self.components.push(component);
        Some(self.components.len() - 1)
    }

    /// One more added or removed line after `path`, merged into its last run when that run is
    /// of the same kind (a new node: paths share their history).
    fn add_to_path(&mut self, path: PathHead, added: bool, removed: bool, inc: i64) -> PathHead {
        let last = path
            .last
            .map(|index| self.components[index])
            .filter(|last| last.added == added && last.removed == removed);
        let component = match last {
            Some(last) => Component {
                count: last.count + 1,
                added,
                removed,
                previous: last.previous,
            },
            None => Component {
                count: 1,
                added,
                removed,
                previous: path.last,
            },
        };
        PathHead {
            old_pos: path.old_pos + inc,
            last: self.push(component),
        }
    }

    /// Follows the diagonal while lines are equal; returns the new position.
    fn extract_common(&mut self, path: &mut PathHead, diagonal: i64) -> i64 {
        let (old_len, new_len) = (self.old.len() as i64, self.new.len() as i64);
        let mut old_pos = path.old_pos;
        let mut new_pos = old_pos - diagonal;
        let mut common = 0;
        while new_pos + 1 < new_len
            && old_pos + 1 < old_len
            && self.old[(old_pos + 1) as usize] == self.new[(new_pos + 1) as usize]
        {
            new_pos += 1;
            old_pos += 1;
            common += 1;
        }
        if common > 0 {
            path.last = self.push(Component {
                count: common,
                added: false,
                removed: false,
                previous: path.last,
            });
        }
        path.old_pos = old_pos;
        new_pos
    }

    fn build_values(&self, last: Option<usize>) -> Vec<Change> {
        let mut chain = Vec::new();
        let mut next = last;
        while let Some(index) = next {
            chain.push(self.components[index]);
            next = self.components[index].previous;
        }
        chain.reverse();
        let (mut old_pos, mut new_pos) = (0, 0);
        chain
            .into_iter()
            .map(|component| {
                let value = if component.removed {
                    let value = self.old[old_pos..old_pos + component.count].concat();
                    old_pos += component.count;
                    value
                } else {
                    let value = self.new[new_pos..new_pos + component.count].concat();
                    new_pos += component.count;
                    if !component.added {
                        old_pos += component.count;
                    }
                    value
                };
                Change {
                    value,
                    count: component.count,
                    added: component.added,
                    removed: component.removed,
                }
            })
            .collect()
    }
}

/// The `diff` package's `diffLines(old, new)` with default options.
pub fn diff_lines(old: &str, new: &str) -> Vec<Change> {
    let mut search = Search {
        old: tokenize(old),
        new: tokenize(new),
        components: Vec::new(),
    };
    let (old_len, new_len) = (search.old.len() as i64, search.new.len() as i64);
    let max_edit_length = old_len + new_len;
    let offset = max_edit_length + 2;
    let index = |diagonal: i64| (diagonal + offset) as usize;
    let mut best: Vec<Option<PathHead>> = vec![None; (2 * offset + 1) as usize];

    let mut start = PathHead {
        old_pos: -1,
        last: None,
    };
    let new_pos = search.extract_common(&mut start, 0);
    if start.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
        return search.build_values(start.last);
    }
    best[index(0)] = Some(start);

    let (mut min_diagonal, mut max_diagonal) = (i64::MIN, i64::MAX);
    let mut edit_length = 1;
    while edit_length <= max_edit_length {
        let mut diagonal = min_diagonal.max(-edit_length);
        while diagonal <= max_diagonal.min(edit_length) {
            let remove_path = best[index(diagonal - 1)].take();
            let add_path = best[index(diagonal + 1)];
            let can_add = add_path.is_some_and(|add| {
                let add_new_pos = add.old_pos - diagonal;
                0 <= add_new_pos && add_new_pos < new_len
            });
            let can_remove = remove_path.is_some_and(|remove| remove.old_pos + 1 < old_len);
            let mut base = match (add_path, remove_path) {
                (Some(add), Some(remove))
                    if can_add && (!can_remove || remove.old_pos < add.old_pos) =>
                {
                    search.add_to_path(add, true, false, 0)
                }
                (Some(add), None) if can_add => search.add_to_path(add, true, false, 0),
                (_, Some(remove)) if can_remove => search.add_to_path(remove, false, true, 1),
                _ => {
                    best[index(diagonal)] = None;
                    diagonal += 2;
                    continue;
                }
            };
            let new_pos = search.extract_common(&mut base, diagonal);
            if base.old_pos + 1 >= old_len && new_pos + 1 >= new_len {
                return search.build_values(base.last);
            }
            best[index(diagonal)] = Some(base);
            if base.old_pos + 1 >= old_len {
                max_diagonal = max_diagonal.min(diagonal - 1);
            }
            if new_pos + 1 >= new_len {
                min_diagonal = min_diagonal.max(diagonal + 1);
            }
            diagonal += 2;
        }
        edit_length += 1;
    }
    Vec::new()
}

/// Pi's `generateDiffString(old, new, context)`: removed lines `-N text` (old numbering), added
/// lines `+N text` (new numbering), up to `context` unchanged lines ` N text` around each change
/// and ` <pad> ...` where unchanged lines are skipped; numbers right-aligned to the widest.
pub fn generate_diff_string(old: &str, new: &str, context: usize) -> DiffString {
    let parts = diff_lines(old, new);
    let max_line = old.split('\n').count().max(new.split('\n').count());
    let width = max_line.to_string().len();
    let mut out = Lines {
        lines: Vec::new(),
        width,
    };
    let (mut old_line, mut new_line) = (1usize, 1usize);
    let mut last_was_change = false;
    let mut first_changed_line = None;
    for (i, part) in parts.iter().enumerate() {
        let mut raw: Vec<&str> = part.value.split('\n').collect();
        if raw.last() == Some(&"") {
            raw.pop();
        }
        if part.added || part.removed {
            first_changed_line.get_or_insert(new_line);
            for line in raw {
                if part.added {
                    out.numbered('+', new_line, line);
                    new_line += 1;
                } else {
                    out.numbered('-', old_line, line);
                    old_line += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts
            .get(i + 1)
            .is_some_and(|next| next.added || next.removed);
        let (shown_before, shown_after) = match (last_was_change, next_is_change) {
            (true, true) if raw.len() <= context * 2 => (raw.len(), 0),
            (true, true) => (context, context),
            (true, false) => (context.min(raw.len()), 0),
            (false, true) => (0, context.min(raw.len())),
            (false, false) => (0, 0),
        };
        let skipped = raw.len() - shown_before - shown_after;
        for line in &raw[..shown_before] {
            out.numbered(' ', old_line, line);
            old_line += 1;
            new_line += 1;
        }
        let visible = last_was_change || next_is_change;
        if skipped > 0 && visible {
            out.ellipsis();
        }
        old_line += skipped;
        new_line += skipped;
        for line in &raw[raw.len() - shown_after..] {
            out.numbered(' ', old_line, line);
            old_line += 1;
            new_line += 1;
        }
        last_was_change = false;
    }
    DiffString {
        diff: out.lines.join("\n"),
        first_changed_line,
    }
}

/// Pi 1.5's `details.patch`: jsdiff's `structuredPatch(name, name, old, new)` with `context`
/// lines, written by `formatPatch` with file headers only (`--- name`, `+++ name`, then each
/// hunk's `@@ -a,b +c,d @@` and its lines, `\ No newline at end of file` after a last line
/// without one). Pi diffs windows around the replacements and shifts their hunks; its windows
/// keep 32 lines around each change, more than the context, so the whole texts give the same
/// hunks.
pub fn unified_patch(name: &str, old: &str, new: &str, context: usize) -> String {
    let changes = diff_lines(old, new);
    let mut parts: Vec<(Vec<&str>, bool, bool)> = changes
        .iter()
        .map(|change| (split_lines(&change.value), change.added, change.removed))
        .collect();
    // jsdiff appends an empty common part, so that the last hunk is closed like the others.
    parts.push((Vec::new(), false, false));
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut open: Option<Hunk> = None;
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for i in 0..parts.len() {
        let (lines, added, removed) = &parts[i];
        if *added || *removed {
            let hunk = open.get_or_insert_with(|| {
                let before: Vec<String> = match i.checked_sub(1) {
                    Some(previous) => {
                        let previous = &parts[previous].0;
                        previous[previous.len().saturating_sub(context)..]
                            .iter()
                            .map(|line| format!(" {line}"))
                            .collect()
                    }
                    None => Vec::new(),
                };
                Hunk {
                    old_start: old_line - before.len(),
                    new_start: new_line - before.len(),
                    old_lines: 0,
                    new_lines: 0,
                    lines: before,
                }
            });
            let sign = if *added { '+' } else { '-' };
            hunk.lines
                .extend(lines.iter().map(|line| format!("{sign}{line}")));
            if *added {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
            continue;
        }
        if let Some(mut hunk) = open.take() {
            if lines.len() <= context * 2 && i + 2 < parts.len() {
                hunk.lines
                    .extend(lines.iter().map(|line| format!(" {line}")));
                open = Some(hunk);
            } else {
                let shown = lines.len().min(context);
                hunk.lines
                    .extend(lines[..shown].iter().map(|line| format!(" {line}")));
                hunk.old_lines = old_line - hunk.old_start + shown;
                hunk.new_lines = new_line - hunk.new_start + shown;
                hunks.push(hunk);
            }
        }
        old_line += lines.len();
        new_line += lines.len();
    }
    let mut out = vec![format!("--- {name}"), format!("+++ {name}")];
    for hunk in hunks {
        // formatPatch names the line before an empty side.
        let old_start = hunk.old_start - usize::from(hunk.old_lines == 0);
        let new_start = hunk.new_start - usize::from(hunk.new_lines == 0);
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        for line in hunk.lines {
            match line.strip_suffix('\n') {
                Some(line) => out.push(line.to_owned()),
                None => {
                    out.push(line);
                    out.push("\\ No newline at end of file".to_owned());
                }
            }
        }
    }
    out.join("\n") + "\n"
}

/// One hunk of [`unified_patch`] while it is built; its lines keep their `\n`.
struct Hunk {
    old_start: usize,
    new_start: usize,
    old_lines: usize,
    new_lines: usize,
    lines: Vec<String>,
}

/// jsdiff's `splitLines`: each line with its `\n`, the last one without when the text has none.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

struct Lines {
    lines: Vec<String>,
    width: usize,
}

impl Lines {
    fn numbered(&mut self, sign: char, number: usize, text: &str) {
        let width = self.width;
        self.lines.push(format!("{sign}{number:>width$} {text}"));
    }

    fn ellipsis(&mut self) {
        self.lines
            .push(format!(" {:width$} ...", "", width = self.width));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_their_line_breaks() {
        assert_eq!(tokenize("a\r\nb\n\nc"), vec!["a\r\n", "b\n", "\n", "c"]);
        assert!(tokenize("").is_empty());
    }

    #[test]
    fn one_changed_line_in_the_middle() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n";
        let new = "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n";
        let result = generate_diff_string(old, new, DEFAULT_CONTEXT_LINES);
        assert_eq!(
            result.diff,
            "    ...\n  2 2\n  3 3\n  4 4\n  5 5\n- 6 6\n+ 6 six\n  7 7\n  8 8\n  9 9\n 10 10\n    ..."
        );
        assert_eq!(result.first_changed_line, Some(6));
    }

    #[test]
    fn equal_texts_have_no_changes() {
        let result = generate_diff_string("a\nb", "a\nb", DEFAULT_CONTEXT_LINES);
        assert_eq!(result.diff, "");
        assert_eq!(result.first_changed_line, None);
    }
}
