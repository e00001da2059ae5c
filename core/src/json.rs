//! JSON text exactly as JavaScript's `JSON.stringify` writes it.
//!
//! Pi writes every event, RPC line and session entry with `JSON.stringify`. serde_json agrees with it
//! on strings and integers but not on floats (`1e-7` vs `1e-7`, `0.000001` vs `1e-6`, `0` vs `0.0`),
//! so everything this project writes for Pi-compatible consumers goes through [`to_string`], whose
//! formatter prints numbers with the ECMAScript `Number::toString` rules.

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Serializes `value` as compact JSON, byte for byte as `JSON.stringify(value)` would.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    utf8(out)
}

/// Writes `value` as compact JSON into `writer`, as `JSON.stringify(value)` would.
pub fn to_writer<W: io::Write, T: Serialize + ?Sized>(
    writer: W,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(writer, JsFormatter(CompactFormatter));
    value.serialize(&mut ser)
}

/// Serializes `value` as `JSON.stringify(value, null, 2)` would (two-space indentation).
pub fn to_string_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        JsFormatter(PrettyFormatter::with_indent(b"  ")),
    );
    value.serialize(&mut ser)?;
    utf8(out)
}

fn utf8(bytes: Vec<u8>) -> Result<String, serde_json::Error> {
    String::from_utf8(bytes).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// Formats a double the way ECMAScript's `Number::toString` does (shortest round-trip digits,
/// plain notation for exponents in `[-6, 21)`, otherwise `d.ddde±n`). Non-finite values become
/// `null`, as in `JSON.stringify`.
pub fn format_number(value: f64) -> String {
    let mut out = Vec::with_capacity(24);
    // Writing into a Vec cannot fail, and only ASCII is written.
    let _ = write_number(&mut out, value);
    String::from_utf8(out).unwrap_or_default()
}

/// [`format_number`] written straight into `out`, with no allocation: every event and session
/// line carries a usage with its costs.
fn write_number<W: ?Sized + io::Write>(out: &mut W, value: f64) -> io::Result<()> {
    const ZEROS: &[u8; 21] = b"000000000000000000000";
    if !value.is_finite() {
        return out.write_all(b"null");
    }
    if value == 0.0 {
        return out.write_all(b"0");
    }
    let mut buf = ryu::Buffer::new();
    let shortest = buf.format_finite(value);
    let (negative, unsigned) = match shortest.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, shortest),
    };
    let (mantissa, exp10) = match unsigned.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The significant digits, without leading or trailing zeros (ryu writes at most 17 digits
    // and a few zeros around them).
    let mut all = [0u8; 32];
    let length = int_part.len() + frac_part.len();
    let Some(slot) = all.get_mut(..length) else {
        return out.write_all(shortest.as_bytes());
    };
    slot[..int_part.len()].copy_from_slice(int_part.as_bytes());
    slot[int_part.len()..].copy_from_slice(frac_part.as_bytes());
    let leading = slot.iter().take_while(|b| **b == b'0').count();
    let digits = &slot[leading..];
    let trailing = digits.iter().rev().take_while(|b| **b == b'0').count();
    let digits = &digits[..digits.len() - trailing];
    // `n` is the position of the decimal point relative to the start of `digits`.
    let n = int_part.len() as i32 + exp10 - leading as i32;
    let k = digits.len() as i32;
    if negative {
        out.write_all(b"-")?;
    }
    if k <= n && n <= 21 {
        out.write_all(digits)?;
        out.write_all(&ZEROS[..(n - k) as usize])
    } else if 0 < n && n <= 21 {
        out.write_all(&digits[..n as usize])?;
        out.write_all(b".")?;
        out.write_all(&digits[n as usize..])
    } else if -6 < n && n <= 0 {
        out.write_all(b"0.")?;
        out.write_all(&ZEROS[..(-n) as usize])?;
        out.write_all(digits)
    } else {
        out.write_all(&digits[..1])?;
        if k > 1 {
            out.write_all(b".")?;
            out.write_all(&digits[1..])?;
        }
        let e = n - 1;
        write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

/// A serde_json formatter that delegates layout to `F` and writes floats JavaScript's way.
struct JsFormatter<F>(F);

impl<F: Formatter> Formatter for JsFormatter<F> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        write_number(writer, value)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        write_number(writer, f64::from(value))
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_array(writer)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array(writer)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_array_value(writer)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object(writer)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object(writer)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.begin_object_value(writer)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.end_object_value(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-2.5, "-2.5"),
            (1795322284627.0, "1795322284627"),
            (0.000009999999999999999, "0.000009999999999999999"),
            (0.000019999999999999998, "0.000019999999999999998"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789.125, "123456789.125"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_number(*value), *expected, "formatting {value:e}");
        }
    }

    #[test]
    fn pretty_output_matches_two_space_stringify() {
        let value = serde_json::json!({"a": 1.5, "b": [], "c": {}, "d": [1, {"e": "x"}]});
        assert_eq!(
            to_string_pretty(&value).unwrap_or_default(),
            "{\n  \"a\": 1.5,\n  \"b\": [],\n  \"c\": {},\n  \"d\": [\n    1,\n    {\n      \"e\": \"x\"\n    }\n  ]\n}"
        );
    }
}
