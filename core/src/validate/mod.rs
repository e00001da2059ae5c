//! Tool-argument validation as pi-ai 0.73.1 does it (`validateToolArguments`).
//!
//! The model's arguments are coerced towards the tool's JSON schema first (numeric strings to
//! numbers, `"true"` to `true`, numbers to strings, ...; [`coerce`]), then checked; a failure is
//! reported with TypeBox's wording, at most eight errors, and the arguments as received.

mod check;
mod coerce;
mod format;
mod jsnum;

use serde_json::{Map, Value};

pub use check::{errors, MAX_ERRORS};
pub use jsnum::js_equal;

/// The coerced arguments, or the error text Pi gives the model.
pub fn validate_tool_arguments(
    tool_name: &str,
    schema: &Value,
    args: &Value,
) -> Result<Value, String> {
    let coerced = coerce::coerce(args.clone(), schema);
    let containers = is_container(args) && is_container(&coerced);
    if !containers && !js_equal(&coerced, args) {
        // Pi compares identities here: a replaced top-level primitive is returned as it is when
        // it checks, and the original otherwise, without an error.
        return Ok(if errors(schema, &coerced).is_empty() {
            coerced
        } else {
            args.clone()
        });
    }
    let found = errors(schema, &coerced);
    if found.is_empty() {
        return Ok(coerced);
    }
    let lines: Vec<String> = found
        .iter()
        .take(check::MAX_ERRORS)
        .map(|e| format!("  - {}: {}", e.display_path(), e.message))
        .collect();
    let received = crate::json::to_string_pretty(&js_key_order(args)).unwrap_or_default();
    Err(format!(
        "Validation failed for tool \"{tool_name}\":\n{}\n\nReceived arguments:\n{received}",
        lines.join("\n")
    ))
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Array(_))
}

/// The value with object keys in JavaScript's enumeration order: integer-like keys first,
/// ascending, then the others in insertion order.
pub fn js_key_order(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut indices: Vec<(u32, &String)> = map
                .keys()
                .filter_map(|k| array_index(k).map(|i| (i, k)))
                .collect();
            indices.sort();
            let mut out = Map::new();
            for (_, key) in &indices {
                out.insert((*key).clone(), js_key_order(&map[key.as_str()]));
            }
            for (key, v) in map {
                if array_index(key).is_none() {
                    out.insert(key.clone(), js_key_order(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(js_key_order).collect()),
        other => other.clone(),
    }
}

fn array_index(key: &str) -> Option<u32> {
    if key.is_empty()
        || (key.len() > 1 && key.starts_with('0'))
        || !key.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    key.parse::<u32>().ok().filter(|&i| i != u32::MAX)
}
