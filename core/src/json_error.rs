//! The texts of `JSON.parse` errors as Node (V8) words them. Pi 1.5.2 (on Node 22) answers an
//! unparsable RPC command line with `Failed to parse command: <that text>` and puts the text into a
//! tool call whose streamed arguments did not parse, so clients that match on them see the same
//! words here. Positions count UTF-16 units, as JavaScript strings do.

/// Node 20's (V8) message for `text`, or `None` when V8 would accept it.
pub fn v8_parse_error(text: &str) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut scanner = Scanner {
        units: &units,
        pos: 0,
    };
    match scanner.document() {
        Ok(()) => None,
        Err(failure) => Some(scanner.message(failure)),
    }
}

/// Node 22's message for `text`: Node 20's, with ` (line L column C)` after a position.
pub fn node22_parse_error(text: &str) -> Option<String> {
    let message = v8_parse_error(text)?;
    let Some((_, position)) = message.rsplit_once(" at position ") else {
        return Some(message);
    };
    let Ok(pos) = position.parse::<usize>() else {
        return Some(message);
    };
    let units: Vec<u16> = text.encode_utf16().collect();
    let (mut line, mut line_start) = (1, 0);
    let mut i = 0;
    while i < pos.min(units.len()) {
        let unit = units[i];
        if unit == u16::from(b'\r') || unit == u16::from(b'\n') {
            if unit == u16::from(b'\r')
                && units.get(i + 1) == Some(&u16::from(b'\n'))
                && i + 1 < pos
            {
                i += 1;
            }
            line += 1;
            line_start = i + 1;
        }
        i += 1;
    }
    let column = pos - line_start + 1;
    Some(format!("{message} (line {line} column {column})"))
}

/// What went wrong, at the scanner's position.
enum Failure {
    /// A character that cannot start or continue what was expected.
    Token,
    /// `Unexpected number`: a digit after a leading zero.
    Number,
    /// A message of its own, followed by ` in JSON at position N`.
    At(&'static str),
}

struct Scanner<'a> {
    units: &'a [u16],
    pos: usize,
}

const CONTEXT: usize = 10;

impl Scanner<'_> {
    fn peek(&self) -> Option<u16> {
        self.units.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(0x20 | 0x09 | 0x0a | 0x0d)) {
            self.pos += 1;
        }
    }

    fn document(&mut self) -> Result<(), Failure> {
        self.skip_whitespace();
        self.value()?;
        self.skip_whitespace();
        if self.peek().is_some() {
            return Err(Failure::At(
                "Unexpected non-whitespace character after JSON",
            ));
        }
        Ok(())
    }

    fn value(&mut self) -> Result<(), Failure> {
        match self.peek().map(char_of) {
            Some('"') => self.string(),
            Some('{') => self.object(),
            Some('[') => self.array(),
            Some('t') => self.literal("true"),
            Some('f') => self.literal("false"),
            Some('n') => self.literal("null"),
            Some('-' | '0'..='9') => self.number(),
            _ => Err(Failure::Token),
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), Failure> {
        for expected in word.encode_utf16() {
            if self.peek() != Some(expected) {
                return Err(Failure::Token);
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|u| (0x30..=0x39).contains(&u)) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), Failure> {
        if self.peek() == Some(u16::from(b'-')) {
            self.pos += 1;
            if !self.peek().is_some_and(|u| (0x30..=0x39).contains(&u)) {
                return Err(Failure::At("No number after minus sign"));
            }
        }
        if self.peek() == Some(u16::from(b'0')) {
            self.pos += 1;
            if self.peek().is_some_and(|u| (0x30..=0x39).contains(&u)) {
                return Err(Failure::Number);
            }
        } else {
            self.digits();
        }
        if self.peek() == Some(u16::from(b'.')) {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Failure::At("Unterminated fractional number"));
            }
        }
        if matches!(self.peek().map(char_of), Some('e' | 'E')) {
            self.pos += 1;
            if matches!(self.peek().map(char_of), Some('+' | '-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Failure::At("Exponent part is missing a number"));
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), Failure> {
        self.pos += 1;
        loop {
            let Some(unit) = self.peek() else {
                return Err(Failure::At("Unterminated string"));
            };
            match unit {
                0x22 => {
                    self.pos += 1;
                    return Ok(());
                }
                0x5c => {
                    self.pos += 1;
                    match self.peek().map(char_of) {
                        Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => self.pos += 1,
                        Some('u') => {
                            self.pos += 1;
                            for _ in 0..4 {
                                if !self.peek().is_some_and(|u| char_of(u).is_ascii_hexdigit()) {
                                    return Err(Failure::At("Bad Unicode escape"));
                                }
                                self.pos += 1;
                            }
                        }
                        None => return Err(Failure::At("Unterminated string")),
                        Some(_) => return Err(Failure::At("Bad escaped character")),
                    }
                }
                unit if unit < 0x20 => {
                    return Err(Failure::At("Bad control character in string literal"))
                }
                _ => self.pos += 1,
            }
        }
    }

    fn object(&mut self) -> Result<(), Failure> {
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(u16::from(b'}')) {
            self.pos += 1;
            return Ok(());
        }
        if self.peek() != Some(u16::from(b'"')) {
            return Err(Failure::At("Expected property name or '}'"));
        }
        loop {
            self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(u16::from(b':')) {
                return Err(Failure::At("Expected ':' after property name"));
            }
            self.pos += 1;
            self.skip_whitespace();
            self.value()?;
            self.skip_whitespace();
            match self.peek().map(char_of) {
                Some('}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                    if self.peek() != Some(u16::from(b'"')) {
                        return Err(Failure::At("Expected double-quoted property name"));
                    }
                }
                _ => return Err(Failure::At("Expected ',' or '}' after property value")),
            }
        }
    }

    fn array(&mut self) -> Result<(), Failure> {
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(u16::from(b']')) {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_whitespace();
            match self.peek().map(char_of) {
                Some(']') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                }
                _ => return Err(Failure::At("Expected ',' or ']' after array element")),
            }
        }
    }

    fn message(&self, failure: Failure) -> String {
        let pos = self.pos;
        if self.peek().is_none() && !matches!(failure, Failure::At(_)) {
            return "Unexpected end of JSON input".into();
        }
        match failure {
            // The one message that names JSON itself.
            Failure::At(what) if what.ends_with("after JSON") => {
                format!("{what} at position {pos}")
            }
            Failure::At(what) => format!("{what} in JSON at position {pos}"),
            Failure::Number => format!("Unexpected number in JSON at position {pos}"),
            Failure::Token => self.unexpected_token(),
        }
    }

    fn unexpected_token(&self) -> String {
        let whole = String::from_utf16_lossy(self.units);
        if matches!(whole.as_str(), "NaN" | "Infinity" | "undefined") {
            return format!("\"{whole}\" is not valid JSON");
        }
        let pos = self.pos;
        let token = String::from_utf16_lossy(&self.units[pos..=pos]);
        let len = self.units.len();
        let slice =
            |from: usize, to: usize| String::from_utf16_lossy(&self.units[from..to.min(len)]);
        if len < CONTEXT * 2 + 1 {
            format!("Unexpected token '{token}', \"{whole}\" is not valid JSON")
        } else if pos < CONTEXT {
            let context = slice(0, pos + CONTEXT);
            format!("Unexpected token '{token}', \"{context}\"... is not valid JSON")
        } else if pos < len - CONTEXT {
            let context = slice(pos - CONTEXT, pos + CONTEXT);
            format!("Unexpected token '{token}', ...\"{context}\"... is not valid JSON")
        } else {
            let context = slice(pos - CONTEXT, len);
            format!("Unexpected token '{token}', ...\"{context}\" is not valid JSON")
        }
    }
}

fn char_of(unit: u16) -> char {
    char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}')
}

#[cfg(test)]
mod tests {
    use super::v8_parse_error;

    /// Pairs checked against Node 20's `JSON.parse`.
    #[test]
    fn messages_match_node() {
        let cases: &[(&str, &str)] = &[
            (
                "this is not json",
                "Unexpected token 'h', \"this is not json\" is not valid JSON",
            ),
            ("", "Unexpected end of JSON input"),
            ("   ", "Unexpected end of JSON input"),
            ("{", "Expected property name or '}' in JSON at position 1"),
            (
                "{\"a\"",
                "Expected ':' after property name in JSON at position 4",
            ),
            ("{\"a\":", "Unexpected end of JSON input"),
            (
                "{\"a\":1",
                "Expected ',' or '}' after property value in JSON at position 6",
            ),
            (
                "{\"a\":1,",
                "Expected double-quoted property name in JSON at position 7",
            ),
            (
                "{\"a\" 1}",
                "Expected ':' after property name in JSON at position 5",
            ),
            (
                "{a:1}",
                "Expected property name or '}' in JSON at position 1",
            ),
            ("[1,]", "Unexpected token ']', \"[1,]\" is not valid JSON"),
            (
                "[1 2]",
                "Expected ',' or ']' after array element in JSON at position 3",
            ),
            ("[", "Unexpected end of JSON input"),
            ("-", "No number after minus sign in JSON at position 1"),
            ("01", "Unexpected number in JSON at position 1"),
            ("1.", "Unterminated fractional number in JSON at position 2"),
            (
                "1e+",
                "Exponent part is missing a number in JSON at position 3",
            ),
            ("\"abc", "Unterminated string in JSON at position 4"),
            ("\"a\\x\"", "Bad escaped character in JSON at position 3"),
            ("\"a\\u12g4\"", "Bad Unicode escape in JSON at position 6"),
            (
                "\"a\nb\"",
                "Bad control character in string literal in JSON at position 2",
            ),
            (
                "{} x",
                "Unexpected non-whitespace character after JSON at position 3",
            ),
            ("nul", "Unexpected end of JSON input"),
            ("NaN", "\"NaN\" is not valid JSON"),
            ("'x'", "Unexpected token ''', \"'x'\" is not valid JSON"),
            (
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "Unexpected token 'x', \"xxxxxxxxxx\"... is not valid JSON",
            ),
            (
                "{\"aaaaaaaaaaaaaaaaaaaaaaaaa\": tx}",
                "Unexpected token 'x', ...\"aaaaaa\": tx}\" is not valid JSON",
            ),
            (
                "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,x",
                "Unexpected token 'x', ...\",13,14,15,x\" is not valid JSON",
            ),
            (
                "{\"a\":\"é😀\" x}",
                "Expected ',' or '}' after property value in JSON at position 11",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(
                v8_parse_error(input).as_deref(),
                Some(*expected),
                "{input:?}"
            );
        }
        assert_eq!(v8_parse_error("{\"type\":\"get_state\"}"), None);
    }
}
