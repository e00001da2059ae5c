//! pi-schema's host name formats: `hostname` (LDH labels or valid punycode `xn--` labels),
//! `idn-hostname` (RFC 5890-5893 labels: permitted categories, contextual rules, the bidi rule,
//! after its normalisation) and `idn-email`, as Pi 1.5.2 checks them. Lengths count UTF-16 units,
//! as JavaScript's do, and punycode is decoded in JavaScript's double arithmetic.

use std::sync::OnceLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// The Unicode classes pi-schema reads, as `\p{...}` tests on one character.
const CLASSES: &[(&str, &str)] = &[
    ("mn", r"\p{Mn}"),
    ("combining", r"[\p{Mn}\p{Mc}\p{Me}]"),
    ("letter", r"\p{L}"),
    ("greek", r"\p{Script=Greek}"),
    ("hebrew", r"\p{Script=Hebrew}"),
    (
        "japanese",
        r"[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]",
    ),
    (
        "arabic",
        r"[\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Mandaic}]",
    ),
    (
        "virama",
        r"[\x{094d}\x{09cd}\x{0a4d}\x{0acd}\x{0b4d}\x{0bcd}\x{0c4d}\x{0ccd}\x{0d3b}\x{0d3c}\x{0d4d}\x{0dca}\x{1b44}\x{1baa}\x{1bab}\x{a9c0}\x{11046}\x{1107f}\x{110b9}\x{11133}\x{11134}\x{111c0}\x{11235}\x{1134d}\x{11442}\x{114c2}\x{115bf}\x{1163f}\x{116b6}\x{11c3f}\x{11d44}\x{11d45}]",
    ),
    (
        "disallowed",
        r"[\x{0640}\x{07fa}\x{302e}\x{302f}\x{3031}\x{3032}\x{3033}\x{3034}\x{3035}\x{303b}]",
    ),
    // Letters, `-+`, `.,:/`, decimal digits, non-spacing and spacing marks, the CONTEXTO
    // exceptions and the PVALID exceptions.
    (
        "permitted",
        r"\p{L}|[\x{002d}\x{002b}]|[\x{002e}\x{002c}\x{003a}\x{002f}]|\p{Nd}|\p{Mn}|\p{Mc}|[\x{00b7}\x{0375}\x{05f3}\x{05f4}\x{200c}\x{200d}\x{30fb}]|[\x{00df}\x{03c2}\x{06fd}\x{06fe}\x{0f0b}\x{3007}]",
    ),
];

/// pi-schema's `idn-email` pattern, its `(?<!-)` lookbehinds spelt as a label's last character.
const IDN_EMAIL: &str = r#"(?i)^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{0080}-\x{10FFFF}-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\x{0080}-\x{10FFFF}-]+)*|"(?:[^"\\]|\\[^\n\r\x{2028}\x{2029}])*")@[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?(?:\.[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?)*$"#;

fn is(class: &str, c: char) -> bool {
    static COMPILED: OnceLock<Vec<(&'static str, Option<Regex>)>> = OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        CLASSES
            .iter()
            .map(|(name, source)| (*name, Regex::new(source).ok()))
            .collect()
    });
    let mut buf = [0u8; 4];
    compiled
        .iter()
        .find(|(name, _)| *name == class)
        .and_then(|(_, re)| re.as_ref())
        .is_some_and(|re| re.is_match(c.encode_utf8(&mut buf)))
}

fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// `hostname`.
pub fn hostname(text: &str) -> bool {
    let len = utf16_len(text);
    len != 0 && len <= 253 && !text.ends_with('.') && text.split('.').all(ascii_host_label)
}

fn ascii_host_label(label: &str) -> bool {
    (1..=63).contains(&utf16_len(label)) && (puny_label(label) || ascii_label(label))
}

fn ascii_label(label: &str) -> bool {
    label
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label.get(2..4) != Some("--")
}

fn ace_prefixed(label: &str) -> bool {
    label.to_lowercase().starts_with("xn--")
}

/// A valid `xn--` label: its punycode decodes to a valid Unicode label holding non-ASCII.
fn puny_label(label: &str) -> bool {
    if !ace_prefixed(label) {
        return false;
    }
    let Some(body) = label.get(4..).map(str::to_lowercase) else {
        return false;
    };
    if body.rfind('-') == Some(0) {
        return false;
    }
    decode_punycode(&body).is_some_and(|decoded| !decoded.is_ascii() && unicode_label(&decoded))
}

/// `idn-hostname`.
pub fn idn_hostname(text: &str) -> bool {
    if text.is_empty() || text.contains(' ') {
        return false;
    }
    let normalized = normalize_hostname(text);
    if utf16_len(&normalized) > 253 {
        return false;
    }
    let labels: Vec<&str> = normalized.split('.').collect();
    let bidi = labels.iter().any(|l| has_bidi_chars(l));
    labels.iter().all(|label| {
        (1..=63).contains(&utf16_len(label))
            && (puny_label(label) || unicode_label(label))
            && (!bidi || satisfies_bidi_rule(label))
    })
}

/// Full-width ASCII to ASCII, NFC, ignorable characters dropped, ideographic full stops as `.`.
fn normalize_hostname(text: &str) -> String {
    let narrowed: String = text
        .chars()
        .map(|c| match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            other => other,
        })
        .collect();
    narrowed
        .nfc()
        .filter(|c| {
            !matches!(c, '\u{ad}' | '\u{34f}' | '\u{180b}'..='\u{180d}' | '\u{200b}'
                | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
        })
        .map(|c| match c {
            '\u{3002}' | '\u{ff0e}' | '\u{ff61}' => '.',
            other => other,
        })
        .collect()
}

fn has_bidi_chars(label: &str) -> bool {
    if ace_prefixed(label) {
        return label
            .get(4..)
            .and_then(|body| decode_punycode(&body.to_lowercase()))
            .is_some_and(|decoded| has_rtl(&decoded));
    }
    has_rtl(label)
}

/// The bidi classes pi-schema tells apart (everything else is `ON`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bidi {
    En,
    An,
    Nsm,
    R,
    Al,
    L,
    On,
}

fn bidi_class(c: char) -> Bidi {
    if c.is_ascii_digit() || ('\u{6f0}'..='\u{6f9}').contains(&c) {
        Bidi::En
    } else if ('\u{660}'..='\u{669}').contains(&c) {
        Bidi::An
    } else if is("mn", c) {
        Bidi::Nsm
    } else if is("hebrew", c) {
        Bidi::R
    } else if is("arabic", c) {
        Bidi::Al
    } else if is("letter", c) {
        Bidi::L
    } else {
        Bidi::On
    }
}

fn has_rtl(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(bidi_class(c), Bidi::R | Bidi::Al | Bidi::An))
}

/// RFC 5893's rule as pi-schema applies it.
fn satisfies_bidi_rule(label: &str) -> bool {
    let mut chars = label.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    let rtl = match bidi_class(first) {
        Bidi::R | Bidi::Al => true,
        Bidi::L => false,
        _ => return false,
    };
    let (mut en, mut an) = (false, false);
    for class in label.chars().map(bidi_class) {
        let allowed = match class {
            Bidi::R | Bidi::Al | Bidi::An => rtl,
            Bidi::L => !rtl,
            Bidi::En | Bidi::Nsm | Bidi::On => true,
        };
        if !allowed {
            return false;
        }
        en |= class == Bidi::En;
        an |= class == Bidi::An;
    }
    !(rtl && en && an)
}

/// A label of an internationalised host name (pi-schema's `IsUnicodeLabel`).
fn unicode_label(label: &str) -> bool {
    if exceeds_a_label_length(label) || (has_rtl(label) && !satisfies_bidi_rule(label)) {
        return false;
    }
    let chars: Vec<char> = label.chars().collect();
    let hyphens = chars.first() == Some(&'-')
        || chars.last() == Some(&'-')
        || chars.get(2..4) == Some(&['-', '-'][..]);
    if hyphens || chars.first().is_some_and(|&c| is("combining", c)) {
        return false;
    }
    let mut japanese = false;
    for (i, &c) in chars.iter().enumerate() {
        if is("disallowed", c) || !is("permitted", c) {
            return false;
        }
        japanese |= is("japanese", c);
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        let next = chars.get(i + 1).copied();
        let present = |c: Option<char>| c.filter(|&c| c != '\0');
        let ok = match c {
            '\u{b7}' => prev == Some('l') && next == Some('l'),
            '\u{375}' => present(next).is_some_and(|n| is("greek", n)),
            '\u{5f3}' | '\u{5f4}' => present(prev).is_some_and(|p| is("hebrew", p)),
            '\u{200c}' => present(prev).is_some_and(|p| !p.is_ascii() || is("virama", p)),
            '\u{200d}' => present(prev).is_some_and(|p| is("virama", p)),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    !label.contains('\u{30fb}') || japanese
}

fn exceeds_a_label_length(label: &str) -> bool {
    !label.is_ascii() && encode_punycode(label).len() + 4 > 63
}

const BASE: f64 = 36.0;
const T_MIN: f64 = 1.0;
const T_MAX: f64 = 26.0;
const SKEW: f64 = 38.0;
const DAMP: f64 = 700.0;
const INITIAL_BIAS: f64 = 72.0;
const INITIAL_N: f64 = 128.0;

/// JavaScript's `ToInt32`.
fn to_int32(x: f64) -> i32 {
    if !x.is_finite() {
        return 0;
    }
    x.trunc().rem_euclid(4_294_967_296.0) as u32 as i32
}

fn adapt(delta: f64, points: f64, first: bool) -> f64 {
    let mut delta = if first {
        (delta / DAMP).floor()
    } else {
        f64::from(to_int32(delta) >> 1)
    };
    delta += (delta / points).floor();
    let mut k = 0.0;
    while delta > f64::from(((BASE - T_MIN) * T_MAX) as i32 >> 1) {
        delta = (delta / (BASE - T_MIN)).floor();
        k += BASE;
    }
    k + ((BASE - T_MIN + 1.0) * delta / (delta + SKEW)).floor()
}

fn threshold(k: f64, bias: f64) -> f64 {
    if k <= bias {
        T_MIN
    } else if k >= bias + T_MAX {
        T_MAX
    } else {
        k - bias
    }
}

/// pi-schema's punycode decoder; `None` where it throws.
fn decode_punycode(input: &str) -> Option<String> {
    let units: Vec<u16> = input.encode_utf16().collect();
    let mut output: Vec<f64> = Vec::new();
    let (mut n, mut i, mut bias) = (INITIAL_N, 0.0_f64, INITIAL_BIAS);
    let delimiter = units.iter().rposition(|&u| u == u16::from(b'-'));
    if let Some(d) = delimiter.filter(|&d| d > 0) {
        for &u in &units[..d] {
            if u >= 128 {
                return None;
            }
            output.push(f64::from(u));
        }
    }
    let mut at = delimiter.map_or(0, |d| d + 1);
    while at < units.len() {
        let (old_i, mut w, mut k) = (i, 1.0, BASE);
        loop {
            let u = *units.get(at)?;
            at += 1;
            let digit = match u {
                97..=122 => f64::from(u - 97),
                48..=57 => f64::from(u - 48 + 26),
                _ => return None,
            };
            i += digit * w;
            let t = threshold(k, bias);
            if digit < t {
                break;
            }
            w *= BASE - t;
            k += BASE;
        }
        let len = output.len() as f64 + 1.0;
        bias = adapt(i - old_i, len, old_i == 0.0);
        n += (i / len).floor();
        i %= len;
        output.insert(i as usize, n);
        i += 1.0;
    }
    output
        .into_iter()
        .map(|cp| {
            (cp.fract() == 0.0 && (0.0..=f64::from(0x10ffff)).contains(&cp))
                .then(|| char::from_u32(cp as u32))
                .flatten()
        })
        .collect()
}

fn digit_char(d: u64) -> char {
    let d = d as u8;
    if d < 26 {
        char::from(b'a' + d)
    } else {
        char::from(b'0' + d - 26)
    }
}

/// pi-schema's punycode encoder (only its length is read).
fn encode_punycode(input: &str) -> String {
    let basic: String = input.chars().filter(char::is_ascii).collect();
    let points: Vec<u64> = input.chars().map(|c| u64::from(c as u32)).collect();
    let mut out = basic.clone();
    if !basic.is_empty() {
        out.push('-');
    }
    let (mut n, mut delta, mut bias) = (128_u64, 0_u64, INITIAL_BIAS);
    let mut handled = basic.chars().count();
    while handled < points.len() {
        let m = points
            .iter()
            .copied()
            .filter(|&cp| cp >= n)
            .min()
            .unwrap_or(n);
        delta += (m - n) * (handled as u64 + 1);
        n = m;
        for &cp in &points {
            if cp < n {
                delta += 1;
            }
            if cp == n {
                let mut q = delta as f64;
                let mut k = BASE;
                loop {
                    let t = threshold(k, bias);
                    if q < t {
                        break;
                    }
                    out.push(digit_char((t + (q - t) % (BASE - t)) as u64));
                    q = ((q - t) / (BASE - t)).floor();
                    k += BASE;
                }
                out.push(digit_char(q as u64));
                bias = adapt(
                    delta as f64,
                    handled as f64 + 1.0,
                    handled == basic.chars().count(),
                );
                delta = 0;
                handled += 1;
            }
        }
        delta += 1;
        n += 1;
    }
    out
}

/// `idn-email`, on the NFC form of the text.
pub fn idn_email(text: &str) -> bool {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    let normalized: String = text.nfc().collect();
    PATTERN
        .get_or_init(|| Regex::new(IDN_EMAIL).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(&normalized))
}
