//! Links from the HTML report to each trial's cassette: relative to the report's folder, so the
//! folder and the cassettes can be copied or archived together and the links still work. The
//! one part of the reports that looks at the disk (a link is given only to a cassette that
//! exists); the writers stay pure functions of the results and these links.
//!
//! A link is built from path components only, each percent-encoded byte by byte outside
//! RFC 3986's unreserved characters: whatever a suite, task or model is named, the link is a
//! relative path (a `javascript:` or `//host` name cannot become a scheme or a host) and the
//! attribute that holds it needs no further escaping.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use crate::results::{EvalResults, TrialResult};

/// For each trial of a results file (same order), the relative link to its cassette, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CassetteLinks {
    hrefs: Vec<Option<String>>,
}

impl CassetteLinks {
    /// The links from `report_dir` to the cassettes of `results`' trials: the cassette of a
    /// trial is its `cassette` path under the folder `folder` gives for it (the run's
    /// `--record`/`--replay`/`--once` folder, or its suite's), linked when that file exists.
    pub fn find(
        results: &EvalResults,
        report_dir: &Path,
        folder: impl Fn(&TrialResult) -> Option<PathBuf>,
    ) -> CassetteLinks {
        let Ok(from) = report_dir.canonicalize() else {
            return CassetteLinks::default();
        };
        let hrefs = results
            .trials
            .iter()
            .map(|t| {
                let relative = Path::new(t.cassette.as_deref()?);
                if relative.is_absolute()
                    || relative.components().any(|c| c == Component::ParentDir)
                {
                    return None;
                }
                let file = folder(t)?.join(relative).canonicalize().ok()?;
                file.is_file().then(|| relative_href(&from, &file))?
            })
            .collect();
        CassetteLinks { hrefs }
    }

    /// The link of the trial at `index` in the results.
    pub(crate) fn get(&self, index: usize) -> Option<&str> {
        self.hrefs.get(index).and_then(Option::as_deref)
    }
}

/// The URL path from the folder `from` to the file `to` (both absolute, without `.` or `..`):
/// `..` for each of `from`'s components past the common part, then `to`'s, percent-encoded.
/// `None` when either is not absolute or holds `.` or `..` (nothing relative can be said).
pub(crate) fn relative_href(from: &Path, to: &Path) -> Option<String> {
    let plain = |p: &Path| {
        p.is_absolute()
            && p.components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
    };
    if !plain(from) || !plain(to) {
        return None;
    }
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    for c in &to[common..] {
        parts.push(encode(c.as_os_str().as_encoded_bytes()));
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A path component with every byte outside `A-Z a-z 0-9 - . _ ~` as `%XX`.
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_and_encoded() {
        let href = |a: &str, b: &str| relative_href(Path::new(a), Path::new(b));
        assert_eq!(
            href("/w/out", "/w/cassettes/s/t/m/0.jsonl").as_deref(),
            Some("../cassettes/s/t/m/0.jsonl")
        );
        assert_eq!(href("/w", "/w/c/0.jsonl").as_deref(), Some("c/0.jsonl"));
        assert_eq!(
            href("/a/b/c", "/x/javascript:alert(1)/#?\"<> é.jsonl").as_deref(),
            Some("../../../x/javascript%3Aalert%281%29/%23%3F%22%3C%3E%20%C3%A9.jsonl")
        );
        assert_eq!(href("out", "/w/c.jsonl"), None);
        assert_eq!(href("/w/out", "/w/../c.jsonl"), None);
    }

    /// Decodes `%XX` escapes.
    fn decode(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut bytes = s.bytes();
        while let Some(b) = bytes.next() {
            if b == b'%' {
                let hex: String = bytes.by_ref().take(2).map(char::from).collect();
                out.push(u8::from_str_radix(&hex, 16).unwrap_or_default());
            } else {
                out.push(b);
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Whatever the names, a link holds only unreserved characters, `%XX` and `/`, and
        /// leads back to the file.
        #[test]
        fn any_name_gives_an_inert_link_to_it(
            names in proptest::collection::vec("[^/\\x00]{1,12}", 1..4),
        ) {
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| n != "." && n != "..")
                .collect();
            proptest::prop_assume!(!names.is_empty());
            let to = Path::new("/root/cassettes").join(names.join("/"));
            let href = relative_href(Path::new("/root/out"), &to).unwrap_or_default();
            proptest::prop_assert!(href
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~%/".contains(&b)), "{}", href);
            let want = format!("../cassettes/{}", names.join("/"));
            proptest::prop_assert_eq!(decode(&href), want.into_bytes());
        }
    }
}
