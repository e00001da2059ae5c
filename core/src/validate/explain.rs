//! pi-schema's checker and its error walk (Pi 1.5.2's `getValidator`, the `Explainer`): a node that
//! holds reports nothing; a wrong `type` is the node's only error; unions report the errors of
//! their most likely branch; every error is reported (no cap).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::coerce::matches_type;
use super::js_keys;
use super::js_regex::SchemaRegex;
use super::jsnum::{as_f64, js_equal};
use super::messages as text;
use super::refs::Resolver;

/// One error: the JSON pointer of the failing value and pi-schema's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explained {
    pub pointer: String,
    pub message: String,
}

impl Explained {
    /// The path as pi-ai prints it: the pointer's segments unescaped and joined with dots,
    /// `root` for the root.
    pub fn display_path(&self) -> String {
        if self.pointer.is_empty() {
            return text::ROOT.to_owned();
        }
        self.pointer[1..]
            .split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect::<Vec<_>>()
            .join(".")
    }
}

/// Every error of `value` against `schema`, in pi-schema's order (empty: valid); `None` when
/// references nest too deep to decide (a reference cycle, where Pi runs out of stack).
pub fn explain(schema: &Value, value: &Value) -> Option<Vec<Explained>> {
    let cx = Resolver::new(schema);
    let found = explain_in(&cx, schema, value);
    (!cx.too_deep()).then_some(found)
}

/// Whether `value` satisfies `schema`.
pub fn passes(schema: &Value, value: &Value) -> bool {
    explain(schema, value).is_some_and(|found| found.is_empty())
}

/// The errors of `value` against `node`, a subschema of the resolver's root.
pub(crate) fn explain_in<'a>(cx: &Resolver<'a>, node: &'a Value, value: &Value) -> Vec<Explained> {
    let mut out = Vec::new();
    walk(cx, node, value, "", &mut out);
    out
}

/// Whether `value` satisfies `node`, a subschema of the resolver's root (not when references
/// nest too deep, as pi-schema's coercer takes a check that threw as failing).
pub(crate) fn passes_in<'a>(cx: &Resolver<'a>, node: &'a Value, value: &Value) -> bool {
    cx.passes(node, value, || explain_in(cx, node, value).is_empty()) && !cx.too_deep()
}

fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn push(out: &mut Vec<Explained>, at: String, message: String) {
    out.push(Explained {
        pointer: at,
        message,
    });
}

/// The names pi-schema knows as types; any other name matches nothing.
fn type_holds(value: &Value, name: &str) -> bool {
    match name {
        "number" | "integer" | "boolean" | "string" | "null" | "array" | "object" => {
            matches_type(value, name)
        }
        _ => false,
    }
}

fn walk<'a>(cx: &Resolver<'a>, schema: &'a Value, v: &Value, path: &str, out: &mut Vec<Explained>) {
    let node = match schema {
        Value::Bool(false) => {
            return push(out, path.to_owned(), text::FALSE_SCHEMA.to_owned());
        }
        Value::Object(node) => node,
        _ => return,
    };
    if let Some(ty) = node.get("type") {
        let types: Vec<String> = match ty {
            Value::Array(ts) => ts.iter().map(type_label).collect(),
            other => vec![type_label(other)],
        };
        if !types.iter().any(|t| type_holds(v, t)) {
            return push(out, path.to_owned(), text::wrong_type(&types, v));
        }
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        if !values.iter().any(|a| js_equal(a, v)) {
            push(out, path.to_owned(), text::one_of(values));
        }
    }
    if let Some(constant) = node.get("const") {
        if !js_equal(constant, v) {
            push(out, path.to_owned(), text::constant(constant));
        }
    }
    match v {
        Value::String(s) => walk_string(node, s, path, out),
        Value::Number(n) => walk_number(node, as_f64(n), path, out),
        Value::Object(map) => walk_object(cx, node, map, path, out),
        Value::Array(items) => walk_array(cx, node, items, path, out),
        _ => {}
    }
    if let Some(Value::Array(all)) = node.get("allOf") {
        for branch in all {
            walk(cx, branch, v, path, out);
        }
    }
    if let Some(Value::Array(any)) = node.get("anyOf") {
        walk_union(cx, any, v, path, out, false);
    }
    if let Some(Value::Array(one)) = node.get("oneOf") {
        walk_union(cx, one, v, path, out, true);
    }
    if let Some(not) = node.get("not") {
        if passes_in(cx, not, v) {
            push(out, path.to_owned(), text::NOT.to_owned());
        }
    }
    if let Some(condition) = node.get("if") {
        let branch = if passes_in(cx, condition, v) {
            node.get("then")
        } else {
            node.get("else")
        };
        if let Some(branch) = branch {
            walk(cx, branch, v, path, out);
        }
    }
    if let Some(Value::String(reference)) = node.get("$ref") {
        walk_ref(cx, schema, reference, v, path, out);
    }
}

/// A `$ref`: the value walked against its target, or failed when the target is not found.
fn walk_ref<'a>(
    cx: &Resolver<'a>,
    holder: &Value,
    reference: &str,
    v: &Value,
    path: &str,
    out: &mut Vec<Explained>,
) {
    let Some(target) = cx.resolve(holder, reference) else {
        return push(out, path.to_owned(), text::unresolved_reference(reference));
    };
    if cx.enter() {
        walk(cx, target, v, path, out);
        cx.leave();
    }
}

/// A `type` entry as JavaScript's template literal prints it.
fn type_label(t: &Value) -> String {
    match t {
        Value::String(s) => s.clone(),
        other => crate::json::to_string(other).unwrap_or_default(),
    }
}

fn limit(node: &Map<String, Value>, keyword: &str) -> Option<f64> {
    node.get(keyword).and_then(Value::as_f64)
}

fn walk_string(node: &Map<String, Value>, s: &str, path: &str, out: &mut Vec<Explained>) {
    let n = s.chars().count() as f64;
    if let Some(min) = limit(node, "minLength").filter(|&m| n < m) {
        push(out, path.to_owned(), text::at_least(min, "characters"));
    }
    if let Some(max) = limit(node, "maxLength").filter(|&m| n > m) {
        push(out, path.to_owned(), text::at_most(max, "characters"));
    }
    if let Some(Value::String(pattern)) = node.get("pattern") {
        if !SchemaRegex::new(pattern).map_or(true, |re| re.is_match(s)) {
            push(out, path.to_owned(), text::pattern(pattern));
        }
    }
    if let Some(Value::String(format)) = node.get("format") {
        if !super::schema_format::matches(format, s) {
            push(out, path.to_owned(), text::format(format));
        }
    }
}

fn walk_number(node: &Map<String, Value>, v: f64, path: &str, out: &mut Vec<Explained>) {
    type Bound = (&'static str, &'static str, fn(f64, f64) -> bool);
    let bounds: [Bound; 4] = [
        ("minimum", ">=", |v, l| v < l),
        ("maximum", "<=", |v, l| v > l),
        ("exclusiveMinimum", ">", |v, l| v <= l),
        ("exclusiveMaximum", "<", |v, l| v >= l),
    ];
    for (keyword, comparison, fails) in bounds {
        if let Some(l) = limit(node, keyword).filter(|&l| fails(v, l)) {
            push(out, path.to_owned(), text::bound(comparison, l));
        }
    }
    if let Some(d) = limit(node, "multipleOf").filter(|&d| !is_multiple(v, d)) {
        push(out, path.to_owned(), text::multiple_of(d));
    }
}

/// pi-schema's `isMultiple`: exact in the numbers' shortest decimal spellings.
fn is_multiple(v: f64, d: f64) -> bool {
    let q = v / d;
    if q.is_finite() && q.fract() == 0.0 {
        return true;
    }
    if !q.is_finite() {
        return v % d == 0.0;
    }
    let ((vc, ve), (dc, de)) = (decimal(v), decimal(d));
    if dc == 0 {
        return false;
    }
    if ve >= de {
        let power = pow_mod(10, (ve - de) as u32, dc);
        (vc % dc) * power % dc == 0
    } else {
        let scaled = 10u128
            .checked_pow((de - ve) as u32)
            .and_then(|p| p.checked_mul(dc));
        scaled.map_or(vc == 0, |m| vc % m == 0)
    }
}

/// `|x|` as digits and a power of ten (`0.25` is `(25, -2)`).
fn decimal(x: f64) -> (u128, i32) {
    let spelled = format!("{:e}", x.abs());
    let (mantissa, exponent) = spelled.split_once('e').unwrap_or((&spelled, "0"));
    let fraction = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let digits = mantissa.replace('.', "").parse().unwrap_or(0);
    (digits, exponent.parse::<i32>().unwrap_or(0) - fraction)
}

fn pow_mod(base: u128, mut exp: u32, modulus: u128) -> u128 {
    let (mut result, mut b) = (1 % modulus, base % modulus);
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * b % modulus;
        }
        b = b * b % modulus;
        exp >>= 1;
    }
    result
}

fn walk_object<'a>(
    cx: &Resolver<'a>,
    node: &'a Map<String, Value>,
    v: &Map<String, Value>,
    path: &str,
    out: &mut Vec<Explained>,
) {
    let empty = Map::new();
    let properties = node
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(Value::Array(required)) = node.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if !v.contains_key(key) {
                push(out, pointer(path, key), text::MISSING.to_owned());
            }
        }
    }
    for key in js_keys(properties) {
        if let Some(value) = v.get(key) {
            walk(cx, &properties[key], value, &pointer(path, key), out);
        }
    }
    let patterns: Vec<(Arc<SchemaRegex>, &'a Value)> = node
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| {
            js_keys(p)
                .into_iter()
                .filter_map(|k| SchemaRegex::new(k).ok().map(|re| (re, &p[k])))
                .collect()
        })
        .unwrap_or_default();
    for key in js_keys(v) {
        let at = pointer(path, key);
        let mut matched = properties.contains_key(key);
        for (re, schema) in &patterns {
            if re.is_match(key) {
                matched = true;
                walk(cx, schema, &v[key], &at, out);
            }
        }
        match node.get("additionalProperties") {
            Some(Value::Bool(false)) if !matched => {
                push(out, at.clone(), text::UNKNOWN_FIELD.to_owned());
            }
            Some(additional) if !matched => walk(cx, additional, &v[key], &at, out),
            _ => {}
        }
        if let Some(names) = node.get("propertyNames") {
            if !passes_in(cx, names, &Value::String(key.clone())) {
                push(out, at, text::INVALID_PROPERTY_NAME.to_owned());
            }
        }
    }
    let count = v.len() as f64;
    if let Some(min) = limit(node, "minProperties").filter(|&m| count < m) {
        push(out, path.to_owned(), text::at_least(min, "properties"));
    }
    if let Some(max) = limit(node, "maxProperties").filter(|&m| count > m) {
        push(out, path.to_owned(), text::at_most(max, "properties"));
    }
    let mut dependencies: Vec<(&String, &'a Value)> = Vec::new();
    for keyword in ["dependentRequired", "dependencies"] {
        if let Some(Value::Object(deps)) = node.get(keyword) {
            for key in js_keys(deps) {
                match dependencies.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = &deps[key],
                    None => dependencies.push((key, &deps[key])),
                }
            }
        }
    }
    for (key, dependency) in dependencies {
        if !v.contains_key(key) {
            continue;
        }
        match dependency {
            Value::Array(needed) => {
                for name in needed.iter().filter_map(Value::as_str) {
                    if !v.contains_key(name) {
                        push(out, pointer(path, name), text::required_when(key));
                    }
                }
            }
            schema => walk(cx, schema, &Value::Object(v.clone()), path, out),
        }
    }
    if let Some(Value::Object(schemas)) = node.get("dependentSchemas") {
        for key in js_keys(schemas) {
            if v.contains_key(key) {
                walk(cx, &schemas[key], &Value::Object(v.clone()), path, out);
            }
        }
    }
}

fn walk_array<'a>(
    cx: &Resolver<'a>,
    node: &'a Map<String, Value>,
    items: &[Value],
    path: &str,
    out: &mut Vec<Explained>,
) {
    let (prefix, rest): (&[Value], Option<&Value>) =
        match (node.get("items"), node.get("prefixItems")) {
            (Some(Value::Array(tuple)), _) => (tuple, node.get("additionalItems")),
            (items_schema, Some(Value::Array(prefix))) => (prefix, items_schema),
            (items_schema, _) => (&[], items_schema),
        };
    for (i, item) in items.iter().enumerate() {
        if let Some(schema) = prefix.get(i).or(rest) {
            walk(cx, schema, item, &format!("{path}/{i}"), out);
        }
    }
    let len = items.len() as f64;
    if let Some(min) = limit(node, "minItems").filter(|&m| len < m) {
        push(out, path.to_owned(), text::at_least(min, "items"));
    }
    if let Some(max) = limit(node, "maxItems").filter(|&m| len > m) {
        push(out, path.to_owned(), text::at_most(max, "items"));
    }
    if node.get("uniqueItems") == Some(&Value::Bool(true)) {
        let duplicate = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| js_equal(a, b)));
        if duplicate {
            push(out, path.to_owned(), text::UNIQUE_ITEMS.to_owned());
        }
    }
    if let Some(contains) = node.get("contains") {
        let min = limit(node, "minContains").unwrap_or(1.0);
        let max = limit(node, "maxContains").unwrap_or(f64::INFINITY);
        let matching = items
            .iter()
            .filter(|item| passes_in(cx, contains, item))
            .count() as f64;
        if matching < min || matching > max {
            push(out, path.to_owned(), text::contains(min, max));
        }
    }
}

fn walk_union<'a>(
    cx: &Resolver<'a>,
    branches: &'a [Value],
    v: &Value,
    path: &str,
    out: &mut Vec<Explained>,
    exactly_one: bool,
) {
    let matches = branches.iter().filter(|b| passes_in(cx, b, v)).count();
    if matches == 1 || (!exactly_one && matches > 0) {
        return;
    }
    if matches > 1 {
        return push(out, path.to_owned(), text::MORE_THAN_ONE.to_owned());
    }
    if let (Some((key, tags)), Value::Object(map)) = (tag_of(cx, branches), v) {
        let given = map.get(key);
        let found = given.and_then(|g| {
            tags.iter()
                .position(|t| !g.is_object() && !g.is_array() && js_equal(t, g))
        });
        match found {
            Some(i) => walk(cx, &branches[i], v, path, out),
            None => push(out, pointer(path, key), text::one_of(&tags)),
        }
        return;
    }
    let mut best: Option<(Vec<Explained>, usize)> = None;
    for branch in branches {
        let mut errors = Vec::new();
        walk(cx, branch, v, path, &mut errors);
        let Some(first) = errors.first() else {
            continue;
        };
        let declared = match v {
            Value::Object(map) => declared_keys(cx, branch, map),
            _ => 0,
        };
        let better = best.as_ref().is_none_or(|(e, d)| {
            declared > *d
                || (declared == *d
                    && first.pointer.encode_utf16().count() > e[0].pointer.encode_utf16().count())
        });
        if better {
            best = Some((errors, declared));
        }
    }
    match best {
        Some((errors, _)) => out.extend(errors),
        None => push(out, path.to_owned(), text::NO_ALTERNATIVE.to_owned()),
    }
}

fn declared_keys(cx: &Resolver<'_>, branch: &Value, v: &Map<String, Value>) -> usize {
    let properties = through_ref(cx, branch).and_then(|b| b.get("properties")?.as_object());
    properties.map_or(0, |p| v.keys().filter(|k| p.contains_key(*k)).count())
}

/// A property whose `const` differs in every branch (a discriminated union): its name and the
/// branches' values.
fn tag_of<'a>(cx: &Resolver<'a>, branches: &'a [Value]) -> Option<(&'a String, Vec<Value>)> {
    let resolved: Vec<Option<&Value>> = branches.iter().map(|b| through_ref(cx, b)).collect();
    let first = resolved.first()?.as_ref()?.get("properties")?.as_object()?;
    for key in js_keys(first) {
        let values: Option<Vec<Value>> = resolved
            .iter()
            .map(|b| {
                let tag = b
                    .as_ref()?
                    .get("properties")?
                    .as_object()?
                    .get(key)?
                    .as_object()?;
                tag.get("const")
                    .filter(|c| !c.is_object() && !c.is_array())
                    .cloned()
            })
            .collect();
        if let Some(values) = values {
            let unique = values
                .iter()
                .enumerate()
                .all(|(i, a)| !values[..i].iter().any(|b| js_equal(a, b)));
            if unique {
                return Some((key, values));
            }
        }
    }
    None
}

/// A branch as pi-schema's union explanations read it: the target of its `$ref` (`None` when that
/// does not resolve), else the branch itself.
fn through_ref<'a>(cx: &Resolver<'a>, branch: &'a Value) -> Option<&'a Value> {
    match branch.get("$ref") {
        Some(Value::String(reference)) => cx.resolve(branch, reference),
        _ => Some(branch),
    }
}
