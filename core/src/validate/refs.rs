//! pi-schema's `$ref` resolution (its `Resolver`, draft 2020-12): a reference is resolved as a
//! URI against the base of the schema holding it (the root's base is a fixed placeholder, or its
//! `$id`), then found in the document it names by JSON pointer (`#/$defs/x`) or `$anchor`.
//! Only the tool's own schema is known: a reference to any other document does not resolve, and
//! pi-schema then fails the value with "unresolved reference `<ref>`".

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use serde_json::Value;

/// The base URI pi-schema gives a root schema without `$id`.
const DEFAULT_BASE: &str = "https://json-schema.invalid/root.json";

/// How many references may be followed inside one another before the walk gives up, as Pi runs
/// out of stack on a reference cycle that never reaches a value (`{"$ref": "#"}`).
const MAX_REF_DEPTH: usize = 256;

/// Keywords holding one subschema, whose subschemas are indexed.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contentSchema",
    "items",
];
/// Keywords holding a map of subschemas.
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];
/// Keywords holding a list of subschemas.
const ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// The references of one root schema, indexed once.
pub struct Resolver<'a> {
    /// The base URI of each indexed subschema, by address.
    bases: BTreeMap<usize, String>,
    /// The schemas a document URI names (the root, and subschemas with an `$id`).
    resources: BTreeMap<String, &'a Value>,
    /// `<document>#<anchor>` to its subschema.
    anchors: BTreeMap<String, &'a Value>,
    /// The root's base (its `$id`'s document, else the placeholder).
    root_base: String,
    depth: Cell<usize>,
    too_deep: Cell<bool>,
    /// Whether a value (by its JSON) passes a subschema (by address), decided once: through
    /// recursive references, unions would otherwise check a deep value's inner levels again for
    /// every level above them, twice as long for each level of nesting.
    passes: RefCell<BTreeMap<(usize, String), bool>>,
}

fn address(node: &Value) -> usize {
    node as *const Value as usize
}

impl<'a> Resolver<'a> {
    /// Indexes `root`'s `$id`s and anchors.
    pub fn new(root: &'a Value) -> Self {
        let mut resolver = Resolver {
            bases: BTreeMap::new(),
            resources: BTreeMap::from([(DEFAULT_BASE.to_owned(), root)]),
            anchors: BTreeMap::new(),
            root_base: DEFAULT_BASE.to_owned(),
            depth: Cell::new(0),
            too_deep: Cell::new(false),
            passes: RefCell::new(BTreeMap::new()),
        };
        resolver.index(root, DEFAULT_BASE);
        if let Some(base) = resolver.bases.get(&address(root)) {
            resolver.root_base = base.clone();
        }
        resolver
    }

    fn index(&mut self, node: &'a Value, base: &str) {
        let Value::Object(map) = node else {
            return;
        };
        if self.bases.contains_key(&address(node)) {
            return;
        }
        let mut b = base.to_owned();
        if let Some(Value::String(id)) = map.get("$id") {
            let uri = resolve_uri(id, base);
            b = document_of(&uri).to_owned();
            self.resources.insert(b.clone(), node);
            if uri.len() > b.len() + 1 {
                self.anchors.insert(uri, node);
            }
        }
        self.bases.insert(address(node), b.clone());
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(anchor)) = map.get(keyword) {
                self.anchors.insert(format!("{b}#{anchor}"), node);
            }
        }
        for keyword in SCHEMA_KEYWORDS {
            if let Some(sub) = map.get(*keyword) {
                self.index(sub, &b);
            }
        }
        for keyword in MAP_KEYWORDS {
            if let Some(Value::Object(subs)) = map.get(*keyword) {
                for sub in subs.values() {
                    self.index(sub, &b);
                }
            }
        }
        for keyword in ARRAY_KEYWORDS {
            if let Some(Value::Array(subs)) = map.get(*keyword) {
                for sub in subs {
                    self.index(sub, &b);
                }
            }
        }
    }

    /// The schema `reference` (the `$ref` of `holder`) names, `None` when it does not resolve.
    pub fn resolve(&self, holder: &Value, reference: &str) -> Option<&'a Value> {
        let base = self.bases.get(&address(holder)).unwrap_or(&self.root_base);
        let uri = resolve_uri(reference, base);
        let doc = document_of(&uri);
        let fragment = match uri.get(doc.len() + 1..) {
            Some(raw) => decode_uri_component(raw)?,
            None => String::new(),
        };
        let root = *self.resources.get(doc)?;
        if fragment.is_empty() {
            return Some(root);
        }
        if fragment.starts_with('/') {
            return pointer(root, &fragment);
        }
        self.anchors.get(&format!("{doc}#{fragment}")).copied()
    }

    /// Enters a reference; false (and remembered) when references nest too deep to go on.
    pub fn enter(&self) -> bool {
        if self.depth.get() >= MAX_REF_DEPTH {
            self.too_deep.set(true);
            return false;
        }
        self.depth.set(self.depth.get() + 1);
        true
    }

    /// Leaves a reference entered with [`Resolver::enter`].
    pub fn leave(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }

    /// Whether `value` passes `node`, from the memo or by `check` (remembered).
    pub fn passes(&self, node: &Value, value: &Value, check: impl FnOnce() -> bool) -> bool {
        let key = (
            address(node),
            crate::json::to_string(value).unwrap_or_default(),
        );
        if let Some(&known) = self.passes.borrow().get(&key) {
            return known;
        }
        let found = check();
        self.passes.borrow_mut().insert(key, found);
        found
    }

    /// Whether a walk gave up on references nested too deep (where Pi runs out of stack).
    pub fn too_deep(&self) -> bool {
        self.too_deep.get()
    }
}

/// `new URL(reference, base).href`, else the reference (after the base's document when it is a
/// fragment).
fn resolve_uri(reference: &str, base: &str) -> String {
    match url::Url::parse(base).and_then(|b| b.join(reference)) {
        Ok(uri) => uri.as_str().to_owned(),
        Err(_) if reference.starts_with('#') => format!("{}{reference}", document_of(base)),
        Err(_) => reference.to_owned(),
    }
}

fn document_of(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(doc, _)| doc)
}

/// JavaScript's `decodeURIComponent`; `None` where it throws (a bad escape, invalid UTF-8).
fn decode_uri_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(
                u8::from_str_radix(hex, 16)
                    .ok()
                    .filter(|_| hex.bytes().all(|b| b.is_ascii_hexdigit()))?,
            );
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The value at a JSON pointer (`/a/b~1c`) under `root`.
fn pointer<'a>(root: &'a Value, fragment: &str) -> Option<&'a Value> {
    let mut node = root;
    for raw in fragment.split('/').skip(1) {
        let key = raw.replace("~1", "/").replace("~0", "~");
        node = match node {
            Value::Object(map) => map.get(&key)?,
            Value::Array(items) => {
                let canonical = !key.is_empty()
                    && key.bytes().all(|b| b.is_ascii_digit())
                    && (key == "0" || !key.starts_with('0'));
                items.get(key.parse::<usize>().ok().filter(|_| canonical)?)?
            }
            _ => return None,
        };
    }
    Some(node)
}
