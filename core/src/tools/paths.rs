//! How tools turn the path a model gives into a file path (Pi's `path-utils.ts`): a leading `@`
//! is dropped, Unicode spaces become plain spaces, `~` is the home directory, and relative paths
//! resolve against the working directory. The read tool then tries the spellings macOS uses for
//! screenshots (narrow no-break space before AM/PM, NFD, curly apostrophe); which of those
//! exists is for the interpreter to find out, in the order given here. POSIX paths only.

use unicode_normalization::UnicodeNormalization;

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// The path with `@`, Unicode spaces and `~` handled (not yet resolved).
pub fn expand_path(path: &str, home: &str) -> String {
    let path = path.strip_prefix('@').unwrap_or(path);
    let normalized: String = path
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if normalized == "~" {
        return home.to_owned();
    }
    match normalized.strip_prefix("~/") {
        Some(rest) => format!("{home}/{rest}"),
        None => normalized,
    }
}

/// Node's `path.resolve(base, path)` for an absolute `base`: `path` joined to it (or alone when it
/// is absolute), with `.`, `..` and repeated or trailing slashes removed.
pub fn resolve_posix(base: &str, path: &str) -> String {
    let base = if path.starts_with('/') { "" } else { base };
    let mut parts: Vec<&str> = Vec::new();
    for segment in base.split('/').chain(path.split('/')) {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The file a tool works on: relative to `cwd`, and normalised (`.`, `..`, repeated slashes)
/// whether absolute or not, as Pi 1.5.2 resolves it (0.73.1 took an absolute path as written).
pub fn resolve_to_cwd(path: &str, cwd: &str, home: &str) -> String {
    resolve_posix(cwd, &expand_path(path, home))
}

/// ` AM.` / ` PM.` (any case) with a narrow no-break space, as macOS names screenshots.
fn screenshot_spelling(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(at) = rest.find(' ') {
        let after = &rest[at + 1..];
        let meridiem = after.get(..3).filter(|m| {
            let m = m.as_bytes();
            (m[0].eq_ignore_ascii_case(&b'a') || m[0].eq_ignore_ascii_case(&b'p'))
                && m[1].eq_ignore_ascii_case(&b'm')
                && m[2] == b'.'
        });
        out.push_str(&rest[..at]);
        match meridiem {
            Some(m) => {
                out.push('\u{202F}');
                out.push_str(m);
                rest = &after[3..];
            }
            None => {
                out.push(' ');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The spellings the read tool tries, in order; the first that exists is read, and the first
/// (the resolved path itself) when none does.
pub fn read_path_candidates(resolved: &str) -> Vec<String> {
    let nfd: String = resolved.nfd().collect();
    let curly = |p: &str| p.replace('\'', "\u{2019}");
    let variants = [
        screenshot_spelling(resolved),
        nfd.clone(),
        curly(resolved),
        curly(&nfd),
    ];
    std::iter::once(resolved.to_owned())
        .chain(variants.into_iter().filter(|v| v != resolved))
        .collect()
}
