//! The first `pattern` or `patternProperties` key of a tool schema that JavaScript cannot compile.
//!
//! pi-schema compiles the whole schema before it looks at the arguments, so one such pattern
//! anywhere it compiles (every subschema, and the `$defs` a `$ref` reaches, not the others)
//! fails the call with V8's `SyntaxError` text, whatever the arguments. The walk takes a node's
//! own `pattern` first, then `properties`, then `patternProperties`, then the other subschemas,
//! as pi-schema's compiler does; which of two bad patterns is named can still differ in
//! orders pi-schema has that this walk does not follow (`if` after `then`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::js_regex::SchemaRegex;
use super::refs::Resolver;

/// Keywords holding one subschema or a list of them, in the order they are walked.
const SUBSCHEMAS: &[&str] = &[
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords holding a map of subschemas (besides `properties` and `patternProperties`).
const SUBSCHEMA_MAPS: &[&str] = &["dependentSchemas", "dependencies"];

/// V8's message for the first pattern of `schema` that does not compile, if any.
pub(crate) fn first_invalid(schema: &Value) -> Option<String> {
    let resolver = Resolver::new(schema);
    let mut seen = BTreeSet::new();
    walk(&resolver, schema, &mut seen)
}

fn walk(resolver: &Resolver, node: &Value, seen: &mut BTreeSet<usize>) -> Option<String> {
    let Value::Object(map) = node else {
        return None;
    };
    if !seen.insert(node as *const Value as usize) {
        return None;
    }
    if let Some(Value::String(pattern)) = map.get("pattern") {
        if let Err(message) = SchemaRegex::new(pattern) {
            return Some(message);
        }
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for sub in properties.values() {
            if let Some(message) = walk(resolver, sub, seen) {
                return Some(message);
            }
        }
    }
    if let Some(Value::Object(patterns)) = map.get("patternProperties") {
        for (key, sub) in patterns {
            if let Err(message) = SchemaRegex::new(key) {
                return Some(message);
            }
            if let Some(message) = walk(resolver, sub, seen) {
                return Some(message);
            }
        }
    }
    let lists = SUBSCHEMAS
        .iter()
        .filter_map(|k| map.get(*k))
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().collect::<Vec<_>>(),
            other => vec![other],
        });
    let maps = SUBSCHEMA_MAPS
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.values());
    for sub in lists.chain(maps) {
        if let Some(message) = walk(resolver, sub, seen) {
            return Some(message);
        }
    }
    match map.get("$ref") {
        Some(Value::String(reference)) => resolver
            .resolve(node, reference)
            .and_then(|target| walk(resolver, target, seen)),
        _ => None,
    }
}
