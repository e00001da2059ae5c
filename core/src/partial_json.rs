//! Parsing of tool-call arguments while they stream in (pi-ai `parseStreamingJson`).
//!
//! A tool call's arguments arrive as JSON fragments. After every fragment Pi re-parses the text so
//! far: strictly if it can (after repairing raw control characters and bad escapes in strings),
//! otherwise with the lenient rules of the `partial-json` package, and `{}` when nothing works.
//! This module reproduces those rules so that in-progress arguments look exactly as in Pi.

use serde_json::{Map, Value};

/// The arguments object for the JSON text received so far. Never fails: `{}` when nothing parses.
pub fn parse_streaming_json(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Map::new());
    }
    if let Some(value) = parse_with_repair(text) {
        return value;
    }
    let lenient = parse_partial(text).or_else(|| {
        let repaired = repair_json(text);
        parse_partial(&repaired)
    });
    match lenient {
        Some(Value::Null) | None => Value::Object(Map::new()),
        Some(value) => value,
    }
}

/// pi-ai's error when a tool call's complete arguments are valid JSON but not an object.
pub const NOT_AN_OBJECT: &str = "Tool arguments must be a JSON object";

/// pi-ai's `parseToolCallArguments`, run on a tool call's complete arguments text when its block
/// ends: the arguments object, or `{}` and the `argumentsError` that Pi 1.5.2 keeps on the call
/// (Node's `JSON.parse` message and the text received) when the text does not parse (after
/// repair) or is not an object. Empty text is `{}`.
pub fn parse_tool_call_arguments(text: &str) -> (Value, Option<String>) {
    if text.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    let error = match parse_json_with_repair(text) {
        Ok(Value::Object(map)) => return (Value::Object(map), None),
        Ok(_) => NOT_AN_OBJECT.to_owned(),
        Err(message) => message,
    };
    (
        Value::Object(Map::new()),
        Some(format!("{error}\n\nReceived arguments:\n{text}")),
    )
}

/// `JSON.parse`: the value, or Node 22's message. Text Node accepts but serde_json does not (nested
/// deeper than its 128 levels) is read by the lenient parser, which reads valid JSON whole.
fn json_parse(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).or_else(|error| match crate::json_error::node22_parse_error(text) {
        Some(message) => Err(message),
        None => parse_partial(text).ok_or_else(|| error.to_string()),
    })
}

/// pi-ai's `parseJsonWithRepair`: `JSON.parse`, retried once on the repaired text when the
/// repair changed anything; the error is Node 22's message, of the repaired text's parse when
/// there was one.
pub fn parse_json_with_repair(text: &str) -> Result<Value, String> {
    json_parse(text).or_else(|first| {
        let repaired = repair_json(text);
        if repaired == text {
            Err(first)
        } else {
            json_parse(&repaired)
        }
    })
}

/// Strict parse, retried once on the repaired text when the repair changed anything.
pub fn parse_with_repair(text: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    let repaired = repair_json(text);
    if repaired != text {
        return serde_json::from_str(&repaired).ok();
    }
    None
}

/// Escapes raw control characters inside string literals and doubles backslashes that do not
/// start a valid JSON escape.
pub fn repair_json(json: &str) -> String {
    let chars: Vec<char> = json.chars().collect();
    let mut out = String::with_capacity(json.len() + 8);
    let mut in_string = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_string {
            out.push(c);
            if c == '"' {
                in_string = true;
            }
            i += 1;
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.get(i + 1) {
                None => out.push_str("\\\\"),
                Some('u') if is_hex4(&chars, i + 2) => {
                    out.push_str("\\u");
                    out.extend(&chars[i + 2..i + 6]);
                    i += 5;
                }
                Some(&next) if matches!(next, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push('\\');
                    out.push(next);
                    i += 1;
                }
                Some(_) => out.push_str("\\\\"),
            },
            c if (c as u32) < 0x20 => match c {
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                other => out.push_str(&format!("\\u{:04x}", other as u32)),
            },
            c => out.push(c),
        }
        i += 1;
    }
    out
}

fn is_hex4(chars: &[char], from: usize) -> bool {
    chars.len() >= from + 4 && chars[from..from + 4].iter().all(|c| c.is_ascii_hexdigit())
}

/// The `partial-json` rules with every partial type allowed. `None` where that parser throws.
fn parse_partial(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let mut parser = Partial {
        s: trimmed.as_bytes(),
        src: trimmed,
        i: 0,
    };
    parser.any().ok()
}

/// Why the lenient parser gave up; the object and array rules catch it and keep what they have.
#[derive(Debug)]
struct Stop;

struct Partial<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
}

impl Partial<'_> {
    fn at(&self, i: usize) -> Option<u8> {
        self.s.get(i).copied()
    }

    fn skip_blank(&mut self) {
        while matches!(self.at(self.i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &str, allow_short: bool) -> bool {
        let rest = &self.s[self.i.min(self.s.len())..];
        let full = rest.starts_with(word.as_bytes());
        let short = allow_short && rest.len() < word.len() && word.as_bytes().starts_with(rest);
        if full || short {
            self.i += word.len();
        }
        full || short
    }

    fn any(&mut self) -> Result<Value, Stop> {
        self.skip_blank();
        match self.at(self.i) {
            None => Err(Stop),
            Some(b'"') => self.string().map(Value::String),
            Some(b'{') => Ok(self.object()),
            Some(b'[') => Ok(self.array()),
            Some(_) => {
                if self.literal("null", true) {
                    return Ok(Value::Null);
                }
                if self.literal("true", true) {
                    return Ok(Value::Bool(true));
                }
                if self.literal("false", true) {
                    return Ok(Value::Bool(false));
                }
                // JSON.stringify writes non-finite numbers as null.
                if self.literal("Infinity", true) {
                    return Ok(Value::Null);
                }
                let rest_len = self.s.len() - self.i;
                if rest_len > 1 && self.literal("-Infinity", true) {
                    return Ok(Value::Null);
                }
                if self.literal("NaN", true) {
                    return Ok(Value::Null);
                }
                self.number()
            }
        }
    }

    /// Steps over what should be the `:` after a key as JavaScript steps over one UTF-16 unit:
    /// a whole character of the Basic Multilingual Plane, but into the middle of one beyond it
    /// (JavaScript lands on its low surrogate), where no value starts.
    fn step_utf16_unit(&mut self) {
        self.i += match self.at(self.i) {
            Some(lead) if lead >= 0xF0 => 1,
            Some(lead) if lead >= 0xE0 => 3,
            Some(lead) if lead >= 0xC0 => 2,
            _ => 1,
        };
    }

    /// Whether a value could start at `i`: not inside a character, where JavaScript would be on
    /// a lone low surrogate, which no JSON text starts with.
    fn on_char_boundary(&self) -> bool {
        self.src.is_char_boundary(self.i.min(self.src.len()))
    }

    fn string(&mut self) -> Result<String, Stop> {
        if !self.on_char_boundary() {
            return Err(Stop);
        }
        let start = self.i;
        let mut escape = false;
        self.i += 1;
        while let Some(c) = self.at(self.i) {
            if c == b'"' && !(escape && self.at(self.i - 1) == Some(b'\\')) {
                break;
            }
            escape = c == b'\\' && !escape;
            self.i += 1;
        }
        let cut = usize::from(escape);
        if self.at(self.i) == Some(b'"') {
            self.i += 1;
            let end = self.i - cut;
            return parse_str_literal(&self.src[start..end]).ok_or(Stop);
        }
        let body = &self.src[start..self.i - cut];
        if let Some(s) = parse_str_literal(&format!("{body}\"")) {
            return Ok(s);
        }
        let last_backslash = self.src.rfind('\\').unwrap_or(start).max(start);
        parse_str_literal(&format!("{}\"", &self.src[start..last_backslash])).ok_or(Stop)
    }

    fn object(&mut self) -> Value {
        self.i += 1;
        self.skip_blank();
        let mut obj = Map::new();
        while self.at(self.i) != Some(b'}') {
            self.skip_blank();
            if self.i >= self.s.len() {
                return Value::Object(obj);
            }
            let Ok(key) = self.string() else {
                return Value::Object(obj);
            };
            self.skip_blank();
            self.step_utf16_unit();
            match self.any() {
                Ok(value) => {
                    obj.insert(key, value);
                }
                Err(Stop) => return Value::Object(obj),
            }
            self.skip_blank();
            if self.at(self.i) == Some(b',') {
                self.i += 1;
            }
        }
        self.i += 1;
        Value::Object(obj)
    }

    fn array(&mut self) -> Value {
        self.i += 1;
        let mut arr = Vec::new();
        while self.at(self.i) != Some(b']') {
            match self.any() {
                Ok(value) => arr.push(value),
                Err(Stop) => return Value::Array(arr),
            }
            self.skip_blank();
            if self.at(self.i) == Some(b',') {
                self.i += 1;
            }
        }
        self.i += 1;
        Value::Array(arr)
    }

    fn number(&mut self) -> Result<Value, Stop> {
        if self.i == 0 {
            if self.src == "-" {
                return Err(Stop);
            }
            return parse_number_prefix(self.src, self.src).ok_or(Stop);
        }
        if !self.on_char_boundary() {
            return Err(Stop);
        }
        let start = self.i;
        if self.at(self.i) == Some(b'-') {
            self.i += 1;
        }
        while let Some(c) = self.at(self.i) {
            if matches!(c, b',' | b']' | b'}') {
                break;
            }
            self.i += 1;
        }
        let text = &self.src[start..self.i];
        if text == "-" {
            return Err(Stop);
        }
        parse_number_prefix(text, &self.src[start..]).ok_or(Stop)
    }
}

/// `JSON.parse(text)`, else `JSON.parse` of `tail` up to its last `e` (a cut exponent).
fn parse_number_prefix(text: &str, tail: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return Some(value);
    }
    let cut = tail.rfind('e').unwrap_or(0);
    serde_json::from_str::<Value>(&tail[..cut]).ok()
}

fn parse_str_literal(literal: &str) -> Option<String> {
    serde_json::from_str::<String>(literal).ok()
}
