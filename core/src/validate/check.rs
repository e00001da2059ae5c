//! JSON-schema checking with TypeBox 1.x's error order and wording.
//!
//! Every keyword of a schema node is checked (no short-circuit), in TypeBox's fixed order, groups
//! gated by the value's actual type; children report before the composite keyword that contains
//! them. Callers show at most [`MAX_ERRORS`].

use serde_json::{Map, Value};

use super::coerce::{matches_type, schema_types};
use super::format::matches_format;
use super::js_regex::SchemaRegex;
use super::jsnum::{as_f64, js_equal};
use crate::json::format_number;

/// TypeBox reports at most this many errors.
pub const MAX_ERRORS: usize = 8;

/// One failed keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub keyword: &'static str,
    /// JSON pointer of the failing value (`""` for the root).
    pub instance_path: String,
    pub message: String,
    /// For `required`: the first missing property, which Pi appends to the path.
    pub missing: Option<String>,
}

impl SchemaError {
    /// The path as Pi prints it: pointer segments joined with dots, `root` when empty.
    pub fn display_path(&self) -> String {
        let base = self
            .instance_path
            .strip_prefix('/')
            .unwrap_or(&self.instance_path)
            .replace('/', ".");
        match &self.missing {
            Some(prop) if base.is_empty() => prop.clone(),
            Some(prop) => format!("{base}.{prop}"),
            None if base.is_empty() => "root".to_owned(),
            None => base,
        }
    }
}

/// Every error of `value` against `schema`, in TypeBox's order (empty: valid).
pub fn errors(schema: &Value, value: &Value) -> Vec<SchemaError> {
    let mut out = Vec::new();
    node(schema, value, "", &mut out);
    out
}

fn push(out: &mut Vec<SchemaError>, keyword: &'static str, path: &str, message: String) {
    out.push(SchemaError {
        keyword,
        instance_path: path.to_owned(),
        message,
        missing: None,
    });
}

fn child_path(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn valid(schema: &Value, value: &Value) -> bool {
    let mut scratch = Vec::new();
    node(schema, value, "", &mut scratch);
    scratch.is_empty()
}

fn node(schema: &Value, value: &Value, path: &str, out: &mut Vec<SchemaError>) {
    let s = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return push(out, "boolean", path, "schema is false".into()),
        Value::Object(s) => s,
        _ => return,
    };
    type_keyword(s, value, path, out);
    match value {
        Value::Object(map) => object_keywords(s, map, path, out),
        Value::Array(items) => array_keywords(s, items, path, out),
        Value::String(text) => string_keywords(s, text, path, out),
        Value::Number(n) => number_keywords(s, as_f64(n), path, out),
        _ => {}
    }
    applicator_keywords(s, value, path, out);
}

fn type_keyword(s: &Map<String, Value>, value: &Value, path: &str, out: &mut Vec<SchemaError>) {
    match s.get("type") {
        Some(Value::String(t)) => {
            let known = matches!(
                t.as_str(),
                "number" | "integer" | "boolean" | "string" | "null" | "array" | "object"
            );
            if known && !matches_type(value, t) {
                push(out, "type", path, format!("must be {t}"));
            }
        }
        Some(types @ Value::Array(_)) => {
            let names = schema_types(Some(types));
            if !names.iter().any(|t| matches_type(value, t)) {
                push(
                    out,
                    "type",
                    path,
                    format!("must be either {}", names.join(" or ")),
                );
            }
        }
        _ => {}
    }
}

fn object_keywords(
    s: &Map<String, Value>,
    map: &Map<String, Value>,
    path: &str,
    out: &mut Vec<SchemaError>,
) {
    if let Some(Value::Array(required)) = s.get("required") {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !map.contains_key(*k))
            .collect();
        if let Some(first) = missing.first() {
            out.push(SchemaError {
                keyword: "required",
                instance_path: path.to_owned(),
                message: format!("must have required properties {}", missing.join(", ")),
                missing: Some((*first).to_owned()),
            });
        }
    }
    let properties = s.get("properties").and_then(Value::as_object);
    let patterns: Vec<(SchemaRegex, &Value)> = s
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter_map(|(pat, sch)| SchemaRegex::unicode_only(pat).map(|re| (re, sch)))
                .collect()
        })
        .unwrap_or_default();
    if let Some(additional) = s.get("additionalProperties") {
        let mut failing = Vec::new();
        for (key, v) in map {
            let declared = properties.is_some_and(|p| p.contains_key(key))
                || patterns.iter().any(|(re, _)| re.is_match(key));
            if declared {
                continue;
            }
            let before = out.len();
            node(additional, v, &child_path(path, key), out);
            if out.len() > before {
                failing.push(key.clone());
            }
        }
        if !failing.is_empty() {
            push(
                out,
                "additionalProperties",
                path,
                "must not have additional properties".into(),
            );
        }
    }
    for dependencies in ["dependencies", "dependentRequired"] {
        if let Some(Value::Object(deps)) = s.get(dependencies) {
            for (property, needed) in deps {
                let (true, Value::Array(needed)) = (map.contains_key(property), needed) else {
                    continue;
                };
                let names: Vec<&str> = needed.iter().filter_map(Value::as_str).collect();
                for name in &names {
                    if !map.contains_key(*name) {
                        push(
                            out,
                            "dependentRequired",
                            path,
                            format!(
                                "must have properties {} when property {property} is present",
                                names.join(", ")
                            ),
                        );
                    }
                }
            }
        }
    }
    for (re, sch) in &patterns {
        for (key, v) in map {
            if re.is_match(key) {
                node(sch, v, &child_path(path, key), out);
            }
        }
    }
    if let Some(properties) = properties {
        for (key, sch) in properties {
            if let Some(v) = map.get(key) {
                node(sch, v, &child_path(path, key), out);
            }
        }
    }
    if let Some(names) = s.get("propertyNames") {
        let bad: Vec<&str> = map
            .keys()
            .filter(|k| !valid(names, &Value::String((*k).clone())))
            .map(String::as_str)
            .collect();
        if !bad.is_empty() {
            push(
                out,
                "propertyNames",
                path,
                format!("property names {} are invalid", bad.join(", ")),
            );
        }
    }
    limit(
        s,
        "minProperties",
        path,
        out,
        |l| (map.len() as f64) < l,
        "must not have fewer than",
        "properties",
    );
    limit(
        s,
        "maxProperties",
        path,
        out,
        |l| (map.len() as f64) > l,
        "must not have more than",
        "properties",
    );
}

fn limit(
    s: &Map<String, Value>,
    keyword: &'static str,
    path: &str,
    out: &mut Vec<SchemaError>,
    fails: impl Fn(f64) -> bool,
    text: &str,
    unit: &str,
) {
    if let Some(l) = s.get(keyword).and_then(Value::as_f64) {
        if fails(l) {
            push(
                out,
                keyword,
                path,
                format!("{text} {} {unit}", format_number(l)),
            );
        }
    }
}

fn array_keywords(s: &Map<String, Value>, items: &[Value], path: &str, out: &mut Vec<SchemaError>) {
    if let Some(contains) = s.get("contains") {
        if !items.iter().any(|v| valid(contains, v)) {
            push(
                out,
                "contains",
                path,
                "must contain at least 1 valid item".into(),
            );
        }
    }
    match s.get("items") {
        Some(Value::Array(tuple)) => {
            for (i, (v, sch)) in items.iter().zip(tuple).enumerate() {
                node(sch, v, &format!("{path}/{i}"), out);
            }
        }
        Some(sch) => {
            for (i, v) in items.iter().enumerate() {
                node(sch, v, &format!("{path}/{i}"), out);
            }
        }
        None => {}
    }
    limit(
        s,
        "minItems",
        path,
        out,
        |l| (items.len() as f64) < l,
        "must not have fewer than",
        "items",
    );
    limit(
        s,
        "maxItems",
        path,
        out,
        |l| (items.len() as f64) > l,
        "must not have more than",
        "items",
    );
    if let Some(Value::Array(prefix)) = s.get("prefixItems") {
        for (i, (v, sch)) in items.iter().zip(prefix).enumerate() {
            node(sch, v, &format!("{path}/{i}"), out);
        }
    }
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        let duplicate = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| js_equal(a, b)));
        if duplicate {
            push(
                out,
                "uniqueItems",
                path,
                "must not have duplicate items".into(),
            );
        }
    }
}

fn string_keywords(s: &Map<String, Value>, text: &str, path: &str, out: &mut Vec<SchemaError>) {
    let chars = text.chars().count() as f64;
    limit(
        s,
        "minLength",
        path,
        out,
        |l| chars < l,
        "must not have fewer than",
        "characters",
    );
    limit(
        s,
        "maxLength",
        path,
        out,
        |l| chars > l,
        "must not have more than",
        "characters",
    );
    if let Some(Value::String(format)) = s.get("format") {
        if !matches_format(format, text) {
            push(
                out,
                "format",
                path,
                format!("must match format \"{format}\""),
            );
        }
    }
    if let Some(Value::String(pattern)) = s.get("pattern") {
        let matched = SchemaRegex::unicode_only(pattern).is_none_or(|re| re.is_match(text));
        if !matched {
            push(
                out,
                "pattern",
                path,
                format!("must match pattern \"{pattern}\""),
            );
        }
    }
}

fn number_keywords(s: &Map<String, Value>, n: f64, path: &str, out: &mut Vec<SchemaError>) {
    type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);
    let bounds: [Bound; 4] = [
        ("exclusiveMinimum", ">", |n, l| n > l),
        ("exclusiveMaximum", "<", |n, l| n < l),
        ("minimum", ">=", |n, l| n >= l),
        ("maximum", "<=", |n, l| n <= l),
    ];
    for (keyword, comparison, holds) in bounds {
        if let Some(l) = s.get(keyword).and_then(Value::as_f64) {
            if !holds(n, l) {
                push(
                    out,
                    keyword,
                    path,
                    format!("must be {comparison} {}", format_number(l)),
                );
            }
        }
    }
    if let Some(d) = s.get("multipleOf").and_then(Value::as_f64) {
        let exact = n.fract() == 0.0 && (1.0 / d).fract() == 0.0;
        let m = n % d;
        let close = m.abs().min((m - d).abs()).min((m + d).abs()) < 1e-10;
        if !exact && !close {
            push(
                out,
                "multipleOf",
                path,
                format!("must be multiple of {}", format_number(d)),
            );
        }
    }
}

fn applicator_keywords(
    s: &Map<String, Value>,
    value: &Value,
    path: &str,
    out: &mut Vec<SchemaError>,
) {
    if let Some(constant) = s.get("const") {
        if !js_equal(constant, value) {
            push(out, "const", path, "must be equal to constant".into());
        }
    }
    if let Some(Value::Array(allowed)) = s.get("enum") {
        if !allowed.iter().any(|a| js_equal(a, value)) {
            push(
                out,
                "enum",
                path,
                "must be equal to one of the allowed values".into(),
            );
        }
    }
    if let Some(condition) = s.get("if") {
        let (branch, name) = if valid(condition, value) {
            (s.get("then"), "then")
        } else {
            (s.get("else"), "else")
        };
        if let Some(branch) = branch {
            let mut sub = Vec::new();
            node(branch, value, path, &mut sub);
            if !sub.is_empty() {
                if name == "else" {
                    out.extend(sub);
                }
                push(out, "if", path, format!("must match \"{name}\" schema"));
            }
        }
    }
    if let Some(not) = s.get("not") {
        if valid(not, value) {
            push(out, "not", path, "must not be valid".into());
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for branch in all {
            node(branch, value, path, out);
        }
    }
    if let Some(Value::Array(any)) = s.get("anyOf") {
        let mut sub = Vec::new();
        let mut passed = false;
        for branch in any {
            let before = sub.len();
            node(branch, value, path, &mut sub);
            passed |= sub.len() == before;
        }
        if !passed {
            out.extend(sub);
            push(out, "anyOf", path, "must match a schema in anyOf".into());
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let mut sub = Vec::new();
        let mut passing = 0;
        for branch in one {
            let before = sub.len();
            node(branch, value, path, &mut sub);
            passing += usize::from(sub.len() == before);
        }
        if passing != 1 {
            if passing == 0 {
                out.extend(sub);
            }
            push(
                out,
                "oneOf",
                path,
                "must match exactly one schema in oneOf".into(),
            );
        }
    }
}
