//! JSON text spelled the way Python's `json.dumps` spells it (`", "` and `": "` between items,
//! keys in insertion order, Python's float repr), so the Rust mock serves the same bytes as the
//! kit's Python mock, which the original Pi runs against.

use serde_json::{Number, Value};

/// `json.dumps(value)`: everything outside printable ASCII escaped as `\uXXXX`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, true);
    out
}

/// `json.dumps(value, ensure_ascii=False)`: only quotes, backslashes and control characters
/// escaped (the request log's spelling).
pub fn dumps_unicode(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, false);
    out
}

/// Python's `str()` of a scalar, as the Python mock writes a header value.
pub fn str_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => number(n),
        other => dumps(other),
    }
}

fn write_value(out: &mut String, value: &Value, ascii: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => write_string(out, s, ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, ascii);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(out, key, ascii);
                out.push_str(": ");
                write_value(out, item, ascii);
            }
            out.push('}');
        }
    }
}

fn write_string(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => push_escape(out, c as u32),
            c if ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    push_escape(out, u32::from(*unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_escape(out: &mut String, unit: u32) {
    out.push_str(&format!("\\u{unit:04x}"));
}

/// Integers as they are; floats as Python's `repr(float)`: the shortest digits that read back,
/// positional from 1e-4 up to 1e16, otherwise `1e+16` / `1.5e-07`.
fn number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let Some(f) = n.as_f64() else {
        return n.to_string();
    };
    float_repr(f)
}

fn float_repr(f: f64) -> String {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = (exp + 1) as usize;
    if digits.len() <= point {
        let zeros = "0".repeat(point - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        let (whole, fraction) = digits.split_at(point);
        format!("{sign}{whole}.{fraction}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spells_like_python() {
        let value = json!({"a": [1, 2.5, {}], "b": [], "c": "é\u{1F600}\u{7f}\"\n\u{1}", "d": null, "e": true});
        assert_eq!(
            dumps(&value),
            r#"{"a": [1, 2.5, {}], "b": [], "c": "\u00e9\ud83d\ude00\u007f\"\n\u0001", "d": null, "e": true}"#
        );
        assert_eq!(
            dumps_unicode(&value),
            "{\"a\": [1, 2.5, {}], \"b\": [], \"c\": \"é\u{1F600}\u{7f}\\\"\\n\\u0001\", \"d\": null, \"e\": true}"
        );
    }

    #[test]
    fn floats_as_python_repr() {
        for (f, python) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123.456, "123.456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-2.5e300, "-2.5e+300"),
        ] {
            assert_eq!(float_repr(f), python, "{f}");
        }
    }

    #[test]
    fn header_values_as_python_str() {
        assert_eq!(str_of(&json!("0")), "0");
        assert_eq!(str_of(&json!(3)), "3");
        assert_eq!(str_of(&json!(true)), "True");
    }
}
