//! JSON values read as JavaScript reads them, where pi-ai's decisions turn on it.

use serde_json::Value;

/// JavaScript's truthiness of a JSON value (`if (value)`).
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}
