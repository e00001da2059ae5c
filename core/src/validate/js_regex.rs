//! Schema `pattern`s, `patternProperties` keys and the `regex` format as JavaScript RegExps, the
//! way pi-schema compiles them under Node 22 (V8), run by an ECMAScript engine (`regress`).
//!
//! pi-schema's `sharedRegex` tries `new RegExp(source, "u")` and falls back to
//! `new RegExp(source)`: a source the `u` flag refuses (`a{`, `\-`, `\z`) is read with Annex B's
//! legacy syntax and matched over UTF-16 code units. A source that compiles neither way throws
//! V8's `SyntaxError` when the schema is compiled, whatever the arguments; [`SchemaRegex::new`]
//! gives that text. The `regex` format only asks whether `new RegExp(source, "u")` compiles.
//!
//! V8 in Node 22 has no group modifiers (`(?i:…)`), which `regress` accepts, so any `(?` that
//! opens no group V8 knows is refused here before `regress` sees it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use regress::Regex;

/// How many pattern sources [`SchemaRegex::new`] keeps compiled. Sources come from tool
/// declarations, so a run has few; past this many a source is compiled for each use, as
/// before there was a cache, so no schema can grow it without bound.
const CACHED_SOURCES: usize = 1024;

/// A source compiled as pi-schema compiles it, or V8's error for it.
type Compiled = Result<Arc<SchemaRegex>, String>;

/// The compiled patterns by source: compiling depends on the source alone, so every
/// declaration holding a pattern shares its one compilation, and a tool's calls after its
/// first compile nothing.
fn compiled_sources() -> &'static Mutex<BTreeMap<String, Compiled>> {
    static CACHE: OnceLock<Mutex<BTreeMap<String, Compiled>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// A compiled schema pattern and the mode it was compiled in.
pub(crate) struct SchemaRegex {
    regex: Regex,
    /// Compiled with the `u` flag: matched over code points, else over UTF-16 code units.
    unicode: bool,
}

impl SchemaRegex {
    /// Compiles `source` as pi-schema's `sharedRegex` does, or gives the message V8 throws;
    /// compiled once per source ([`compiled_sources`]).
    pub(crate) fn new(source: &str) -> Compiled {
        let lock = || {
            compiled_sources()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        if let Some(compiled) = lock().get(source) {
            return compiled.clone();
        }
        let compiled = Self::compile(source).map(Arc::new);
        let mut cache = lock();
        if cache.len() < CACHED_SOURCES {
            cache.insert(source.to_owned(), compiled.clone());
        }
        compiled
    }

    fn compile(source: &str) -> Result<Self, String> {
        let shape = scan(source);
        if shape.unknown_group {
            return Err(v8_error(source, "Invalid group"));
        }
        if let Ok(regex) = Regex::with_flags(source, "u") {
            return Ok(Self {
                regex,
                unicode: true,
            });
        }
        match Regex::with_flags(source, "") {
            Ok(regex) => Ok(Self {
                regex,
                unicode: false,
            }),
            Err(e) => Err(v8_error(source, v8_reason(&e.text, &shape))),
        }
    }

    /// Compiles `source` as TypeBox does (`new RegExp(source, "u")`), `None` when it does not.
    pub(crate) fn unicode_only(source: &str) -> Option<Self> {
        if scan(source).unknown_group {
            return None;
        }
        let regex = Regex::with_flags(source, "u").ok()?;
        Some(Self {
            regex,
            unicode: true,
        })
    }

    /// Whether the pattern matches somewhere in `text` (`RegExp.prototype.test`).
    pub(crate) fn is_match(&self, text: &str) -> bool {
        if self.unicode {
            self.regex.find(text).is_some()
        } else {
            let units: Vec<u16> = text.encode_utf16().collect();
            self.regex.find_from_ucs2(&units, 0).next().is_some()
        }
    }
}

/// The `regex` format: whether `new RegExp(source, "u")` compiles.
pub(crate) fn compiles_with_unicode_flag(source: &str) -> bool {
    SchemaRegex::unicode_only(source).is_some()
}

fn v8_error(source: &str, reason: &str) -> String {
    format!("Invalid regular expression: /{source}/: {reason}")
}

/// V8's wording for what `regress` refused in Annex B mode.
fn v8_reason(regress_text: &str, shape: &Shape) -> &'static str {
    match regress_text {
        "Unbalanced parenthesis" if shape.unmatched_close => "Unmatched ')'",
        "Unbalanced parenthesis" => "Unterminated group",
        "Unbalanced bracket" => "Unterminated character class",
        "Incomplete escape" | "Unterminated escape" => "\\ at end of pattern",
        text if text.starts_with("Range values reversed") => {
            "Range out of order in character class"
        }
        "Invalid quantifier" => "numbers out of order in {} quantifier",
        "Quantifier not allowed here" if shape.quantified_lookbehind => "Invalid quantifier",
        "Quantifier not allowed here" | "Invalid atom character" | "Invalid braced quantifier" => {
            "Nothing to repeat"
        }
        "Invalid group modifier" => "Invalid group",
        "Invalid token at named capture group identifier"
        | "Invalid named backreference syntax" => "Invalid capture group name",
        "Duplicate capture group name" => "Duplicate capture group name",
        text if text.starts_with("Backreference to invalid named capture group") => {
            "Invalid named capture referenced"
        }
        "Regular expression is too deeply nested"
        | "Capture group count limit exceeded"
        | "Loop count limit exceeded" => "Regular expression too large",
        _ => "Invalid regular expression",
    }
}

/// What a plain walk over a pattern's groups shows, to word errors `regress` words differently.
#[derive(Default)]
struct Shape {
    /// A `(?` that opens none of `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`, `(?<name>`.
    unknown_group: bool,
    /// A `)` with no open group before it.
    unmatched_close: bool,
    /// A lookbehind directly followed by a quantifier.
    quantified_lookbehind: bool,
}

fn scan(source: &str) -> Shape {
    let chars: Vec<char> = source.chars().collect();
    let mut shape = Shape::default();
    // For each open group: whether it is a lookbehind.
    let mut open: Vec<bool> = Vec::new();
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => i += 1,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '[' => in_class = true,
            '(' => {
                let next = |k: usize| chars.get(i + k).copied();
                let lookbehind = next(1) == Some('?')
                    && next(2) == Some('<')
                    && matches!(next(3), Some('=' | '!'));
                if next(1) == Some('?') && !matches!(next(2), Some(':' | '=' | '!' | '<')) {
                    shape.unknown_group = true;
                }
                open.push(lookbehind);
            }
            ')' => match open.pop() {
                Some(lookbehind) => {
                    if lookbehind && matches!(chars.get(i + 1), Some('*' | '+' | '?' | '{')) {
                        shape.quantified_lookbehind = true;
                    }
                }
                None => shape.unmatched_close = true,
            },
            _ => {}
        }
        i += 1;
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u_flag_first_then_annex_b_over_code_units() {
        // Valid with `u`: `.` is one code point.
        assert!(SchemaRegex::new("^.$").unwrap().is_match("😀"));
        // `\-` needs Annex B, where `.` is one UTF-16 code unit.
        let legacy = SchemaRegex::new("^.\\-$").unwrap();
        assert!(!legacy.is_match("😀-"));
        assert!(SchemaRegex::new("^..\\-$").unwrap().is_match("😀-"));
    }

    /// A source is compiled once: its second use is the first's compilation, in both modes,
    /// and an error is given again with the same words.
    #[test]
    fn a_source_is_compiled_once() {
        for source in ["^cached-[a-z]+$", "^cached\\-$"] {
            let first = SchemaRegex::new(source).unwrap();
            assert!(Arc::ptr_eq(&first, &SchemaRegex::new(source).unwrap()));
        }
        let refused = SchemaRegex::new("(cached").err();
        assert!(refused.is_some());
        assert_eq!(SchemaRegex::new("(cached").err(), refused);
    }

    #[test]
    fn modifiers_are_refused_as_node_22_refuses_them() {
        assert_eq!(
            SchemaRegex::new("(?i:a)").err().as_deref(),
            Some("Invalid regular expression: /(?i:a)/: Invalid group")
        );
        assert!(!compiles_with_unicode_flag("(?i:a)"));
        assert!(compiles_with_unicode_flag("(?<n>a)\\k<n>"));
        // Inside a class or escaped, `(?` opens nothing.
        assert!(SchemaRegex::new("[(?i]\\(?i").is_ok());
    }
}
