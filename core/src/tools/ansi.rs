//! Escape sequences removed from a user command's output as Pi 1.5.2 removes them
//! (`utils/ansi.js`, derived from ansi-regex): OSC strings up to their terminator, CSI and the
//! short escapes; and, while output streams in, an unfinished sequence at the end of a chunk held
//! back until the next chunk completes it.

use std::sync::OnceLock;

use regex::Regex;

/// String terminator: BEL, `ESC \` or U+009C.
const ST: &str = r"(?:\x07|\x1B\x5C|\x{9C})";
/// `ESC ]`.
const OSC_START: &str = r"\x1B\]";
/// CSI and related introducers with their parameters: a private prefix (`<`, `=`, `>`) only right
/// after a real CSI introducer, else intermediates after ESC or U+009B.
const CSI_START: &str =
    r"(?:(?:\x1B\[|\x{9B})[<=>]|[\x1B\x{9B}][\[\]()#;?]*)(?:[0-9]{1,4}(?:[;:][0-9]{0,4})*)?";
const CSI_FINAL: &str = r"[0-9A-PR-TZcf-nq-uy=><~]";
/// Longest unfinished sequence held back, in UTF-16 units; a longer one is passed on as it is.
const MAX_PENDING_UNITS: usize = 256;

fn ansi() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| {
        Regex::new(&format!(
            "(?:{OSC_START}(?s:.)*?{ST})|{CSI_START}{CSI_FINAL}"
        ))
        .ok()
    })
    .as_ref()
}

fn csi_start_alone() -> Option<&'static Regex> {
    static CELL: OnceLock<Option<Regex>> = OnceLock::new();
    CELL.get_or_init(|| Regex::new(&format!("^(?:{CSI_START})$")).ok())
        .as_ref()
}

fn has_introducer(text: &str) -> bool {
    text.contains(['\u{1b}', '\u{9b}'])
}

/// `text` without its escape sequences (Pi's `stripAnsi`; a text without ESC or U+009B is
/// returned as it is).
pub fn strip_ansi(text: &str) -> String {
    match ansi() {
        Some(pattern) if has_introducer(text) => pattern.replace_all(text, "").into_owned(),
        _ => text.to_owned(),
    }
}

/// `text` split into what can be cleaned now and an unfinished escape sequence at its end (an
/// OSC string without its terminator, a trailing ESC included, or a CSI without its final
/// character), to be put before the next chunk (Pi's `splitIncompleteAnsiSuffix`).
pub fn split_incomplete_suffix(text: &str) -> (&str, &str) {
    if !has_introducer(text) {
        return (text, "");
    }
    let mut units = 0;
    let mut window = text.len();
    for (at, c) in text.char_indices().rev() {
        units += c.len_utf16();
        if units > MAX_PENDING_UNITS {
            break;
        }
        window = at;
    }
    let unfinished = |suffix: &str| {
        let osc = suffix
            .strip_prefix("\u{1b}]")
            .is_some_and(|body| !body.contains(['\u{7}', '\u{9c}']) && !body.contains("\u{1b}\\"));
        osc || csi_start_alone().is_some_and(|p| p.is_match(suffix))
    };
    let start = text[window..]
        .char_indices()
        .map(|(i, _)| window + i)
        .filter(|&i| text[i..].starts_with(['\u{1b}', '\u{9b}']))
        .find(|&i| unfinished(&text[i..]));
    match start {
        Some(at) => text.split_at(at),
        None => (text, ""),
    }
}
