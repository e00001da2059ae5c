//! The `find` tool: fd's glob search (Pi runs `fd --glob --hidden --no-require-git`) done with
//! the crates fd is built on. The walk honours `.gitignore` everywhere (a git repository is not
//! required), `.ignore`, `.fdignore` and fd's global ignore file, and includes hidden files. A
//! pattern without `/` matches file names; with `/` it matches the whole path (Pi prefixes `**/`),
//! and it is case-insensitive unless it has an uppercase letter (fd's smart case). Entries are
//! visited in path order (component by component), so the results kept under the limit are the
//! same from run to run.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use pi_core::event::ToolResult;
use serde_json::Value;

use super::listing::{
    effective_limit, js_text, listing_result, listing_root, run_blocking, text_result, LimitReached,
};
use super::{str_arg, ToolContext, ToolEnv, OPERATION_ABORTED};

/// Results listed when the call gives no limit.
const DEFAULT_LIMIT: f64 = 1000.0;

/// The call as Pi hands it to fd.
struct Search {
    pattern: String,
    limit: f64,
    root: PathBuf,
    cwd: PathBuf,
    global_ignore: Option<PathBuf>,
}

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let root = listing_root(env, args, cx)?;
    let search = Search {
        pattern: str_arg(args, "pattern").unwrap_or_default().to_owned(),
        limit: effective_limit(args, DEFAULT_LIMIT),
        root,
        cwd: env.cwd.clone(),
        global_ignore: global_ignore_file(&env.home),
    };
    run_blocking(cx, move |stop| find(&search, stop)).await
}

fn find(search: &Search, stop: &AtomicBool) -> Result<ToolResult, String> {
    let root = &search.root;
    if !root.is_dir() {
        return Err(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            root.display()
        ));
    }
    let (full_path, matcher) = matcher(&search.pattern)?;
    // Pi 1.5 asks fd for one result past the limit, which shows that the limit cut the list.
    let max_results = search.limit + 1.0;
    let mut printed = String::new();
    let mut count = 0usize;
    for entry in walker(search).flatten() {
        if stop.load(Ordering::Relaxed) {
            return Err(OPERATION_ABORTED.into());
        }
        if entry.depth() == 0 {
            continue;
        }
        let path = entry.path();
        let subject = if full_path {
            path.as_os_str()
        } else {
            entry.file_name()
        };
        if !matcher.as_ref().is_none_or(|glob| glob.is_match(subject)) {
            continue;
        }
        printed.push_str(&path.to_string_lossy());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            printed.push('/');
        }
        printed.push('\n');
        count += 1;
        if count as f64 >= max_results {
            break;
        }
    }
    let mut relativized: Vec<String> = readline_lines(&printed)
        .iter()
        .map(|line| js_trim(line.strip_suffix('\r').unwrap_or(line)))
        .filter(|line| !line.is_empty())
        .map(|line| relativize(root, line))
        .collect();
    if relativized.is_empty() {
        return Ok(text_result("No files found matching pattern".into(), None));
    }
    let limit = search.limit;
    let limit_reached = (relativized.len() as f64 > limit).then(|| {
        relativized.truncate(limit as usize);
        LimitReached {
            notice: format!(
                "{} results limit reached. Use limit={} for more, or refine pattern",
                js_text(limit),
                js_text(limit * 2.0)
            ),
            key: "resultLimitReached",
            limit,
        }
    });
    Ok(listing_result(&relativized, limit_reached, None))
}

/// Pi's pattern handling and fd's glob: whether it matches whole paths, and the matcher (none
/// for an empty pattern, which fd treats as "everything").
fn matcher(pattern: &str) -> Result<(bool, Option<GlobMatcher>), String> {
    let full_path = pattern.contains('/');
    let pattern =
        if full_path && !pattern.starts_with('/') && !pattern.starts_with("**/") && pattern != "**"
        {
            format!("**/{pattern}")
        } else {
            pattern.to_owned()
        };
    if pattern.is_empty() {
        return Ok((full_path, None));
    }
    let glob = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .case_insensitive(!pattern.chars().any(char::is_uppercase))
        .build()
        .map_err(|err| format!("[fd error]: {err}"))?;
    Ok((full_path, Some(glob.compile_matcher())))
}

/// fd's walk with Pi's flags, sorted by name within each directory.
fn walker(search: &Search) -> ignore::Walk {
    let mut builder = WalkBuilder::new(&search.root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .current_dir(&search.cwd)
        .sort_by_file_name(|a, b| a.cmp(b))
        .add_custom_ignore_filename(".fdignore");
    if let Some(file) = &search.global_ignore {
        // fd goes on without a malformed global ignore file's bad lines, as here.
        let _ = builder.add_ignore(file);
    }
    builder.build()
}

/// fd's global ignore file (`$XDG_CONFIG_HOME/fd/ignore`, else `~/.config/fd/ignore`), if any.
fn global_ignore_file(home: &Path) -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| home.join(".config"));
    Some(config.join("fd").join("ignore")).filter(|file| file.is_file())
}

/// The lines Node's readline yields for fd's output (`\n`, `\r\n` and `\r` end a line).
fn readline_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(&rest[..end]);
        let skip = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + skip..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    lines
}

/// JavaScript's `trim` (Unicode spaces and line breaks, and U+FEFF; not U+0085).
fn js_trim(text: &str) -> &str {
    text.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}')
}

/// Pi 1.5's `relativizeFindResultPath`: an absolute fd line relative to the search path (Node's
/// `path.relative`), any other line (a piece of a name broken at a line break) as it is; a
/// trailing `/` is kept.
fn relativize(root: &Path, line: &str) -> String {
    let mut relative = if line.starts_with('/') {
        node_relative(root, Path::new(line))
    } else {
        line.to_owned()
    };
    if line.ends_with('/') && !relative.ends_with('/') {
        relative.push('/');
    }
    relative
}

/// Node's `path.relative` between two absolute paths.
fn node_relative(from: &Path, to: &Path) -> String {
    let normal = |path: &Path| {
        let mut parts: Vec<String> = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (from, to) = (normal(from), normal(to));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts = vec!["..".to_owned(); from.len() - common];
    parts.extend(to[common..].iter().cloned());
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_break_as_readline_breaks_them() {
        assert_eq!(readline_lines("a\nb\r\nc\rd\n"), ["a", "b", "c", "d"]);
        assert_eq!(relativize(Path::new("/r"), "/r/a/b/"), "a/b/");
        assert_eq!(relativize(Path::new("/"), "/bin/"), "bin/");
        assert_eq!(relativize(Path::new("/r/s"), "/r/x"), "../x");
        assert_eq!(relativize(Path::new("/r/s"), "x"), "x");
    }
}
