//! The `grep` tool: ripgrep's search (Pi runs `rg --json --hidden`) done with ripgrep's own
//! crates. The walk honours `.gitignore` (inside a git repository, as rg does), `.ignore` and
//! `.rgignore`, includes hidden files, and skips binary files found by the walk; a file named
//! directly is always searched. Files are searched in path order (component by component, as
//! `rg --sort path` does), so the matches kept under the limit are the same from run to run.
//!
//! Pi 1.5 prints the lines of rg's events: the matches and, with `--context`, rg's own context
//! lines (merged where they overlap; a lone `\r` is content). Past the limit it keeps the last
//! match's trailing context and reports the limit only once a further match proves it cut.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::{DirEntry, WalkBuilder};
use pi_core::event::ToolResult;
use pi_core::tools::truncate::{truncate_line, GREP_MAX_LINE_LENGTH};
use serde_json::Value;

use super::listing::{
    effective_limit, js_text, listing_result, listing_root, run_blocking, text_result, LimitReached,
};
use super::{num_arg, str_arg, ToolContext, ToolEnv, OPERATION_ABORTED};

/// Matches shown when the call gives no limit.
const DEFAULT_LIMIT: f64 = 100.0;
/// JavaScript's `Number.MAX_SAFE_INTEGER`, Pi's cap on the context it passes to rg.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The call's arguments as Pi 1.5 reads them.
struct Query {
    pattern: String,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    /// Lines around each match: `context > 0 ? min(floor(context), MAX_SAFE_INTEGER) : 0`.
    context: u64,
    /// `Math.max(1, Math.floor(limit ?? 100))`.
    limit: f64,
}

impl Query {
    fn from_args(args: &Value) -> Self {
        let flag = |key| args.get(key).and_then(Value::as_bool).unwrap_or(false);
        let context = num_arg(args, "context")
            .filter(|c| *c > 0.0)
            .map_or(0.0, |c| c.floor().min(MAX_SAFE_INTEGER));
        Query {
            pattern: str_arg(args, "pattern").unwrap_or_default().to_owned(),
            glob: str_arg(args, "glob")
                .filter(|glob| !glob.is_empty())
                .map(str::to_owned),
            ignore_case: flag("ignoreCase"),
            literal: flag("literal"),
            context: context as u64,
            limit: effective_limit(args, DEFAULT_LIMIT),
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

/// One line of rg's events as Pi 1.5 prints it.
struct Line {
    /// rg's path text (the search root joined with the walk's relative path).
    path: String,
    number: u64,
    text: Vec<u8>,
    is_match: bool,
}

/// Pi 1.5's reading of rg's match and context events, across files.
#[derive(Default)]
struct Found {
    lines: Vec<Line>,
    /// Matches counted before the limit.
    count: usize,
    /// The limit's match was seen: only its trailing context is kept from here on.
    limit_hit: bool,
    /// The last line of the limit's match's trailing context.
    trailing_end: u64,
    /// A further match showed that the limit cut results off.
    limit_reached: bool,
    /// Pi killed rg: nothing more is read, and rg's errors are ignored.
    done: bool,
}

impl Found {
    /// Takes one event's line; false once Pi would stop reading (the search stops too).
    fn take(
        &mut self,
        query: &Query,
        path: &str,
        number: u64,
        text: &[u8],
        is_match: bool,
    ) -> bool {
        let line = |is_match| Line {
            path: path.to_owned(),
            number,
            text: text.to_vec(),
            is_match,
        };
        if !self.limit_hit {
            self.lines.push(line(is_match));
            if is_match {
                self.count += 1;
                if self.count as f64 >= query.limit {
                    self.limit_hit = true;
                    self.trailing_end = number.saturating_add(query.context);
                }
            }
            return true;
        }
        let last_file = self.lines.last().map(|l| l.path.as_str());
        let in_window = last_file == Some(path) && number <= self.trailing_end;
        // A match inside the last match's trailing context is shown as context.
        if in_window {
            self.lines.push(line(false));
        }
        self.limit_reached |= is_match;
        if self.limit_reached && !(in_window && number < self.trailing_end) {
            self.done = true;
        }
        !self.done
    }
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
    let found = collect(walk, &matcher, query, stop)?;
    if found.count == 0 {
        return Ok(text_result("No matches found".into(), None));
    }
    let mut lines_truncated = false;
    let out: Vec<String> = found
        .lines
        .iter()
        .map(|line| {
            let (text, cut) = print_line(root, is_dir, line);
            lines_truncated |= cut;
            text
        })
        .collect();
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

/// Searches the walk's files in order, as Pi reads rg's events, until Pi would kill rg.
/// Errors (unreadable files and directories) fail the call as rg's exit code 2 fails Pi's,
/// unless Pi killed rg first.
fn collect(
    walk: ignore::Walk,
    matcher: &RegexMatcher,
    query: &Query,
    stop: &AtomicBool,
) -> Result<Found, String> {
    let context = usize::try_from(query.context).unwrap_or(usize::MAX);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .build();
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
        let path = entry.path();
        let mut sink = Collect {
            // rg reports a path that is not UTF-8 as bytes, which Pi decodes lossily.
            path: path.to_string_lossy().into_owned(),
            found: &mut found,
            query,
            stop,
        };
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
        if found.done {
            return Ok(found);
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors.join("\n"))
    }
}

/// One event's line as Pi 1.5 prints it (`path:n: text` for a match, `path-n- text` for
/// context), and whether it was cut to the line length.
fn print_line(root: &Path, is_dir: bool, line: &Line) -> (String, bool) {
    let shown = display_path(root, is_dir, &line.path);
    let text = String::from_utf8_lossy(&line.text);
    let (text, cut) = truncate_line(without_terminator(&text), GREP_MAX_LINE_LENGTH);
    let number = line.number;
    let text = if line.is_match {
        format!("{shown}:{number}: {text}")
    } else {
        format!("{shown}-{number}- {text}")
    };
    (text, cut)
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

/// Hands one file's match and context lines to [`Found`].
struct Collect<'a> {
    path: String,
    found: &'a mut Found,
    query: &'a Query,
    stop: &'a AtomicBool,
}

impl Collect<'_> {
    fn take(&mut self, number: Option<u64>, text: &[u8], is_match: bool) -> bool {
        let number = number.unwrap_or(0);
        let more = self
            .found
            .take(self.query, &self.path, number, text, is_match);
        more && !self.stop.load(Ordering::Relaxed)
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        Ok(self.take(found.line_number(), found.bytes(), true))
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.take(line.line_number(), line.bytes(), false))
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

/// Pi 1.5's `replace(/\r?\n?$/, "")`: only the line terminator goes, a lone `\r` inside a
/// line is content.
fn without_terminator(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
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
    fn only_the_line_terminator_is_removed() {
        assert_eq!(without_terminator("a\rb\r\n"), "a\rb");
        assert_eq!(without_terminator("a\r"), "a");
        assert_eq!(without_terminator("a\n\n"), "a\n");
    }
}
