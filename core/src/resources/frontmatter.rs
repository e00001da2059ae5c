//! A markdown file's YAML frontmatter as Pi 1.5.2 reads it (`utils/frontmatter.js`): the BOM
//! dropped, line ends made `\n`, the block between a leading `---` and the next line starting
//! with `---` parsed as YAML, the rest trimmed as the body.
//!
//! Pi parses the block with the `yaml` package. Here the part of YAML frontmatter is read that
//! skill and template files use: a block mapping (nested mappings, sequences, compact mappings
//! and sequences in sequence items, explicit `? key` entries), plain, single- and
//! double-quoted scalars (spanning lines too), folded (`>`) and literal (`|`) scalars with
//! their chomping and indentation indicators, flow collections (nested, spanning lines),
//! anchors, aliases and the standard tags, comments, the `...` document end, and the core
//! schema's nulls, booleans and numbers. What YAML refuses and such files hit (a plain value
//! holding `: `, a duplicate key, a reserved indicator, text after a quoted value, tabs as
//! indentation) is refused as Pi refuses it; the error's wording is not Pi's (that is the
//! `yaml` package's own).

mod flow;

use serde_json::{Map, Number, Value};

/// A file's frontmatter (a mapping, or whatever else the block held) and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct Frontmatter {
    /// `{}` when the file has none (or an empty block).
    pub data: Value,
    pub body: String,
}

impl Frontmatter {
    /// The value under `key` when the frontmatter is a mapping.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.as_object().and_then(|map| map.get(key))
    }

    /// The value under `key` when it is a string (Pi's `typeof x === "string"`).
    pub fn string(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// Why a frontmatter block is not YAML; `line` counts from the block's first line (1).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} of the frontmatter")]
pub struct FrontmatterError {
    pub line: usize,
    pub message: String,
}

/// Splits `content` into frontmatter and body (`parseFrontmatter`).
pub fn parse_frontmatter(content: &str) -> Result<Frontmatter, FrontmatterError> {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    let normalized = content.replace("\r\n", "\n").replace('\r', "\n");
    if !normalized.starts_with("---") {
        return Ok(Frontmatter {
            data: Value::Object(Map::new()),
            body: normalized,
        });
    }
    let Some(end) = normalized[3..].find("\n---").map(|at| at + 3) else {
        return Ok(Frontmatter {
            data: Value::Object(Map::new()),
            body: normalized,
        });
    };
    let yaml = normalized.get(4..end).unwrap_or("");
    let body = js_trim(&normalized[end + 4..]).to_owned();
    let data = if yaml.is_empty() {
        Value::Null
    } else {
        parse_yaml(yaml)?
    };
    let data = if data.is_null() {
        Value::Object(Map::new())
    } else {
        data
    };
    Ok(Frontmatter { data, body })
}

/// The body alone (`stripFrontmatter`).
pub fn strip_frontmatter(content: &str) -> Result<String, FrontmatterError> {
    parse_frontmatter(content).map(|parsed| parsed.body)
}

/// JavaScript's `String.prototype.trim`.
pub(crate) fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_space)
}

fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

/// One line of the block: its indentation and text (comments kept; see [`is_blank`]).
struct Line<'a> {
    number: usize,
    indent: usize,
    text: &'a str,
}

fn is_blank(text: &str) -> bool {
    let text = text.trim_matches([' ', '\t']);
    text.is_empty() || text.starts_with('#')
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    /// The values named by `&anchor`, for `*alias`.
    anchors: Map<String, Value>,
}

fn error(line: usize, message: &str) -> FrontmatterError {
    FrontmatterError {
        line,
        message: message.to_owned(),
    }
}

fn parse_yaml(yaml: &str) -> Result<Value, FrontmatterError> {
    // A final line break ends the last line; it does not start an empty one.
    let yaml = yaml.strip_suffix('\n').unwrap_or(yaml);
    let mut lines: Vec<Line> = yaml
        .split('\n')
        .enumerate()
        .map(|(i, text)| {
            let body = text.trim_start_matches(' ');
            Line {
                number: i + 1,
                indent: text.len() - body.len(),
                text: body,
            }
        })
        .collect();
    // `...` ends the document; only comments may follow it.
    if let Some(end) = lines
        .iter()
        .position(|l| l.indent == 0 && (l.text == "..." || l.text.starts_with("... ")))
    {
        if let Some(after) = lines[end + 1..].iter().find(|l| !is_blank(l.text)) {
            return Err(error(after.number, "Content after the document end marker"));
        }
        lines.truncate(end);
    }
    let mut parser = Parser {
        lines,
        at: 0,
        anchors: Map::new(),
    };
    parser.skip_blank();
    let Some(first) = parser.lines.get(parser.at) else {
        return Ok(Value::Null);
    };
    let indent = first.indent;
    let value = parser.block(indent)?;
    parser.skip_blank();
    match parser.lines.get(parser.at) {
        Some(line) => Err(error(line.number, "Unexpected content after the document")),
        None => Ok(value),
    }
}

impl<'a> Parser<'a> {
    fn skip_blank(&mut self) {
        while self.lines.get(self.at).is_some_and(|l| is_blank(l.text)) {
            self.at += 1;
        }
    }

    /// The next non-blank line's indentation and text.
    fn peek(&mut self) -> Option<(usize, &'a str)> {
        self.skip_blank();
        self.lines.get(self.at).map(|l| (l.indent, l.text))
    }

    /// A block node whose first line is at `indent`: a sequence, a mapping or a scalar.
    fn block(&mut self, indent: usize) -> Result<Value, FrontmatterError> {
        let Some((_, text)) = self.peek() else {
            return Ok(Value::Null);
        };
        if text == "-" || text.starts_with("- ") {
            return self.sequence(indent);
        }
        if split_key(text).is_some() {
            return self.mapping(indent);
        }
        let number = self.lines[self.at].number;
        self.at += 1;
        self.scalar(text, number, indent.saturating_sub(1))
    }

    fn sequence(&mut self, indent: usize) -> Result<Value, FrontmatterError> {
        let mut items = Vec::new();
        while let Some((at, text)) = self.peek() {
            if at < indent || !(text == "-" || text.starts_with("- ")) {
                break;
            }
            if at > indent {
                return Err(error(
                    self.lines[self.at].number,
                    "Bad indentation of a sequence",
                ));
            }
            tab_indented(text, self.lines[self.at].number)?;
            let number = self.lines[self.at].number;
            self.at += 1;
            let rest = text[1..].trim_start_matches([' ', '\t']);
            if is_blank(rest) {
                match self.peek() {
                    Some((next, _)) if next > indent => items.push(self.block(next)?),
                    _ => items.push(Value::Null),
                }
            } else if split_key(rest).is_some() || rest == "-" || rest.starts_with("- ") {
                // A compact mapping or sequence: the item's node starts at its own column.
                let column = self.lines[self.at - 1].indent + (text.len() - rest.len());
                self.at -= 1;
                self.lines[self.at] = Line {
                    number,
                    indent: column,
                    text: rest,
                };
                items.push(self.block(column)?);
            } else {
                items.push(self.scalar(rest, number, indent)?);
            }
        }
        Ok(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize) -> Result<Value, FrontmatterError> {
        let mut map = Map::new();
        while let Some((at, text)) = self.peek() {
            let number = self.lines[self.at].number;
            if at < indent {
                break;
            }
            if at > indent {
                return Err(error(number, "Bad indentation of a mapping entry"));
            }
            tab_indented(text, number)?;
            let (key, rest) = if let Some(explicit) = text.strip_prefix("? ") {
                // An explicit key (`? key`), its value on a following `: value` line.
                let key = self.scalar(explicit.trim_start_matches([' ', '\t']), number, indent)?;
                self.at += 1;
                match self.peek() {
                    Some((at, value))
                        if at == indent && (value == ":" || value.starts_with(": ")) =>
                    {
                        (key, &value[1..])
                    }
                    _ => {
                        self.at -= 1;
                        (key, "")
                    }
                }
            } else {
                let Some((key, rest)) = split_key(text) else {
                    return Err(error(
                        number,
                        "Implicit map keys need to be followed by map values",
                    ));
                };
                (self.scalar(key, number, indent)?, rest)
            };
            let key = match key {
                Value::String(key) => key,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            if map.contains_key(&key) {
                return Err(error(number, "Map keys must be unique"));
            }
            self.at += 1;
            let rest = rest.trim_start_matches([' ', '\t']);
            let value = if is_blank(rest) {
                match self.peek() {
                    Some((next, _)) if next > indent => self.block(next)?,
                    Some((next, next_text))
                        if next == indent && (next_text == "-" || next_text.starts_with("- ")) =>
                    {
                        self.sequence(indent)?
                    }
                    _ => Value::Null,
                }
            } else if rest.starts_with('|') || rest.starts_with('>') {
                self.block_scalar(rest, number, indent)?
            } else {
                self.scalar(rest, number, indent)?
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    /// A literal (`|`) or folded (`>`) scalar: the lines indented past `indent`.
    fn block_scalar(
        &mut self,
        header: &str,
        number: usize,
        indent: usize,
    ) -> Result<Value, FrontmatterError> {
        let header = strip_comment(header).trim_end_matches([' ', '\t']);
        let folded = header.starts_with('>');
        let mut chomp = Chomp::Clip;
        let mut explicit = None;
        for c in header[1..].chars() {
            match c {
                '-' => chomp = Chomp::Strip,
                '+' => chomp = Chomp::Keep,
                '1'..='9' if explicit.is_none() => explicit = c.to_digit(10),
                _ => return Err(error(number, "Block scalars header is not valid")),
            }
        }
        let mut lines: Vec<String> = Vec::new();
        // An indentation indicator counts from the parent node's indentation.
        let mut content_indent = explicit.map(|n| indent + n as usize);
        while let Some(line) = self.lines.get(self.at) {
            let empty = line.text.trim_matches([' ', '\t']).is_empty();
            if !empty && line.indent <= indent {
                break;
            }
            if empty {
                lines.push(String::new());
            } else {
                let at = *content_indent.get_or_insert(line.indent);
                if line.indent < at {
                    break;
                }
                let raw = self.raw(self.at);
                lines.push(raw[at.min(raw.len())..].to_owned());
            }
            self.at += 1;
        }
        let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &lines[..lines.len() - trailing];
        let mut text = if folded {
            fold(content)
        } else {
            content.join("\n")
        };
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip if !content.is_empty() => text.push('\n'),
            Chomp::Clip => {}
            Chomp::Keep => {
                if !content.is_empty() {
                    text.push('\n');
                }
                text.push_str(&"\n".repeat(trailing));
            }
        }
        Ok(Value::String(text))
    }

    /// The line `at` as written (its indentation included).
    fn raw(&self, at: usize) -> String {
        let line = &self.lines[at];
        format!("{}{}", " ".repeat(line.indent), line.text)
    }

    /// A quoted scalar from `text` (its opening quote first), going on over the following
    /// lines until its closing quote: each line break folded into a space, each empty line
    /// kept as a line break, and in a double-quoted one a `\` at a line's end joining the
    /// lines without a space.
    fn quoted_lines(
        &mut self,
        text: &str,
        quote: char,
        number: usize,
        indent: usize,
    ) -> Result<String, FrontmatterError> {
        let mut joined = text[1..].to_owned();
        loop {
            if let Some(value) = quoted(&joined, quote, number)? {
                return Ok(value);
            }
            let mut breaks = 0;
            let next = loop {
                match self.lines.get(self.at) {
                    None => return Err(error(number, "Missing closing quote")),
                    Some(line) if line.text.trim_matches([' ', '\t']).is_empty() => {
                        breaks += 1;
                        self.at += 1;
                    }
                    Some(line) => break line,
                };
            };
            if next.indent <= indent && next.text.starts_with(['-', '.']) {
                return Err(error(number, "Missing closing quote"));
            }
            let part = next.text.trim_matches([' ', '\t']);
            self.at += 1;
            let kept = joined.trim_end_matches([' ', '\t']);
            let escapes = kept.len() - kept.trim_end_matches('\\').len();
            if quote == '"' && escapes % 2 == 1 && breaks == 0 {
                joined.truncate(kept.len() - 1);
            } else {
                joined.truncate(kept.len());
                if breaks == 0 {
                    joined.push(' ');
                } else {
                    joined.push_str(&"\n".repeat(breaks));
                }
            }
            joined.push_str(part);
        }
    }

    /// A flow collection from `text`, going on over the following lines until its brackets
    /// close; the lines are joined with spaces.
    fn flow_lines(
        &mut self,
        text: &str,
        number: usize,
        indent: usize,
    ) -> Result<String, FrontmatterError> {
        let mut joined = strip_comment(text).trim_end_matches([' ', '\t']).to_owned();
        while !flow::closed(&joined) {
            let Some(line) = self.lines.get(self.at) else {
                return Err(error(
                    number,
                    "Missing closing bracket of a flow collection",
                ));
            };
            let part = line.text.trim_matches([' ', '\t']);
            if !part.is_empty() && line.indent <= indent && !part.starts_with([']', '}']) {
                return Err(error(
                    number,
                    "Missing closing bracket of a flow collection",
                ));
            }
            self.at += 1;
            joined.push(' ');
            joined.push_str(strip_comment(part).trim_end_matches([' ', '\t']));
        }
        Ok(joined)
    }

    /// A scalar with an anchor (`&name`) or a tag (`!!str`, `!!int`, ...) before it; the
    /// standard tags convert the value as the `yaml` package does, an unknown tag keeps it as
    /// text.
    fn with_properties(
        &mut self,
        text: &str,
        number: usize,
        indent: usize,
    ) -> Result<Value, FrontmatterError> {
        let mut rest = text;
        let mut anchor = None;
        let mut tag = None;
        while rest.starts_with(['&', '!']) {
            let end = rest.find([' ', '\t']).unwrap_or(rest.len());
            if rest.starts_with('&') {
                anchor = Some(rest[1..end].to_owned());
            } else {
                tag = Some(&rest[..end]);
            }
            rest = rest[end..].trim_start_matches([' ', '\t']);
        }
        if is_blank(rest) {
            return Err(error(
                number,
                "Anchors or tags on block nodes are not read here",
            ));
        }
        let value = self.scalar(rest, number, indent)?;
        let value = match tag {
            None => value,
            // `!!str`, and a tag the `yaml` package does not know (it warns and keeps the text).
            Some(tag) if !matches!(tag, "!!int" | "!!float" | "!!bool" | "!!null") => match value {
                Value::String(s) => Value::String(s),
                _ => Value::String(strip_comment(rest).trim_end_matches([' ', '\t']).to_owned()),
            },
            Some(_) => {
                let resolved = match &value {
                    Value::String(s) => plain(s),
                    other => other.clone(),
                };
                let fits = match tag {
                    Some("!!int") => resolved.is_i64() || resolved.is_u64(),
                    Some("!!float") => resolved.is_number(),
                    Some("!!bool") => resolved.is_boolean(),
                    _ => resolved.is_null(),
                };
                if !fits {
                    return Err(error(number, "Value does not match its tag"));
                }
                resolved
            }
        };
        if let Some(name) = anchor {
            self.anchors.insert(name, value.clone());
        }
        Ok(value)
    }

    /// A scalar starting on line `number` with `text`; a plain one goes on over the following
    /// lines indented past `indent`.
    fn scalar(
        &mut self,
        text: &str,
        number: usize,
        indent: usize,
    ) -> Result<Value, FrontmatterError> {
        if let Some(name) = text.strip_prefix('*') {
            let name = strip_comment(name).trim_end_matches([' ', '\t']);
            return self
                .anchors
                .get(name)
                .cloned()
                .ok_or_else(|| error(number, "Aliased anchor not found"));
        }
        if text.starts_with(['&', '!']) {
            return self.with_properties(text, number, indent);
        }
        if let Some(q @ ('"' | '\'')) = text.chars().next() {
            return self
                .quoted_lines(text, q, number, indent)
                .map(Value::String);
        }
        if text.starts_with('[') || text.starts_with('{') {
            let whole = self.flow_lines(text, number, indent)?;
            return flow::parse(&whole, number);
        }
        if text.starts_with(['@', '`', '%', '|', '>'])
            || text == "-"
            || text.starts_with("- ")
            || text.starts_with(": ")
            || text == ":"
            || text.starts_with("? ")
        {
            return Err(error(number, "Plain value cannot start with an indicator"));
        }
        let first = strip_comment(text).trim_end_matches([' ', '\t']);
        if split_key(first).is_some() {
            return Err(error(
                number,
                "Nested mappings are not allowed in compact mappings",
            ));
        }
        let mut folded = first.to_owned();
        let mut blank_run = 0;
        // A comment ends a plain scalar.
        let commented = first.len() < text.trim_end_matches([' ', '\t']).len();
        while let (false, Some(line)) = (commented, self.lines.get(self.at)) {
            let trimmed = line.text.trim_matches([' ', '\t']);
            if trimmed.is_empty() {
                blank_run += 1;
                self.at += 1;
                continue;
            }
            if line.indent <= indent || trimmed.starts_with('#') {
                break;
            }
            let part = strip_comment(trimmed).trim_end_matches([' ', '\t']);
            if split_key(part).is_some() {
                return Err(error(
                    line.number,
                    "Nested mappings are not allowed in compact mappings",
                ));
            }
            if blank_run == 0 {
                folded.push(' ');
            } else {
                folded.push_str(&"\n".repeat(blank_run));
            }
            blank_run = 0;
            folded.push_str(part);
            self.at += 1;
            if part.len() < trimmed.len() {
                break;
            }
        }
        Ok(plain(&folded))
    }
}

/// YAML refuses tabs in a line's indentation.
fn tab_indented(text: &str, number: usize) -> Result<(), FrontmatterError> {
    if text.starts_with('\t') {
        return Err(error(number, "Tabs are not allowed as indentation"));
    }
    Ok(())
}

enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// Folded block lines: a line break between two text lines becomes a space, each empty line a
/// line break; more-indented lines keep their breaks.
fn fold(lines: &[String]) -> String {
    let mut out = String::new();
    let mut previous_text = false;
    let mut previous_indented = false;
    let mut pending_breaks = 0;
    for line in lines {
        if line.is_empty() {
            pending_breaks += 1;
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        if previous_text {
            if pending_breaks > 0 {
                out.push_str(&"\n".repeat(pending_breaks));
            } else if indented || previous_indented {
                out.push('\n');
            } else {
                out.push(' ');
            }
        } else {
            out.push_str(&"\n".repeat(pending_breaks));
        }
        pending_breaks = 0;
        out.push_str(line);
        previous_text = true;
        previous_indented = indented;
    }
    out
}

/// `key: rest` when `text` is a mapping entry: a `:` followed by a space, a tab or the line's
/// end, outside quotes (a quoted key is a whole quoted scalar).
fn split_key(text: &str) -> Option<(&str, &str)> {
    let search_from = match text.chars().next() {
        Some(q @ ('"' | '\'')) => text[1..].find(q).map(|end| end + 2)?,
        _ => 0,
    };
    let bytes = text.as_bytes();
    let mut i = search_from;
    while i < bytes.len() {
        if bytes[i] == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            return None;
        }
        if bytes[i] == b':' && (i + 1 == bytes.len() || matches!(bytes[i + 1], b' ' | b'\t')) {
            let key = text[..i].trim_end_matches([' ', '\t']);
            return Some((key, &text[i + 1..]));
        }
        i += 1;
    }
    None
}

/// `text` up to a comment (` #` or a tab before `#`).
fn strip_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    for i in 1..bytes.len() {
        if bytes[i] == b'#' && matches!(bytes[i - 1], b' ' | b'\t') {
            return &text[..i];
        }
    }
    text
}

/// The rest of a quoted scalar (after its opening quote) when it ends in `rest` with nothing
/// but a comment after it; `None` when its closing quote is not in `rest`.
pub(crate) fn quoted(
    rest: &str,
    quote: char,
    number: usize,
) -> Result<Option<String>, FrontmatterError> {
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && rest[i + 1..].starts_with('\'') {
                out.push('\'');
                chars.next();
                continue;
            }
            let after = rest[i + 1..].trim_start_matches([' ', '\t']);
            if after.is_empty()
                || (after.starts_with('#') && rest[i + 1..].starts_with([' ', '\t']))
            {
                return Ok(Some(out));
            }
            return Err(error(number, "Unexpected scalar at node end"));
        }
        if c == '\\' && quote == '"' {
            let Some((_, escaped)) = chars.next() else {
                break;
            };
            match escaped {
                'n' => out.push('\n'),
                't' | '\t' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' | '\\' | '/' | ' ' => out.push(escaped),
                'u' | 'x' | 'U' => {
                    let width = match escaped {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let start = i + 2;
                    let hex = rest.get(start..start + width).unwrap_or("");
                    let code = u32::from_str_radix(hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| error(number, "Invalid escape sequence"))?;
                    out.push(code);
                    for _ in 0..width {
                        chars.next();
                    }
                }
                _ => return Err(error(number, "Invalid escape sequence")),
            }
            continue;
        }
        out.push(c);
    }
    Ok(None)
}

/// A plain scalar under YAML 1.2's core schema.
pub(crate) fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "-.inf" | ".nan" | ".NaN" | ".NAN" => {
            return Value::Null
        }
        _ => {}
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(n) = u64::from_str_radix(hex, 16) {
            return Value::Number(n.into());
        }
    }
    if let Some(oct) = text.strip_prefix("0o") {
        if let Ok(n) = u64::from_str_radix(oct, 8) {
            return Value::Number(n.into());
        }
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.trim_start_matches('+').parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    let numeric = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.');
    if numeric {
        if let Ok(n) = text.parse::<f64>() {
            return js_number(n);
        }
    }
    Value::String(text.to_owned())
}

/// A number as `JSON.stringify` writes a JavaScript number: an integral one without a
/// fraction (`1e3` is `1000`), one that is not finite as `null`.
fn js_number(n: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= SAFE {
        // Integral and within 2^53, so the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Value::Number((n as i64).into());
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}
