//! pi-ai's coercion of model arguments towards a plain JSON schema (`coerceWithJsonSchema`).

use serde_json::Value;

use super::check::errors;
use super::jsnum::{number, parse_js_number};
use crate::json::format_number;

/// Coerces `value` towards `schema`: unions pick the first branch the coerced value satisfies,
/// `type` converts primitives, and objects and arrays are coerced member by member.
pub fn coerce(value: Value, schema: &Value) -> Value {
    let Value::Object(schema) = schema else {
        return value;
    };
    let mut next = value;
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for branch in all {
            next = coerce(next, branch);
        }
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(union) {
            next = coerce_union(next, branches);
        }
    }
    let types = schema_types(schema.get("type"));
    let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
    if !types.is_empty() && !matches_member {
        for t in &types {
            if let Some(converted) = convert_primitive(&next, t) {
                next = converted;
                break;
            }
        }
    }
    if types.iter().any(|t| t == "object") {
        if let Value::Object(map) = &mut next {
            let properties = schema.get("properties").and_then(Value::as_object);
            if let Some(properties) = properties {
                for (key, property) in properties {
                    if let Some(slot) = map.get_mut(key) {
                        *slot = coerce(slot.take(), property);
                    }
                }
            }
            if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
                for (key, slot) in map.iter_mut() {
                    if properties.is_some_and(|p| p.contains_key(key)) {
                        continue;
                    }
                    *slot = coerce(slot.take(), additional);
                }
            }
        }
    }
    if types.iter().any(|t| t == "array") {
        if let Value::Array(items) = &mut next {
            match schema.get("items") {
                Some(Value::Array(tuple)) => {
                    for (slot, item_schema) in items.iter_mut().zip(tuple) {
                        *slot = coerce(slot.take(), item_schema);
                    }
                }
                Some(item_schema @ Value::Object(_)) => {
                    for slot in items.iter_mut() {
                        *slot = coerce(slot.take(), item_schema);
                    }
                }
                _ => {}
            }
        }
    }
    next
}

fn coerce_union(value: Value, branches: &[Value]) -> Value {
    for branch in branches {
        let candidate = coerce(value.clone(), branch);
        if branch.is_object() && errors(branch, &candidate).is_empty() {
            return candidate;
        }
    }
    value
}

/// The schema's `type` as a list of names.
pub fn schema_types(ty: Option<&Value>) -> Vec<String> {
    match ty {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `value` is of the JSON type `name` (unknown names match nothing here).
pub fn matches_type(value: &Value, name: &str) -> bool {
    match name {
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// The conversion pi-ai applies for one target type, if it changes the value.
fn convert_primitive(value: &Value, ty: &str) -> Option<Value> {
    match (ty, value) {
        ("number" | "integer", Value::Null) => Some(number(0.0)),
        ("number" | "integer", Value::Bool(b)) => Some(number(if *b { 1.0 } else { 0.0 })),
        ("number", Value::String(s)) if !s.trim().is_empty() => {
            parse_js_number(s).filter(|n| n.is_finite()).map(number)
        }
        ("integer", Value::String(s)) if !s.trim().is_empty() => parse_js_number(s)
            .filter(|n| n.is_finite() && n.fract() == 0.0)
            .map(number),
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("boolean", Value::String(s)) if s == "true" || s == "false" => {
            Some(Value::Bool(s == "true"))
        }
        ("boolean", Value::Number(n)) => match n.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("string", Value::Number(n)) => {
            Some(Value::String(format_number(n.as_f64().unwrap_or(0.0))))
        }
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("null", Value::String(s)) if s.is_empty() => Some(Value::Null),
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        _ => None,
    }
}
