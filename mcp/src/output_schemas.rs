//! The output schemas Pi 1.5.2 declares on the tools its MCP extension registers
//! (`extensions/mcp/tools.js`, `resources.js`): what a tool result's `structuredContent`
//! holds, which is what a codemode script's call of the tool resolves to and what
//! `describeTool()` shows. An MCP tool's is the server's `CallToolResult` (without `_meta`),
//! with the tool's own output schema under `structuredContent`; a resource tool's is its JSON
//! payload.

use serde_json::{json, Map, Value};

/// Keywords whose values are data: a `$ref` key inside them is no reference.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Keywords whose values map names to schemas: their keys are names, not keywords.
const NAMED_SCHEMA_KEYWORDS: [&str; 6] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// Where an MCP tool's own output schema sits in its result schema.
const STRUCTURED_CONTENT_POINTER: &str = "#/properties/structuredContent";

/// An MCP tool's output schema: the `CallToolResult` a script receives, with `declared` (the
/// `outputSchema` the server listed for the tool) under `structuredContent`, its local
/// references moved there; any value stands there without one.
pub fn mcp_result_schema(declared: Option<&Value>) -> Value {
    let structured = declared
        .map(|schema| placed_at(schema, STRUCTURED_CONTENT_POINTER))
        .unwrap_or_else(|| json!({}));
    json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"enum": ["text", "image", "audio", "resource_link", "resource"]},
                        "text": {"type": "string"},
                        "data": {"type": "string"},
                        "mimeType": {"type": "string"},
                    },
                    "required": ["type"],
                    "additionalProperties": true,
                },
            },
            "structuredContent": structured,
            "isError": {"type": "boolean"},
        },
        "required": ["content"],
        "additionalProperties": true,
    })
}

/// `schema` placed at the JSON pointer `at` of another schema: each local `$ref` (`#`,
/// `#/$defs/x`) is rewritten to point below `at`, so that it names the same subschema there.
fn placed_at(schema: &Value, at: &str) -> Value {
    match schema {
        Value::Array(items) => Value::Array(items.iter().map(|item| placed_at(item, at)).collect()),
        Value::Object(map) => {
            let mut placed = Map::new();
            for (key, value) in map {
                let moved = match value {
                    Value::String(target)
                        if key == "$ref" && (target == "#" || target.starts_with("#/")) =>
                    {
                        Value::String(format!("{at}{}", &target[1..]))
                    }
                    _ if DATA_KEYWORDS.contains(&key.as_str()) => value.clone(),
                    Value::Object(named) if NAMED_SCHEMA_KEYWORDS.contains(&key.as_str()) => {
                        Value::Object(
                            named
                                .iter()
                                .map(|(name, sub)| (name.clone(), placed_at(sub, at)))
                                .collect(),
                        )
                    }
                    _ => placed_at(value, at),
                };
                placed.insert(key.clone(), moved);
            }
            Value::Object(placed)
        }
        other => other.clone(),
    }
}

/// The servers a listing could not reach, as `list_mcp_resources` and
/// `list_mcp_resource_templates` report them.
fn listing_errors() -> Value {
    json!({
        "type": "array",
        "description": "Servers that could not be listed",
        "items": {
            "type": "object",
            "properties": {"server": {"type": "string"}, "error": {"type": "string"}},
            "required": ["server", "error"],
        },
    })
}

/// `list_mcp_resources`' output schema.
pub fn list_resources_output() -> Value {
    let text = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "server": text,
            "resources": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "server": {"type": "string"},
                        "uri": {"type": "string"},
                        "name": {"type": "string"},
                        "title": text,
                        "description": text,
                        "mimeType": text,
                        "size": {"type": "number"},
                    },
                    "required": ["server", "uri", "name"],
                },
            },
            "nextCursor": text,
            "errors": listing_errors(),
        },
        "required": ["resources"],
    })
}

/// `list_mcp_resource_templates`' output schema.
pub fn list_templates_output() -> Value {
    let text = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "server": text,
            "resourceTemplates": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "server": {"type": "string"},
                        "uriTemplate": {"type": "string", "description": "RFC 6570 URI template"},
                        "name": {"type": "string"},
                        "title": text,
                        "description": text,
                        "mimeType": text,
                    },
                    "required": ["server", "uriTemplate", "name"],
                },
            },
            "nextCursor": text,
            "errors": listing_errors(),
        },
        "required": ["resourceTemplates"],
    })
}

/// `read_mcp_resource`'s output schema: a text or a base64 blob per content.
pub fn read_resource_output() -> Value {
    let text = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "server": {"type": "string"},
            "uri": {"type": "string"},
            "contents": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"uri": {"type": "string"}, "mimeType": text, "text": {"type": "string"}},
                            "required": ["uri", "text"],
                        },
                        {
                            "type": "object",
                            "properties": {
                                "uri": {"type": "string"},
                                "mimeType": text,
                                "blob": {"type": "string", "description": "base64"},
                            },
                            "required": ["uri", "blob"],
                        },
                    ],
                },
            },
        },
        "required": ["server", "uri", "contents"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_move_under_structured_content_but_data_and_names_stay() {
        let declared = json!({
            "$defs": {"$ref": {"type": "string"}, "point": {"$ref": "#/$defs/$ref"}},
            "properties": {"a": {"$ref": "#/$defs/point"}, "self": {"$ref": "#"}},
            "default": {"$ref": "#/$defs/point"},
            "anyOf": [{"$ref": "#/$defs/point"}, {"$ref": "other.json#/x"}],
        });
        let schema = mcp_result_schema(Some(&declared));
        let placed = &schema["properties"]["structuredContent"];
        assert_eq!(
            placed,
            &json!({
                "$defs": {
                    "$ref": {"type": "string"},
                    "point": {"$ref": "#/properties/structuredContent/$defs/$ref"},
                },
                "properties": {
                    "a": {"$ref": "#/properties/structuredContent/$defs/point"},
                    "self": {"$ref": "#/properties/structuredContent"},
                },
                "default": {"$ref": "#/$defs/point"},
                "anyOf": [
                    {"$ref": "#/properties/structuredContent/$defs/point"},
                    {"$ref": "other.json#/x"},
                ],
            })
        );
        assert_eq!(
            mcp_result_schema(None)["properties"]["structuredContent"],
            json!({})
        );
    }
}
