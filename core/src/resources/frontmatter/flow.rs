//! YAML flow collections (`[a, b]`, `{k: v}`, nested, after their lines are joined) as the
//! `yaml` package reads them in frontmatter: plain scalars end at `,` `[` `]` `{` `}` (and a
//! key at `: `), quoted ones as in block context, a mapping entry without a value is null.

use serde_json::{Map, Value};

use super::{error, plain, quoted, FrontmatterError};

/// Whether `text` holds as many closing brackets as opening ones (quoted text aside), so a
/// flow collection spanning lines has been read whole.
pub(super) fn closed(text: &str) -> bool {
    let mut depth = 0i32;
    let mut quote = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('"'), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => {
                if q == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                } else {
                    quote = None;
                }
            }
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    depth <= 0
}

/// The flow collection `text` (a whole one, possibly with a comment after it).
pub(super) fn parse(text: &str, number: usize) -> Result<Value, FrontmatterError> {
    let mut reader = Reader {
        text,
        at: 0,
        number,
    };
    let value = reader.collection()?;
    reader.spaces();
    let rest = &text[reader.at..];
    if rest.is_empty() || rest.starts_with('#') && text[..reader.at].ends_with([' ', '\t']) {
        Ok(value)
    } else {
        Err(error(number, "Unexpected content after a flow collection"))
    }
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
    number: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start_matches([' ', '\t']).len();
    }

    fn fail(&self, message: &str) -> FrontmatterError {
        error(self.number, message)
    }

    /// `[...]` or `{...}` starting at the reader's position.
    fn collection(&mut self) -> Result<Value, FrontmatterError> {
        let mapping = self.rest().starts_with('{');
        let close = if mapping { '}' } else { ']' };
        self.at += 1;
        let mut items = Vec::new();
        let mut map = Map::new();
        loop {
            self.spaces();
            if self.rest().starts_with(close) {
                self.at += 1;
                break;
            }
            if self.rest().is_empty() {
                return Err(self.fail("Missing closing bracket of a flow collection"));
            }
            let node = self.node(mapping)?;
            self.spaces();
            if mapping {
                let value = if let Some(after) = self.rest().strip_prefix(':') {
                    if !after.is_empty() && !after.starts_with([' ', '\t', ',', '}']) {
                        return Err(self.fail("Flow mapping key needs a space after its colon"));
                    }
                    self.at += 1;
                    self.spaces();
                    if self.rest().starts_with([',', '}']) {
                        Value::Null
                    } else {
                        self.node(true)?
                    }
                } else {
                    Value::Null
                };
                let key = match node {
                    Value::String(key) => key,
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                if map.contains_key(&key) {
                    return Err(self.fail("Map keys must be unique"));
                }
                map.insert(key, value);
            } else {
                if self.rest().starts_with(": ") {
                    return Err(self.fail("Mappings inside flow sequences are not read here"));
                }
                items.push(node);
            }
            self.spaces();
            if self.rest().starts_with(',') {
                self.at += 1;
            } else if !self.rest().starts_with(close) {
                return Err(self.fail("Missing comma between flow collection items"));
            }
        }
        Ok(if mapping {
            Value::Object(map)
        } else {
            Value::Array(items)
        })
    }

    /// One item: a nested collection, a quoted scalar or a plain one.
    fn node(&mut self, in_mapping: bool) -> Result<Value, FrontmatterError> {
        let rest = self.rest();
        if rest.starts_with(['[', '{']) {
            return self.collection();
        }
        if let Some(q @ ('"' | '\'')) = rest.chars().next() {
            let body = &rest[1..];
            let end = quoted_end(body, q).ok_or_else(|| self.fail("Missing closing quote"))?;
            let value = quoted(&body[..=end], q, self.number)?
                .ok_or_else(|| self.fail("Missing closing quote"))?;
            self.at += end + 2;
            return Ok(Value::String(value));
        }
        let bytes = rest.as_bytes();
        let mut end = 0;
        while end < bytes.len() {
            let b = bytes[end];
            if matches!(b, b',' | b'[' | b']' | b'{' | b'}') {
                break;
            }
            if b == b':'
                && (in_mapping || end + 1 < bytes.len())
                && (end + 1 == bytes.len()
                    || matches!(bytes[end + 1], b' ' | b'\t' | b',' | b'}' | b']'))
            {
                break;
            }
            if b == b'#' && end > 0 && matches!(bytes[end - 1], b' ' | b'\t') {
                return Err(self.fail("Comments inside flow collections are not read here"));
            }
            end += 1;
        }
        let value = plain(rest[..end].trim_end_matches([' ', '\t']));
        self.at += end;
        Ok(value)
    }
}

/// The index in `body` (after an opening quote) of the quote that closes it.
fn quoted_end(body: &str, quote: char) -> Option<usize> {
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if quote == '"' && c == '\\' {
            chars.next();
        } else if c == quote {
            if quote == '\'' && chars.peek().map(|&(_, n)| n) == Some('\'') {
                chars.next();
            } else {
                return Some(i);
            }
        }
    }
    None
}
