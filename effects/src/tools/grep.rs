//! The `grep` tool: ripgrep's search (Pi runs `rg --json --hidden`) done with ripgrep's own
//! crates. The walk honours `.gitignore` (inside a git repository, as rg does), `.ignore` and
//! `.rgignore`, includes hidden files, and skips binary files found by the walk; a file named
//! directly is always searched. Files are searched in path order (component by component, as
//! `rg --sort path` does), so the matches kept under the limit are the same from run to run.
//!
//! Pi prints the match lines from rg's events and, when context is asked for, re-reads each file
//! and prints the lines around every match; both are reproduced here, quirks included
//! (overlapping contexts repeat lines, a lone `\r` counts as a line break in context).

use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::{DirEntry, WalkBuilder};
use pi_core::event::ToolResult;
use pi_core::tools::truncate::{truncate_line, GREP_MAX_LINE_LENGTH};
use serde_json::Value;

use super::listing::{
    js_text, listing_result, listing_root, run_blocking, text_result, LimitReached,
};
use super::{num_arg, str_arg, ToolContext, ToolEnv, OPERATION_ABORTED};

/// Matches shown when the call gives no limit.
const DEFAULT_LIMIT: f64 = 100.0;

/// The call's arguments as Pi reads them.
struct Query {
    pattern: String,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    /// Lines around each match (Pi: `context > 0 ? context : 0`, not rounded).
    context: f64,
    /// Pi's `Math.max(1, limit ?? 100)`.
    limit: f64,
}

impl Query {
    fn from_args(args: &Value) -> Self {
        let flag = |key| args.get(key).and_then(Value::as_bool).unwrap_or(false);
        Query {
            pattern: str_arg(args, "pattern").unwrap_or_default().to_owned(),
            glob: str_arg(args, "glob")
                .filter(|glob| !glob.is_empty())
                .map(str::to_owned),
            ignore_case: flag("ignoreCase"),
            literal: flag("literal"),
            context: num_arg(args, "context").filter(|c| *c > 0.0).unwrap_or(0.0),
            limit: num_arg(args, "limit").unwrap_or(DEFAULT_LIMIT).max(1.0),
        }
    }
}

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let root = listing_root(env, args, cx)?;
    let query = Query::from_args(args);
    let cwd = env.cwd.clone();
    run_blocking(cx, move |stop| search(&cwd, &root, &query, stop)).await
}

/// The matching lines of one file, as rg reported them.
struct FileMatches {
    /// rg's path text (the search root joined with the walk's relative path).
    path: String,
    lines: Vec<(u64, Vec<u8>)>,
}

/// What the search found before it ended or stopped at the limit.
#[derive(Default)]
struct Found {
    files: Vec<FileMatches>,
    /// Matches seen, including those in files whose path rg cannot print as text.
    count: usize,
    limit_reached: bool,
}

fn search(cwd: &Path, root: &Path, query: &Query, stop: &AtomicBool) -> Result<ToolResult, String> {
    let is_dir = fs::metadata(root)
        .map_err(|_| format!("Path not found: {}", root.display()))?
        .is_dir();
    // Pi 1.5 runs rg inside a searched folder, so that its glob is relative to that folder.
    let glob_root = if is_dir { root } else { cwd };
    let glob = query.glob.as_deref().map(without_leading_dot_slash);
    let walk = walker(glob_root, root, glob.as_deref())?;
    let matcher = matcher(query)?;
    let found = collect(walk, &matcher, query.limit, stop)?;
    if found.count == 0 {
        return Ok(text_result("No matches found".into(), None));
    }
    let mut out = Vec::new();
    let mut lines_truncated = false;
    for file in &found.files {
        lines_truncated |= print_file(root, is_dir, file, query.context, &mut out);
    }
    let limit = found.limit_reached.then(|| LimitReached {
        notice: format!(
            "{} matches limit reached. Use limit={} for more, or refine pattern",
            js_text(query.limit),
            js_text(query.limit * 2.0)
        ),
        key: "matchLimitReached",
        limit: query.limit,
    });
    let lines_truncated = lines_truncated.then(|| {
        format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        )
    });
    Ok(listing_result(&out, limit, lines_truncated))
}

/// Searches the walk's files in order until `limit` matches. Errors (unreadable files and
/// directories) fail the call as rg's exit code 2 fails Pi's, unless the limit was reached
/// first (Pi kills rg then and ignores its errors).
fn collect(
    walk: ignore::Walk,
    matcher: &RegexMatcher,
    limit: f64,
    stop: &AtomicBool,
) -> Result<Found, String> {
    let mut searcher = SearcherBuilder::new().line_number(true).build();
    let mut found = Found::default();
    let mut errors = Vec::new();
    for entry in walk {
        if stop.load(Ordering::Relaxed) {
            return Err(OPERATION_ABORTED.into());
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                errors.push(format!("rg: {err}"));
                continue;
            }
        };
        let explicit = entry.depth() == 0 && !leads_to_dir(&entry);
        if !explicit && !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        searcher.set_binary_detection(if explicit {
            BinaryDetection::convert(0)
        } else {
            BinaryDetection::quit(0)
        });
        let mut sink = Collect {
            lines: Vec::new(),
            count: &mut found.count,
            limit,
            limit_reached: &mut found.limit_reached,
            stop,
        };
        let path = entry.path();
        // rg memory-maps a file named directly, and binary data in a mapped file is reported
        // as it is; searching the whole file as one slice gives the same lines.
        let searched = if explicit {
            fs::read(path).and_then(|bytes| searcher.search_slice(matcher, &bytes, &mut sink))
        } else {
            searcher.search_path(matcher, path, &mut sink)
        };
        if let Err(err) = searched {
            errors.push(format!("rg: {}: {err}", path.display()));
        }
        let lines = sink.lines;
        // rg reports a path that is not UTF-8 as bytes, which Pi counts but cannot print.
        if let (false, Some(path)) = (lines.is_empty(), path.to_str()) {
            found.files.push(FileMatches {
                path: path.to_owned(),
                lines,
            });
        }
        if found.limit_reached {
            return Ok(found);
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors.join("\n"))
    }
}

/// Appends one file's match lines as Pi prints them: from rg's line without context, else
/// from the re-read file. True when a line was cut to the line length.
fn print_file(
    root: &Path,
    is_dir: bool,
    file: &FileMatches,
    context: f64,
    out: &mut Vec<String>,
) -> bool {
    let shown = display_path(root, is_dir, &file.path);
    let mut text: Option<Vec<String>> = None;
    let mut cut_any = false;
    for (number, bytes) in &file.lines {
        match std::str::from_utf8(bytes) {
            Ok(line) if context == 0.0 => {
                let (line, cut) = truncate_line(&sanitize(line), GREP_MAX_LINE_LENGTH);
                cut_any |= cut;
                out.push(format!("{shown}:{number}: {line}"));
            }
            _ => {
                let text = text.get_or_insert_with(|| file_lines(Path::new(&file.path)));
                let block = Block {
                    shown: &shown,
                    number: *number as f64,
                    context,
                };
                cut_any |= block.write(text, out);
            }
        }
    }
    cut_any
}

/// rg's walk: ignore files as rg reads them, hidden files included, `--glob` relative to the
/// folder rg runs in (`cwd`), entries sorted by name within each directory.
fn walker(cwd: &Path, root: &Path, glob: Option<&str>) -> Result<ignore::Walk, String> {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .follow_links(false)
        .current_dir(cwd)
        .sort_by_file_name(|a, b| a.cmp(b))
        .add_custom_ignore_filename(".rgignore");
    if let Some(glob) = glob {
        let mut overrides = OverrideBuilder::new(cwd);
        overrides.add(glob).map_err(|err| format!("rg: {err}"))?;
        builder.overrides(overrides.build().map_err(|err| format!("rg: {err}"))?);
    }
    Ok(builder.build())
}

/// Pi 1.5 drops a glob's leading `./` (rg never matches it; `!` still negates).
fn without_leading_dot_slash(glob: &str) -> String {
    let (negation, mut rest) = match glob.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", glob),
    };
    while let Some(stripped) = rest.strip_prefix("./") {
        rest = stripped;
    }
    format!("{negation}{rest}")
}

/// rg's regex configuration for a single pattern, with its error texts.
fn matcher(query: &Query) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .fixed_strings(query.literal)
        .case_insensitive(query.ignore_case)
        .line_terminator(Some(b'\n'))
        .dot_matches_new_line(false)
        .ban_byte(Some(0))
        .build_many(&[query.pattern.as_str()])
        .map_err(|err| format!("rg: {}", with_hints(err.to_string())))
}

/// The hints rg adds to two regex errors.
fn with_hints(message: String) -> String {
    if message.contains("the literal") && message.contains("not allowed") {
        format!(
            "{message}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."
        )
    } else if message.contains("pattern contains \"\\0\"") {
        format!(
            "{message}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\nbinary detection is enabled and matching a NUL byte is impossible."
        )
    } else {
        message
    }
}

/// Whether a walk entry is a directory, following a symlink (rg never searches those).
fn leads_to_dir(entry: &DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_dir() => true,
        Some(_) => entry.path_is_symlink() && entry.path().is_dir(),
        None => false,
    }
}

/// Collects one file's matching lines until the overall limit is reached.
struct Collect<'a> {
    lines: Vec<(u64, Vec<u8>)>,
    count: &'a mut usize,
    limit: f64,
    limit_reached: &'a mut bool,
    stop: &'a AtomicBool,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        *self.count += 1;
        self.lines
            .push((found.line_number().unwrap_or(0), found.bytes().to_vec()));
        if *self.count as f64 >= self.limit {
            *self.limit_reached = true;
            return Ok(false);
        }
        Ok(!self.stop.load(Ordering::Relaxed))
    }
}

/// How Pi names a file: relative to the searched directory, else by its base name.
fn display_path(root: &Path, is_dir: bool, path: &str) -> String {
    let path = Path::new(path);
    if is_dir {
        if let Ok(relative) = path.strip_prefix(root) {
            let relative: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            let relative = relative.join("/");
            if !relative.is_empty() && !relative.starts_with("..") {
                return relative;
            }
        }
    }
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A match line from rg's event: line ending and every `\r` removed.
fn sanitize(line: &str) -> String {
    let line = line.replace("\r\n", "\n").replace('\r', "");
    line.strip_suffix('\n').unwrap_or(&line).to_owned()
}

/// The file's lines as Pi re-reads them for context (Node's lossy UTF-8, `\r\n` and `\r` as
/// breaks); empty when it cannot be read.
fn file_lines(path: &Path) -> Vec<String> {
    let Ok(bytes) = fs::read(path) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .split('\n')
        .map(str::to_owned)
        .collect()
}

/// One match printed from the re-read file, with its context lines.
struct Block<'a> {
    shown: &'a str,
    number: f64,
    context: f64,
}

impl Block<'_> {
    /// Appends the block's lines; true when one was cut to the line length.
    fn write(&self, lines: &[String], out: &mut Vec<String>) -> bool {
        let Block {
            shown,
            number,
            context,
        } = *self;
        if lines.is_empty() {
            out.push(format!(
                "{shown}:{}: (unable to read file)",
                js_text(number)
            ));
            return false;
        }
        let (start, end) = if context > 0.0 {
            (
                (number - context).max(1.0),
                (lines.len() as f64).min(number + context),
            )
        } else {
            (number, number)
        };
        let mut cut_any = false;
        let mut current = start;
        while current <= end {
            // A fractional context gives fractional line numbers, which name no line in Pi.
            let text = if current.fract() == 0.0 {
                (current as usize)
                    .checked_sub(1)
                    .and_then(|index| lines.get(index))
                    .map_or("", String::as_str)
            } else {
                ""
            };
            let (text, cut) = truncate_line(&text.replace('\r', ""), GREP_MAX_LINE_LENGTH);
            cut_any |= cut;
            let separator = if current == number { ':' } else { '-' };
            out.push(format!(
                "{shown}{separator}{}{separator} {text}",
                js_text(current)
            ));
            current += 1.0;
        }
        cut_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_outside_the_root_or_dotted_get_their_base_name() {
        let root = Path::new("/r");
        assert_eq!(display_path(root, true, "/r/a/b.txt"), "a/b.txt");
        assert_eq!(display_path(root, true, "/r/..x/b.txt"), "b.txt");
        assert_eq!(display_path(root, false, "/r/a/b.txt"), "b.txt");
    }

    #[test]
    fn fractional_context_prints_fractional_line_numbers() {
        let lines: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let mut out = Vec::new();
        let block = Block {
            shown: "f",
            number: 3.0,
            context: 1.5,
        };
        block.write(&lines, &mut out);
        assert_eq!(out, ["f-1.5- ", "f-2.5- ", "f-3.5- "]);
    }
}
