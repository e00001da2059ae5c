//! pi-schema's formats for URIs and URLs: `uri` and `uri-reference` by its RFC 3986 patterns
//! (`uri_patterns.txt`, verbatim from Pi 1.5.2), `url`, `iri` and `iri-reference` by WHATWG URL
//! parsing (Node's `URL.canParse`, here the `url` crate) after its own character rules.

use std::sync::OnceLock;

use regex::Regex;

/// pi-schema's `Uri` and `UriReference` patterns (JavaScript sources, flag `i`), one a line.
const URI_PATTERNS: &str = include_str!("uri_patterns.txt");

/// The base `iri-reference` resolves against.
const REFERENCE_BASE: &str = "http://example.com";

/// How long a text may be for an IPvFuture host to be narrowed to `[::1]` before parsing.
const IPV_FUTURE_LIMIT: usize = 2048;

fn compiled(index: usize) -> Option<&'static Regex> {
    static PATTERNS: OnceLock<Vec<Option<Regex>>> = OnceLock::new();
    PATTERNS
        .get_or_init(|| {
            URI_PATTERNS
                .lines()
                .map(|source| Regex::new(&format!("(?i){}", source.replace("\\/", "/"))).ok())
                .collect()
        })
        .get(index)
        .and_then(Option::as_ref)
}

/// The patterns hold ASCII classes only, so a text with anything else fails (JavaScript's `i`
/// without `u` folds no character outside ASCII into them, where Rust's Unicode folding would).
fn pattern_matches(index: usize, text: &str) -> bool {
    text.is_ascii() && compiled(index).is_some_and(|re| re.is_match(text))
}

/// `uri`: an absolute RFC 3986 URI.
pub fn uri(text: &str) -> bool {
    pattern_matches(0, text)
}

/// `uri-reference`: an RFC 3986 URI or relative reference.
pub fn uri_reference(text: &str) -> bool {
    pattern_matches(1, text)
}

/// `url`: `URL.canParse`.
pub fn url(text: &str) -> bool {
    url::Url::parse(text).is_ok()
}

/// A `%` not followed by two hex digits.
fn bad_percent(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    })
}

/// `iri`: no space, control or `<>^\`{|}\\`, no bad escape, and parses as a URL once an IPvFuture
/// host (`[v1.x]`, which URL parsing refuses) stands in as `[::1]`.
pub fn iri(text: &str) -> bool {
    let invalid = |c: char| c <= ' ' || "<>^`{|}\\".contains(c);
    if text.contains(invalid) || bad_percent(text) {
        return false;
    }
    static FUTURE: OnceLock<Option<Regex>> = OnceLock::new();
    let future = FUTURE.get_or_init(|| Regex::new(r"\[[vV][0-9a-fA-F]+\.[^\]]+\]").ok());
    let narrowed = match future {
        Some(re) if text.encode_utf16().count() < IPV_FUTURE_LIMIT => re.replacen(text, 1, "[::1]"),
        _ => text.into(),
    };
    url::Url::parse(&narrowed).is_ok()
}

/// `iri-reference`: no space, control, DEL or backslash, no bad escape, no scheme directly
/// followed by `//` without its colon, and parses as a URL against `http://example.com`.
pub fn iri_reference(text: &str) -> bool {
    static SCHEME: OnceLock<Option<Regex>> = OnceLock::new();
    let malformed = SCHEME.get_or_init(|| Regex::new(r"^[a-zA-Z][a-zA-Z0-9+\-.]*//").ok());
    let invalid = |c: char| c <= ' ' || c == '\x7f' || c == '\\';
    !text.contains(invalid)
        && !bad_percent(text)
        && !malformed.as_ref().is_some_and(|re| re.is_match(text))
        && url::Url::parse(REFERENCE_BASE).is_ok_and(|base| base.join(text).is_ok())
}
