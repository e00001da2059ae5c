//! Pi 1.5.2's validation texts (pi-ai's frame around pi-schema's per-error messages), kept in one
//! place so that the next Pi's wording is a change here only.

use serde_json::Value;

use crate::json::{format_number, to_string};

/// pi-ai's frame: the tool, one `  - <path>: <message>` line per error, the arguments received.
pub fn validation_failed(tool: &str, lines: &[String], received: &str) -> String {
    format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        lines.join("\n")
    )
}

/// pi-ai's error when the streamed arguments of a tool call did not parse as JSON.
pub fn invalid_arguments(tool: &str, arguments_error: &str) -> String {
    format!("Invalid arguments for tool \"{tool}\": {arguments_error}")
}

/// The path shown for the root value.
pub const ROOT: &str = "root";
/// A required property is absent.
pub const MISSING: &str = "missing";
/// A property that `additionalProperties: false` forbids.
pub const UNKNOWN_FIELD: &str = "unknown field";
/// A value under a `false` schema.
pub const FALSE_SCHEMA: &str = "no value is allowed here";
/// A value matching the schema under `not`.
pub const NOT: &str = "must not match the schema in not";
/// A property name failing `propertyNames`.
pub const INVALID_PROPERTY_NAME: &str = "invalid property name";
/// `oneOf` with several branches passing.
pub const MORE_THAN_ONE: &str = "matches more than one alternative";
/// A union none of whose branches reported an error (the fallback).
pub const NO_ALTERNATIVE: &str = "matches no alternative";
/// `uniqueItems` with two equal items.
pub const UNIQUE_ITEMS: &str = "expected unique items";
/// How many enum values are listed before the rest is counted.
pub const LISTED_VALUES: usize = 20;

/// The value's type as pi-schema names it in "expected X, got Y".
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
    }
}

/// A `type` mismatch.
pub fn wrong_type(types: &[String], value: &Value) -> String {
    format!("expected {}, got {}", types.join(" or "), type_name(value))
}

/// An `enum` (or union tag) mismatch, listing at most [`LISTED_VALUES`] values.
pub fn one_of(values: &[Value]) -> String {
    let json = |v: &[Value]| to_string(&Value::Array(v.to_vec())).unwrap_or_default();
    if values.len() <= LISTED_VALUES {
        return format!("expected one of {}", json(values));
    }
    let head = json(&values[..LISTED_VALUES]);
    format!(
        "expected one of {}, ... and {} more]",
        &head[..head.len() - 1],
        values.len() - LISTED_VALUES
    )
}

/// A `const` mismatch.
pub fn constant(value: &Value) -> String {
    format!("expected {}", to_string(value).unwrap_or_default())
}

/// `minLength`, `minItems`, `minProperties` (`unit`: characters, items, properties).
pub fn at_least(limit: f64, unit: &str) -> String {
    format!("expected at least {} {unit}", format_number(limit))
}

/// `maxLength`, `maxItems`, `maxProperties`.
pub fn at_most(limit: f64, unit: &str) -> String {
    format!("expected at most {} {unit}", format_number(limit))
}

/// `pattern`.
pub fn pattern(pattern: &str) -> String {
    format!("expected to match {pattern}")
}

/// `format`.
pub fn format(name: &str) -> String {
    format!("expected format {name}")
}

/// `minimum` (`>=`), `maximum` (`<=`), `exclusiveMinimum` (`>`), `exclusiveMaximum` (`<`).
pub fn bound(comparison: &str, limit: f64) -> String {
    format!("expected {comparison} {}", format_number(limit))
}

/// `multipleOf`.
pub fn multiple_of(divisor: f64) -> String {
    format!("expected a multiple of {}", format_number(divisor))
}

/// `dependentRequired` (and `dependencies` lists): `property` needed because `present` is.
pub fn required_when(present: &str) -> String {
    format!("required when {present} is present")
}

/// A `$ref` naming no schema pi-schema knows.
pub fn unresolved_reference(reference: &str) -> String {
    format!("unresolved reference {reference}")
}

/// What Pi throws when references nest without end (`{"$ref": "#"}`): JavaScript's stack
/// overflow.
pub const TOO_DEEP: &str = "Maximum call stack size exceeded";

/// `contains` with its `minContains`/`maxContains` bounds.
pub fn contains(min: f64, max: f64) -> String {
    let items = |n: f64| if n == 1.0 { "item" } else { "items" };
    if max.is_infinite() {
        format!(
            "expected at least {} matching {}",
            format_number(min),
            items(min)
        )
    } else if min == 0.0 {
        format!(
            "expected at most {} matching {}",
            format_number(max),
            items(max)
        )
    } else {
        format!(
            "expected between {} and {} matching items",
            format_number(min),
            format_number(max)
        )
    }
}
