//! Strict tool schemas, as Pi 1.5.2's pi-ai decides and makes them
//! (`resolveJsonSchemaStrictSampling`, `makeStrictJsonSchema`).
//!
//! A tool whose declaration asks for JSON-schema constrained sampling (`constrainedSampling:
//! {type: "json_schema"}`) is sent `strict: true` when the model supports strict tools and its
//! schema can be made strict: every property listed in `required`, the optional ones made
//! nullable (`anyOf [schema, {type: "null"}]`) and `additionalProperties: false` on every object.
//! A schema that cannot be made strict leaves the tool as it is. The built-in tools all
//! *prefer* it (`strict: "prefer"`); a tool that would *require* it and cannot get it is refused
//! by Pi, which no tool of this harness declares.

use serde_json::{json, Map, Value};

/// Keywords a strict schema may not contain anywhere (`UNSUPPORTED_STRICT_SCHEMA_KEYS`).
const UNSUPPORTED_KEYS: [&str; 16] = [
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords Anthropic's strict mode refuses anywhere (`ANTHROPIC_STRICT_UNSUPPORTED_KEYWORDS`).
const ANTHROPIC_UNSUPPORTED_KEYWORDS: [&str; 11] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "maxItems",
    "uniqueItems",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
];

/// The string formats Anthropic's strict mode knows (`ANTHROPIC_STRICT_STRING_FORMATS`).
const ANTHROPIC_STRING_FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// A check of one keyword of a schema node: whether the provider's strict mode refuses it.
type KeywordCheck = fn(&str, &Value) -> bool;

/// `isAnthropicStrictUnsupportedKeyword`: the listed keywords, `minItems` other than 0 or 1, and
/// a `format` Anthropic does not know.
fn anthropic_refuses(key: &str, value: &Value) -> bool {
    if ANTHROPIC_UNSUPPORTED_KEYWORDS.contains(&key) {
        return true;
    }
    match key {
        "minItems" => value.as_f64().is_none_or(|n| n != 0.0 && n != 1.0),
        "format" => value
            .as_str()
            .is_none_or(|f| !ANTHROPIC_STRING_FORMATS.contains(&f)),
        _ => false,
    }
}

/// Why a schema cannot be made strict (pi-ai's `UnsupportedStrictJsonSchemaError`).
#[derive(Debug)]
struct Unsupported;

/// The parameters to send and whether the tool is strict: `Some(parameters)` made strict when
/// the tool asks for JSON-schema sampling, `supports_strict` holds and the schema allows it;
/// `None` when the tool is sent as declared.
pub fn strict_parameters(
    parameters: &Value,
    constrained_sampling: Option<&Value>,
    supports_strict: bool,
) -> Option<Value> {
    strict_parameters_checked(parameters, constrained_sampling, supports_strict, None)
}

/// Whether a tool prefers constrained sampling (`{type: "json_schema", strict: "prefer"}`, Pi
/// 1.5.2's `prefersJsonSchemaStrictSampling`): the tools a provider may send without strict
/// after the API's strict-tool limits refused them.
pub fn prefers_strict(constrained_sampling: Option<&Value>) -> bool {
    constrained_sampling.is_some_and(|c| c["type"] == "json_schema" && c["strict"] == "prefer")
}

/// [`strict_parameters`] for Anthropic's Messages API, whose strict mode also refuses some
/// keywords: a schema using one is sent as declared (`supportsStrictTools` is the compat flag).
pub fn anthropic_strict_parameters(
    parameters: &Value,
    constrained_sampling: Option<&Value>,
    supports_strict: bool,
) -> Option<Value> {
    strict_parameters_checked(
        parameters,
        constrained_sampling,
        supports_strict,
        Some(anthropic_refuses),
    )
}

fn strict_parameters_checked(
    parameters: &Value,
    constrained_sampling: Option<&Value>,
    supports_strict: bool,
    check: Option<KeywordCheck>,
) -> Option<Value> {
    let wants = constrained_sampling
        .and_then(|c| c.get("type"))
        .and_then(Value::as_str)
        == Some("json_schema");
    if !wants || !supports_strict {
        return None;
    }
    let mut schema = parameters.clone();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    make_node_strict(&mut schema, check).ok()?;
    Some(schema)
}

fn is_structured(schema: &Value) -> bool {
    let Some(fields) = schema.as_object() else {
        return false;
    };
    let types: Vec<&str> = match fields.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    types.contains(&"object")
        || types.contains(&"array")
        || fields.contains_key("properties")
        || fields.contains_key("items")
}

fn allows_null(schema: &Value) -> bool {
    let Some(fields) = schema.as_object() else {
        return false;
    };
    let null_type = match fields.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    null_type
        || fields.get("const") == Some(&Value::Null)
        || fields
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| e.contains(&Value::Null))
        || fields
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|variants| variants.iter().any(allows_null))
}

/// `makeJsonSchemaNodeStrict`: rewrites `schema` in place, keys keeping their places.
fn make_node_strict(schema: &mut Value, check: Option<KeywordCheck>) -> Result<(), Unsupported> {
    let fields = schema.as_object_mut().ok_or(Unsupported)?;
    if UNSUPPORTED_KEYS.iter().any(|k| fields.contains_key(*k)) {
        return Err(Unsupported);
    }
    if let Some(refuses) = check {
        if fields.iter().any(|(key, value)| refuses(key, value)) {
            return Err(Unsupported);
        }
    }
    if let Some(any_of) = fields.get_mut("anyOf") {
        let variants = any_of.as_array_mut().ok_or(Unsupported)?;
        if variants.is_empty() {
            return Err(Unsupported);
        }
        for variant in variants {
            if is_structured(variant) {
                return Err(Unsupported);
            }
            make_node_strict(variant, check)?;
        }
    }
    if let Some(items) = fields.get_mut("items") {
        if items.is_array() {
            return Err(Unsupported);
        }
        make_node_strict(items, check)?;
    }
    let is_object = fields.get("type").and_then(Value::as_str) == Some("object");
    if fields.contains_key("properties") && !is_object {
        return Err(Unsupported);
    }
    if !is_object {
        return Ok(());
    }
    if fields
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return Err(Unsupported);
    }
    let required: Vec<String> = match fields.get("required") {
        None => Vec::new(),
        Some(Value::Array(keys)) => keys
            .iter()
            .map(|k| k.as_str().map(str::to_owned).ok_or(Unsupported))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(Unsupported),
    };
    let mut properties = match fields.get_mut("properties") {
        None => Map::new(),
        Some(Value::Object(p)) => std::mem::take(p),
        Some(_) => return Err(Unsupported),
    };
    if required.iter().any(|k| !properties.contains_key(k)) {
        return Err(Unsupported);
    }
    for (key, property) in properties.iter_mut() {
        make_node_strict(property, check)?;
        if !required.contains(key) && !allows_null(property) {
            *property = json!({"anyOf": [property.clone(), {"type": "null"}]});
        }
    }
    let names: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
    if fields.contains_key("properties") {
        fields.insert("properties".into(), Value::Object(properties));
    }
    fields.insert("required".into(), Value::Array(names));
    fields.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}
