//! Tool-argument validation as Pi 1.5.2 does it (pi-ai's `validateToolArguments` over pi-schema's
//! `getValidator`).
//!
//! The model's arguments are coerced towards the tool's JSON schema first (optional `null`s
//! dropped, numeric strings to numbers, `"true"` to `true`, a lone value into an array, ...;
//! `coerce`), then checked ([`explain`]); a failure lists every error with pi-schema's wording
//! ([`messages`]) and the arguments as received. Patterns are JavaScript RegExps (`js_regex`);
//! one that does not compile fails the call first (`schema_patterns`). TypeBox's checker ([`errors`], [`MAX_ERRORS`])
//! stays for the `models.json` check, which did not change.

mod check;
mod coerce;
mod explain;
mod format;
mod idn;
mod js_regex;
mod jsnum;
pub mod messages;
mod refs;
mod schema_format;
mod schema_patterns;
mod url_format;

use serde_json::{Map, Value};

pub use check::{errors, MAX_ERRORS};
pub use explain::{explain, passes, Explained};
pub use jsnum::js_equal;

/// The coerced arguments, or the error text Pi gives the model.
pub fn validate_tool_arguments(
    tool_name: &str,
    schema: &Value,
    args: &Value,
) -> Result<Value, String> {
    if let Some(message) = schema_patterns::first_invalid(schema) {
        return Err(message);
    }
    let coerced = coerce::coerce(args, schema);
    let Some(found) = explain(schema, &coerced) else {
        return Err(messages::TOO_DEEP.to_owned());
    };
    if found.is_empty() {
        return Ok(coerced);
    }
    let lines: Vec<String> = found
        .iter()
        .map(|e| format!("  - {}: {}", e.display_path(), e.message))
        .collect();
    let received = crate::json::to_string_pretty(&js_key_order(args)).unwrap_or_default();
    Err(messages::validation_failed(tool_name, &lines, &received))
}

/// [`validate_tool_arguments`] for arguments that are JavaScript's `undefined` (a tool's
/// `prepareArguments` shim that returned nothing), which JSON cannot hold: they are checked as
/// `null`, and a failure names `undefined` where pi-schema names the root value's type and
/// pi-ai prints the arguments.
pub fn validate_undefined_tool_arguments(tool_name: &str, schema: &Value) -> Result<Value, String> {
    validate_tool_arguments(tool_name, schema, &Value::Null).map_err(|text| {
        let root = format!("  - {}: ", messages::ROOT);
        let (lines, received) = text
            .rsplit_once("\n\nReceived arguments:\n")
            .unwrap_or((text.as_str(), ""));
        let lines: Vec<String> = lines
            .lines()
            .map(|line| match line.strip_prefix(&root) {
                Some(rest) => format!("{root}{}", rest.replace("got null", "got undefined")),
                None => line.to_owned(),
            })
            .collect();
        match received {
            "null" => format!("{}\n\nReceived arguments:\nundefined", lines.join("\n")),
            _ => text,
        }
    })
}

/// An object's keys in JavaScript's enumeration order (`Object.keys`): integer-like keys first,
/// ascending, then the others in insertion order.
pub(crate) fn js_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut indices: Vec<(u32, &String)> = map
        .keys()
        .filter_map(|k| array_index(k).map(|i| (i, k)))
        .collect();
    indices.sort();
    let mut keys: Vec<&String> = indices.into_iter().map(|(_, k)| k).collect();
    keys.extend(map.keys().filter(|k| array_index(k).is_none()));
    keys
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
