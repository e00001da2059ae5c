//! A small deterministic mutator: the same seed gives the same mutant with any build, so a
//! printed seed reproduces a failure.

use serde_json::Value;

/// SplitMix64: tiny, seedable, and stable across versions of any crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What the input is, so that values are replaced in its own syntax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// One JSON value per line (cassettes, sessions, RPC stdin).
    JsonLines,
    /// A TOML suite.
    Toml,
}

/// One to three mutations of `input`; returns the mutant and what was done to it.
pub fn mutate(input: &[u8], syntax: Syntax, rng: &mut Rng) -> (Vec<u8>, Vec<String>) {
    let mut bytes = input.to_vec();
    let mut done = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let what = match rng.below(9) {
            0 => flip_byte(&mut bytes, rng),
            1 => truncate(&mut bytes, rng),
            2 => with_lines(&mut bytes, |lines| duplicate_line(lines, rng)),
            3 => with_lines(&mut bytes, |lines| delete_line(lines, rng)),
            4 => with_lines(&mut bytes, |lines| swap_lines(lines, rng)),
            5 => invalid_utf8(&mut bytes, rng),
            6 if syntax == Syntax::JsonLines => {
                with_lines(&mut bytes, |lines| reuse_json_value(lines, rng))
            }
            _ => with_lines(&mut bytes, |lines| match syntax {
                Syntax::JsonLines => replace_json_value(lines, rng),
                Syntax::Toml => replace_toml_value(lines, rng),
            }),
        };
        done.push(what);
    }
    (bytes, done)
}

fn flip_byte(bytes: &mut [u8], rng: &mut Rng) -> String {
    if bytes.is_empty() {
        return "flip: empty".into();
    }
    let at = rng.below(bytes.len());
    let bit = 1u8 << rng.below(8);
    bytes[at] ^= bit;
    format!("flip byte {at} bit {bit:#04x}")
}

fn truncate(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    let at = rng.below(bytes.len() + 1);
    bytes.truncate(at);
    format!("truncate at {at}")
}

fn invalid_utf8(bytes: &mut Vec<u8>, rng: &mut Rng) -> String {
    const BAD: &[&[u8]] = &[
        b"\xff",
        b"\xc3",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\x80\x80",
    ];
    let at = rng.below(bytes.len() + 1);
    let bad = BAD[rng.below(BAD.len())];
    bytes.splice(at..at, bad.iter().copied());
    format!("invalid UTF-8 {bad:x?} at {at}")
}

/// Runs `edit` on the input's lines (split on `\n`, so a last line without one stays so).
fn with_lines(bytes: &mut Vec<u8>, edit: impl FnOnce(&mut Vec<Vec<u8>>) -> String) -> String {
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    let what = edit(&mut lines);
    *bytes = lines.join(&b'\n');
    what
}

fn duplicate_line(lines: &mut Vec<Vec<u8>>, rng: &mut Rng) -> String {
    let at = rng.below(lines.len());
    let line = lines[at].clone();
    lines.insert(at, line);
    format!("duplicate line {}", at + 1)
}

fn delete_line(lines: &mut Vec<Vec<u8>>, rng: &mut Rng) -> String {
    let at = rng.below(lines.len());
    lines.remove(at);
    format!("delete line {}", at + 1)
}

fn swap_lines(lines: &mut [Vec<u8>], rng: &mut Rng) -> String {
    let a = rng.below(lines.len());
    let b = rng.below(lines.len());
    lines.swap(a, b);
    format!("swap lines {} and {}", a + 1, b + 1)
}

/// A value of another kind, as JSON text: other types, numbers no integer holds, deep nesting,
/// very long strings, escapes that are not characters.
fn hostile_json(rng: &mut Rng) -> String {
    match rng.below(16) {
        0 => "null".into(),
        1 => "true".into(),
        2 => "0".into(),
        3 => "-1".into(),
        4 => "1e308".into(),
        5 => "-1e400".into(),
        6 => "18446744073709551616".into(),
        7 => "-9223372036854775809".into(),
        8 => "0.5".into(),
        9 => "\"\"".into(),
        10 => format!("\"{}\"", "x".repeat(1 << 20)),
        11 => "\"\\ud800 \\u2028 \\u0000\"".into(),
        12 => "[]".into(),
        13 => "{}".into(),
        14 => {
            let depth = 64 + rng.below(4000);
            format!("{}{}", "[".repeat(depth), "]".repeat(depth))
        }
        _ => {
            let depth = 64 + rng.below(4000);
            format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
        }
    }
}

/// Replaces one value (any depth) of one line that is JSON with a hostile one.
fn replace_json_value(lines: &mut [Vec<u8>], rng: &mut Rng) -> String {
    let parsed: Vec<usize> = (0..lines.len())
        .filter(|&i| serde_json::from_slice::<Value>(&lines[i]).is_ok())
        .collect();
    if parsed.is_empty() {
        return "replace: no JSON line".into();
    }
    let at = parsed[rng.below(parsed.len())];
    let Ok(mut value) = serde_json::from_slice::<Value>(&lines[at]) else {
        return "replace: no JSON line".into();
    };
    let replacement = hostile_json(rng);
    let path = replace_node(&mut lines[at], &mut value, &replacement, rng);
    let shown: String = replacement.chars().take(24).collect();
    format!("line {}: {path} = {shown}", at + 1)
}

/// Replaces one value of one JSON line with a string or number found elsewhere in the input:
/// an id as another entry's parent (a cycle, a dangling or doubled id), a call number of
/// another call, one recorded time for another.
fn reuse_json_value(lines: &mut [Vec<u8>], rng: &mut Rng) -> String {
    let parsed: Vec<(usize, Value)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, line)| Some((i, serde_json::from_slice::<Value>(line).ok()?)))
        .collect();
    let mut scalars = Vec::new();
    for (_, value) in &parsed {
        collect_scalars(value, &mut scalars);
    }
    if parsed.is_empty() || scalars.is_empty() {
        return "reuse: no JSON line".into();
    }
    let (at, mut value) = parsed[rng.below(parsed.len())].clone();
    let replacement = scalars[rng.below(scalars.len())].to_string();
    let path = replace_node(&mut lines[at], &mut value, &replacement, rng);
    let shown: String = replacement.chars().take(40).collect();
    format!("line {}: {path} = {shown} (from elsewhere)", at + 1)
}

/// The short strings and the numbers in `value` (ids, call numbers, times, names).
fn collect_scalars(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::String(s) if s.len() <= 64 => out.push(value.clone()),
        Value::Number(_) => out.push(value.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_scalars(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_scalars(v, out)),
        _ => {}
    }
}

/// Writes into `line` the JSON `value` with one node, chosen at random, replaced by the JSON
/// text `replacement` (which may be more than a value may be: thousands deep, out of range);
/// returns the node's path.
fn replace_node(line: &mut Vec<u8>, value: &mut Value, replacement: &str, rng: &mut Rng) -> String {
    const MARK: &str = "\u{1}fuzz-mark\u{1}";
    let mut nodes = 0;
    count_nodes(value, &mut nodes);
    let path = mark_node(value, rng.below(nodes), MARK);
    let text = value.to_string().replace(
        &serde_json::to_string(MARK).unwrap_or_default(),
        replacement,
    );
    *line = text.into_bytes();
    path
}

fn count_nodes(value: &Value, n: &mut usize) {
    *n += 1;
    match value {
        Value::Array(items) => items.iter().for_each(|v| count_nodes(v, n)),
        Value::Object(map) => map.values().for_each(|v| count_nodes(v, n)),
        _ => {}
    }
}

/// Replaces the `target`-th node (pre-order) with the string `mark`; returns its path.
fn mark_node(value: &mut Value, target: usize, mark: &str) -> String {
    fn walk(value: &mut Value, left: &mut usize, mark: &str, path: &mut String) -> bool {
        if *left == 0 {
            *value = Value::String(mark.to_owned());
            return true;
        }
        *left -= 1;
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    if walk(item, left, mark, path) {
                        return true;
                    }
                    path.truncate(len);
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter_mut() {
                    let len = path.len();
                    path.push_str(&format!(".{key}"));
                    if walk(item, left, mark, path) {
                        return true;
                    }
                    path.truncate(len);
                }
            }
            _ => {}
        }
        false
    }
    let mut path = String::from("$");
    let mut left = target;
    walk(value, &mut left, mark, &mut path);
    path
}

/// Replaces the value of one `key = value` line with a hostile TOML value.
fn replace_toml_value(lines: &mut [Vec<u8>], rng: &mut Rng) -> String {
    let assignments: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(&b'=') && !lines[i].starts_with(b"#"))
        .collect();
    if assignments.is_empty() {
        return "replace: no assignment".into();
    }
    let at = assignments[rng.below(assignments.len())];
    let Some(eq) = lines[at].iter().position(|b| *b == b'=') else {
        return "replace: no assignment".into();
    };
    let replacement = match rng.below(12) {
        0 => "-1".to_owned(),
        1 => "0".to_owned(),
        2 => "18446744073709551616".to_owned(),
        3 => "1e308".to_owned(),
        4 => "nan".to_owned(),
        5 => "true".to_owned(),
        6 => "\"\"".to_owned(),
        7 => format!("\"{}\"", "x".repeat(1 << 20)),
        8 => "[]".to_owned(),
        9 => "{}".to_owned(),
        10 => {
            let depth = 64 + rng.below(4000);
            format!("{}{}", "[".repeat(depth), "]".repeat(depth))
        }
        _ => {
            let depth = 64 + rng.below(4000);
            format!("{}1{}", "{a=".repeat(depth), "}".repeat(depth))
        }
    };
    let mut line = lines[at][..=eq].to_vec();
    line.push(b' ');
    line.extend_from_slice(replacement.as_bytes());
    lines[at] = line;
    let shown: String = replacement.chars().take(24).collect();
    format!("line {}: value = {shown}", at + 1)
}
