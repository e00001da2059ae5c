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
    js_text, listing_result, listing_root, run_blocking, text_result, LimitReached,
};
use super::{num_arg, str_arg, ToolContext, ToolEnv, OPERATION_ABORTED};

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
        limit: num_arg(args, "limit").unwrap_or(DEFAULT_LIMIT),
        root,
        cwd: env.cwd.clone(),
        global_ignore: global_ignore_file(&env.home),
    };
    run_blocking(cx, move |stop| find(&search, stop)).await
}

fn find(search: &Search, stop: &AtomicBool) -> Result<ToolResult, String> {
    let max_results = max_results(search.limit)?;
    let root = &search.root;
    if !root.is_dir() {
        return Err(format!(
            "[fd error]: Search path '{}' is not a directory.\n[fd error]: No valid search paths given.",
            root.display()
        ));
    }
    let (full_path, matcher) = matcher(&search.pattern)?;
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
        if max_results.is_some_and(|max| count >= max) {
            break;
        }
    }
    let lines = readline_lines(&printed);
    if lines.join("\n").is_empty() {
        return Ok(text_result("No files found matching pattern".into(), None));
    }
    let root_text = root.to_string_lossy();
    let relativized: Vec<String> = lines
        .iter()
        .map(|line| js_trim(line.strip_suffix('\r').unwrap_or(line)))
        .filter(|line| !line.is_empty())
        .map(|line| relativize(&root_text, &search.cwd, line))
        .collect();
    let limit = search.limit;
    let limit_reached = (relativized.len() as f64 >= limit).then(|| LimitReached {
        notice: format!(
            "{} results limit reached. Use limit={} for more, or refine pattern",
            js_text(limit),
            js_text(limit * 2.0)
        ),
        key: "resultLimitReached",
        limit,
    });
    Ok(listing_result(&relativized, limit_reached, None))
}

/// fd's `--max-results` as it parses `String(limit)`: 0 means no limit, and anything but a
/// non-negative integer is refused with clap's error text (Pi throws it).
fn max_results(limit: f64) -> Result<Option<usize>, String> {
    let text = js_text(limit);
    if let Some(rest) = text.strip_prefix('-') {
        // clap reads a negative number as short flags; fd has `-0` and `-1`.
        return Err(match rest.chars().next() {
            Some('0' | '1') => {
                "error: a value is required for '--max-results <count>' but none was supplied\n\nFor more information, try '--help'.".to_owned()
            }
            first => {
                let flag = first.map(String::from).unwrap_or_default();
                format!(
                    "error: unexpected argument '-{flag}' found\n\n  tip: to pass '-{flag}' as a value, use '-- -{flag}'\n\nUsage: fd [OPTIONS] [pattern] [path]...\n\nFor more information, try '--help'."
                )
            }
        });
    }
    match text.parse::<usize>() {
        Ok(0) => Ok(None),
        Ok(max) => Ok(Some(max)),
        Err(err) => Err(format!(
            "error: invalid value '{text}' for '--max-results <count>': {err}\n\nFor more information, try '--help'."
        )),
    }
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

/// Pi's relative form of an fd line: the text after the search path and its separator, else
/// Node's `path.relative` (for pieces of names broken at a line break); a trailing `/` is kept.
fn relativize(root: &str, cwd: &Path, line: &str) -> String {
    let mut relative = match line.strip_prefix(root) {
        Some(rest) => {
            let mut chars = rest.chars();
            chars.next();
            chars.as_str().to_owned()
        }
        None => node_relative(Path::new(root), &cwd.join(line)),
    };
    if (line.ends_with('/') || line.ends_with('\\')) && !relative.ends_with('/') {
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
    fn limits_fd_refuses_give_clap_errors() {
        assert_eq!(max_results(0.0), Ok(None));
        assert_eq!(max_results(7.0), Ok(Some(7)));
        let help = "\n\nFor more information, try '--help'.";
        assert_eq!(
            max_results(2.5),
            Err(format!(
                "error: invalid value '2.5' for '--max-results <count>': invalid digit found in string{help}"
            ))
        );
        assert_eq!(
            max_results(1e20),
            Err(format!(
                "error: invalid value '100000000000000000000' for '--max-results <count>': number too large to fit in target type{help}"
            ))
        );
        assert_eq!(
            max_results(-3.0),
            Err(format!(
                "error: unexpected argument '-3' found\n\n  tip: to pass '-3' as a value, use '-- -3'\n\nUsage: fd [OPTIONS] [pattern] [path]...{help}"
            ))
        );
        assert_eq!(
            max_results(-15.0),
            Err(format!(
                "error: a value is required for '--max-results <count>' but none was supplied{help}"
            ))
        );
    }

    #[test]
    fn lines_break_as_readline_breaks_them() {
        assert_eq!(readline_lines("a\nb\r\nc\rd\n"), ["a", "b", "c", "d"]);
        assert_eq!(relativize("/r", Path::new("/"), "/r/a/b/"), "a/b/");
        assert_eq!(relativize("/", Path::new("/"), "/bin/"), "in/");
        assert_eq!(relativize("/r/s", Path::new("/r"), "x"), "../x");
    }
}
