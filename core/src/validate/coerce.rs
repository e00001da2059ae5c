//! pi-schema's coercion of model arguments towards a plain JSON schema (its `Coercer`): optional
//! properties given `null` are dropped, values are converted towards their schema (numbers from
//! strings, `"true"` and `1` to `true`, a lone value into a one-item array, ...), then pi-ai's
//! primitive coercion runs over what is still of the wrong type.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::explain::passes_in;
use super::js_keys;
use super::js_regex::SchemaRegex;
use super::jsnum::{number, parse_js_number};
use super::refs::Resolver;
use crate::json::format_number;

/// `value` coerced towards `schema`.
pub fn coerce(value: &Value, schema: &Value) -> Value {
    let c = Coercer {
        cx: Resolver::new(schema),
        entered: RefCell::new(Vec::new()),
    };
    let without_nulls = drop_optional_nulls(&c, value.clone(), schema);
    let converted = convert(&c, schema, without_nulls);
    coerce_types(&c, converted, schema)
}

/// The root schema's references, and the references being converted through with their values
/// (pi-schema's `entered`: converting a value through a reference it is already inside stops).
struct Coercer<'a> {
    cx: Resolver<'a>,
    entered: RefCell<Vec<(usize, Value)>>,
}

/// pi-schema's `reenter`: `value` converted through the target of a reference, unless that
/// target is already converting this same value.
fn reenter<'a>(c: &Coercer<'a>, target: &'a Value, value: Value) -> Value {
    let key = target as *const Value as usize;
    if c.entered
        .borrow()
        .iter()
        .any(|(node, v)| *node == key && *v == value)
    {
        return value;
    }
    c.entered.borrow_mut().push((key, value.clone()));
    let converted = convert(c, target, value);
    c.entered.borrow_mut().pop();
    converted
}

fn object(schema: &Value) -> Option<&Map<String, Value>> {
    schema.as_object()
}

/// The schema of item `i` of an array under `schema`.
fn item_schema(schema: &Map<String, Value>, i: usize) -> Option<&Value> {
    match (schema.get("items"), schema.get("prefixItems")) {
        (Some(Value::Array(tuple)), _) => tuple.get(i),
        (items, Some(Value::Array(prefix))) => prefix.get(i).or(items),
        (items, _) => items,
    }
}

fn patterns(schema: &Map<String, Value>) -> Vec<(Arc<SchemaRegex>, &Value)> {
    schema
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| {
            js_keys(p)
                .into_iter()
                .filter_map(|k| SchemaRegex::new(k).ok().map(|re| (re, &p[k])))
                .collect()
        })
        .unwrap_or_default()
}

fn drop_optional_nulls<'a>(c: &Coercer<'a>, value: Value, schema: &'a Value) -> Value {
    let Some(s) = object(schema) else {
        return value;
    };
    match value {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item_schema(s, i) {
                    Some(item_schema) => drop_optional_nulls(c, item, item_schema),
                    None => item,
                })
                .collect(),
        ),
        Value::Object(mut map) => {
            let properties = s.get("properties").and_then(Value::as_object);
            let patterns = patterns(s);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            if patterns.is_empty() && additional.is_none() && properties.is_none() {
                return Value::Object(map);
            }
            let required = |key: &str| {
                s.get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
            };
            if let Some(properties) = properties {
                for key in js_keys(properties) {
                    let property = &properties[key];
                    let Some(slot) = map.get_mut(key) else {
                        continue;
                    };
                    let is_ref = property.get("$ref").is_some_and(Value::is_string);
                    if slot.is_null()
                        && !required(key)
                        && !is_ref
                        && property.is_object()
                        && !passes_in(&c.cx, property, &Value::Null)
                    {
                        map.shift_remove(key);
                        continue;
                    }
                    *slot = drop_optional_nulls(c, slot.take(), property);
                }
            }
            if !patterns.is_empty() || additional.is_some() {
                let keys: Vec<String> = js_keys(&map).into_iter().cloned().collect();
                for key in keys {
                    let matched = properties.is_some_and(|p| p.contains_key(&key));
                    let Some(slot) = map.get_mut(&key) else {
                        continue;
                    };
                    for (re, item) in &patterns {
                        if re.is_match(&key) {
                            *slot = drop_optional_nulls(c, slot.take(), item);
                        }
                    }
                    if let (false, Some(additional)) = (matched, additional) {
                        *slot = drop_optional_nulls(c, slot.take(), additional);
                    }
                }
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// pi-schema's `convert`: the value converted towards the node (unchanged when it cannot be).
fn convert<'a>(c: &Coercer<'a>, node: &'a Value, value: Value) -> Value {
    let Some(n) = object(node) else {
        return value;
    };
    if let Some(Value::String(reference)) = n.get("$ref") {
        return match c.cx.resolve(node, reference) {
            Some(target @ Value::Object(_)) => reenter(c, target, value),
            _ => value,
        };
    }
    if let Some(literal) = n.get("const") {
        return convert_literal(literal, &value).unwrap_or(value);
    }
    if let Some(Value::Array(values)) = n.get("enum") {
        return convert_enum(c, node, values, value);
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = n.get(union) {
            return convert_union(c, n, node, branches, value);
        }
    }
    if let Some(Value::Array(all)) = n.get("allOf") {
        let next = all
            .iter()
            .fold(value, |next, member| convert(c, member, next));
        return convert_members(c, n, next);
    }
    match n.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => try_string(&value).unwrap_or(value),
            "number" => try_number(&value).map_or(value, number),
            "integer" => try_number(&value).map_or(value, |f| number(f.trunc())),
            "boolean" => try_boolean(&value).map_or(value, Value::Bool),
            "null" => {
                if try_null(&value) {
                    Value::Null
                } else {
                    value
                }
            }
            "array" => convert_array(c, n, value),
            "object" => convert_object(c, n, value),
            _ => value,
        },
        None if n.contains_key("properties") || n.contains_key("patternProperties") => {
            convert_object(c, n, value)
        }
        None if n.contains_key("items") || n.contains_key("prefixItems") => {
            convert_array(c, n, value)
        }
        _ => value,
    }
}

/// JavaScript's `===` for the primitives a literal can be.
fn same_primitive(a: &Value, b: &Value) -> bool {
    !a.is_object() && !a.is_array() && super::jsnum::js_equal(a, b)
}

/// The value as the literal, when it converts to exactly that literal and is not it already.
fn convert_literal(literal: &Value, value: &Value) -> Option<Value> {
    if same_primitive(literal, value) {
        return None;
    }
    let converted = match literal {
        Value::String(_) => try_string(value),
        Value::Number(_) => try_number(value).map(number),
        Value::Bool(_) => try_boolean(value).map(Value::Bool),
        _ => None,
    }?;
    same_primitive(&converted, literal).then_some(converted)
}

fn convert_enum<'a>(c: &Coercer<'a>, node: &'a Value, values: &'a [Value], value: Value) -> Value {
    if values.iter().any(|member| same_primitive(member, &value)) {
        return value;
    }
    for member in values {
        if let Some(candidate) = convert_literal(member, &value) {
            if passes_in(&c.cx, node, &candidate) {
                return candidate;
            }
        }
    }
    value
}

fn convert_union<'a>(
    c: &Coercer<'a>,
    n: &'a Map<String, Value>,
    node: &'a Value,
    branches: &'a [Value],
    value: Value,
) -> Value {
    if branches.iter().any(|b| passes_in(&c.cx, b, &value)) {
        return convert_members(c, n, value);
    }
    for branch in branches {
        let candidate = convert_members(c, n, convert(c, branch, value.clone()));
        if passes_in(&c.cx, node, &candidate) {
            return candidate;
        }
    }
    convert_members(c, n, value)
}

fn convert_members<'a>(c: &Coercer<'a>, n: &'a Map<String, Value>, value: Value) -> Value {
    let declares = ["properties", "patternProperties", "additionalProperties"]
        .iter()
        .any(|k| n.contains_key(*k));
    if declares {
        convert_object(c, n, value)
    } else {
        value
    }
}

fn convert_array<'a>(c: &Coercer<'a>, n: &'a Map<String, Value>, value: Value) -> Value {
    let prefix = match (n.get("items"), n.get("prefixItems")) {
        (Some(Value::Array(tuple)), _) => Some((tuple, None)),
        (rest, Some(Value::Array(prefix))) => Some((prefix, rest)),
        _ => None,
    };
    match (prefix, value) {
        (Some((prefix, rest)), Value::Array(items)) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match prefix.get(i).or(rest) {
                    Some(schema) => convert(c, schema, item),
                    None => item,
                })
                .collect(),
        ),
        (Some(_), other) => other,
        (None, Value::Array(items)) => match n.get("items") {
            Some(schema) => {
                Value::Array(items.into_iter().map(|i| convert(c, schema, i)).collect())
            }
            None => Value::Array(items),
        },
        (None, other) => match n.get("items") {
            Some(schema @ Value::Object(_)) => Value::Array(vec![convert(c, schema, other)]),
            _ => Value::Array(vec![other]),
        },
    }
}

fn convert_object<'a>(c: &Coercer<'a>, n: &'a Map<String, Value>, value: Value) -> Value {
    let Value::Object(mut map) = value else {
        return value;
    };
    let properties = n.get("properties").and_then(Value::as_object);
    let patterns = patterns(n);
    let additional = n.get("additionalProperties").filter(|a| a.is_object());
    let keys: Vec<String> = js_keys(&map).into_iter().cloned().collect();
    for key in keys {
        let Some(slot) = map.get_mut(&key) else {
            continue;
        };
        let mut next = slot.take();
        let property = properties.and_then(|p| p.get(&key));
        let mut matched = property.is_some();
        if let Some(property) = property {
            next = convert(c, property, next);
        }
        for (re, schema) in &patterns {
            if re.is_match(&key) {
                matched = true;
                next = convert(c, schema, next);
            }
        }
        if let (false, Some(additional)) = (matched, additional) {
            next = convert(c, additional, next);
        }
        *slot = next;
    }
    Value::Object(map)
}

fn try_string(value: &Value) -> Option<Value> {
    match value {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(format_number(n.as_f64()?))),
        Value::Null => Some(Value::String("null".to_owned())),
        Value::String(_) => Some(value.clone()),
        _ => None,
    }
}

/// The largest integer a double holds exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn try_number(value: &Value) -> Option<f64> {
    match value {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(0.0),
        Value::String(s) => {
            if let Some(n) = parse_js_number(s).filter(|n| n.is_finite()) {
                return Some(n);
            }
            match s.to_lowercase().as_str() {
                "false" => Some(0.0),
                "true" => Some(1.0),
                _ => bigint_of_string(s).filter(|n| n.abs() <= MAX_SAFE_INTEGER),
            }
        }
        _ => None,
    }
}

/// pi-schema's `bigIntOfString`: `123n`, and decimal integers (with a fraction cut off) too long
/// for a double.
fn bigint_of_string(s: &str) -> Option<f64> {
    let body = s.strip_suffix('n').unwrap_or(s);
    let (sign, unsigned) = body.strip_prefix('-').map_or((1.0, body), |u| (-1.0, u));
    let (int, fraction) = match unsigned.split_once('.') {
        Some((i, f)) if !s.ends_with('n') => (i, Some(f)),
        Some(_) => return None,
        None => (unsigned, None),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let canonical = int == "0" || (digits(int) && !int.starts_with('0'));
    if !canonical || fraction.is_some_and(|f| !digits(f)) {
        return None;
    }
    int.parse::<f64>().ok().map(|n| sign * n)
}

fn try_boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        Value::Null => Some(false),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(false)
            } else if lower == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn try_null(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    }
}

/// pi-ai's pass over the converted value: unions keep a passing value or take the first branch
/// that passes once coerced, `type` converts primitives, members are coerced one by one.
fn coerce_types<'a>(c: &Coercer<'a>, value: Value, schema: &'a Value) -> Value {
    let Some(s) = object(schema) else {
        return value;
    };
    let mut next = value;
    if let Some(Value::Array(all)) = s.get("allOf") {
        for member in all {
            next = coerce_types(c, next, member);
        }
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = s.get(union) {
            next = coerce_union(c, next, branches);
        }
    }
    let types = schema_types(s.get("type"));
    let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
    if !types.is_empty() && !matches_member {
        for t in &types {
            if let Some(converted) = coerce_primitive(&next, t) {
                next = converted;
                break;
            }
        }
    }
    if types.iter().any(|t| t == "object") {
        if let Value::Object(map) = next {
            next = Value::Object(coerce_properties(c, map, s));
        }
    }
    if types.iter().any(|t| t == "array") {
        if let Value::Array(items) = next {
            next = Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema(s, i) {
                        Some(item_schema @ Value::Object(_)) => coerce_types(c, item, item_schema),
                        _ => item,
                    })
                    .collect(),
            );
        }
    }
    next
}

fn coerce_union<'a>(c: &Coercer<'a>, value: Value, branches: &'a [Value]) -> Value {
    if branches.iter().any(|b| passes_in(&c.cx, b, &value)) {
        return value;
    }
    for branch in branches {
        let coerced = coerce_types(c, value.clone(), branch);
        if passes_in(&c.cx, branch, &coerced) {
            return coerced;
        }
    }
    value
}

fn coerce_properties<'a>(
    c: &Coercer<'a>,
    mut map: Map<String, Value>,
    s: &'a Map<String, Value>,
) -> Map<String, Value> {
    let properties = s.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for key in js_keys(properties) {
            if let Some(slot) = map.get_mut(key) {
                *slot = coerce_types(c, slot.take(), &properties[key]);
            }
        }
    }
    let patterns = patterns(s);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    let keys: Vec<String> = js_keys(&map).into_iter().cloned().collect();
    for key in keys {
        let matched = properties.is_some_and(|p| p.contains_key(&key));
        let Some(slot) = map.get_mut(&key) else {
            continue;
        };
        for (re, item) in &patterns {
            if re.is_match(&key) {
                *slot = coerce_types(c, slot.take(), item);
            }
        }
        if let (false, Some(additional)) = (matched, additional) {
            *slot = coerce_types(c, slot.take(), additional);
        }
    }
    map
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
fn coerce_primitive(value: &Value, ty: &str) -> Option<Value> {
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
