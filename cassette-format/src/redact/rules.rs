//! The user's own redaction rules (the `redact` settings entry), as vcrpy's `filter_headers`
//! and `before_record` let a user add theirs: header names whose values are secrets, JSON
//! paths into request bodies whose values are secrets, and patterns whose matches are secrets
//! wherever they appear.
//!
//! A value a rule finds becomes a secret like a credential: it gets a placeholder, and every
//! line written after it is found holds the placeholder instead. Patterns are applied to every
//! line, the cassette's header included, so a value the run itself starts from (its prompt,
//! its working directory) is replaced before a replay reads it again. Headers and JSON paths
//! are found in requests; a replay puts the recorded placeholder back where the rule found a
//! value (see [`Rules::adopt_placeholders`]), so a field the run computes again still matches.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The rules as settings and a cassette's header hold them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RulesSpec {
    /// Header names (any case) whose values are secrets, in requests and responses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// Paths into request bodies (`$.metadata.user_id`, `messages[*].content`) whose string
    /// or number values are secrets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<String>,
    /// Regular expressions whose matches (the first group's, when the pattern has groups) are
    /// secrets wherever they appear.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
}

impl RulesSpec {
    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.json_paths.is_empty() && self.patterns.is_empty()
    }
}

/// Why a rule cannot be used; names the settings field and the rule's place in it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    #[error("settings `redact`: {0}")]
    Shape(String),
    #[error("settings `redact.jsonPaths[{index}]` ({path:?}): {why}")]
    Path {
        index: usize,
        path: String,
        why: String,
    },
    #[error("settings `redact.patterns[{index}]` ({pattern:?}): {why}")]
    Pattern {
        index: usize,
        pattern: String,
        why: String,
    },
}

/// How far a value a rule found is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Everywhere it appears (a pattern's match).
    Everywhere,
    /// Only where the rule found it (a header's or a JSON path's value): the run may take the
    /// same value from its configuration, which a replay reads again as it was.
    Here,
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
    /// Every member or element.
    Any,
    /// The members of this name at any depth (`..name`).
    Deep(String),
}

/// The rules, compiled.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    spec: RulesSpec,
    /// Lower-cased header names.
    headers: Vec<String>,
    paths: Vec<Vec<Step>>,
    patterns: Vec<Regex>,
}

impl Rules {
    /// The rules of the settings entry `redact` (absent: none).
    pub fn from_setting(value: Option<&Value>) -> Result<Rules, RuleError> {
        let Some(value) = value else {
            return Ok(Rules::default());
        };
        let spec: RulesSpec =
            serde_json::from_value(value.clone()).map_err(|e| RuleError::Shape(e.to_string()))?;
        Rules::compile(spec)
    }

    /// Compiles `spec`.
    pub fn compile(spec: RulesSpec) -> Result<Rules, RuleError> {
        let paths = spec
            .json_paths
            .iter()
            .enumerate()
            .map(|(index, path)| {
                parse_path(path).map_err(|why| RuleError::Path {
                    index,
                    path: path.clone(),
                    why,
                })
            })
            .collect::<Result<_, _>>()?;
        let patterns = spec
            .patterns
            .iter()
            .enumerate()
            .map(|(index, pattern)| {
                Regex::new(pattern).map_err(|e| RuleError::Pattern {
                    index,
                    pattern: pattern.clone(),
                    why: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        let headers = spec
            .headers
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        Ok(Rules {
            spec,
            headers,
            paths,
            patterns,
        })
    }

    /// The rules as written (for a cassette's header).
    pub fn spec(&self) -> &RulesSpec {
        &self.spec
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.spec.is_empty()
    }

    /// Whether the header `name` is one whose value is a secret.
    pub fn names_header(&self, name: &str) -> bool {
        self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// Whether the rules find values in requests (header names or JSON paths), which a
    /// replay must then put back as recorded.
    pub fn finds_in_requests(&self) -> bool {
        !self.headers.is_empty() || !self.paths.is_empty()
    }

    /// Whether any JSON path is set (request bodies are then searched).
    pub fn has_paths(&self) -> bool {
        !self.paths.is_empty()
    }

    /// Whether any pattern is set (lines are then searched string by string).
    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    /// `text` with what the patterns match replaced by `placeholder_of` the match; `None` when
    /// nothing matched.
    pub fn replace_matches(
        &self,
        text: &str,
        placeholder_of: &mut impl FnMut(&str, Reach) -> String,
    ) -> Option<String> {
        let mut current: Option<String> = None;
        for pattern in &self.patterns {
            let source = current.as_deref().unwrap_or(text);
            let mut out = String::with_capacity(source.len());
            let mut last = 0;
            for captures in pattern.captures_iter(source) {
                let Some(m) = captures.get(1).or_else(|| captures.get(0)) else {
                    continue;
                };
                if m.as_str().is_empty() || m.start() < last {
                    continue;
                }
                out.push_str(&source[last..m.start()]);
                out.push_str(&placeholder_of(m.as_str(), Reach::Everywhere));
                last = m.end();
            }
            if last > 0 {
                out.push_str(&source[last..]);
                current = Some(out);
            }
        }
        current
    }

    /// Whether lines must be searched value by value (patterns; header names, which also
    /// name members of objects such as the headers a configuration holds; JSON paths, tried
    /// at the root of every line as at the root of every request body).
    pub fn searches_lines(&self) -> bool {
        !self.patterns.is_empty() || !self.headers.is_empty() || !self.paths.is_empty()
    }

    /// Replaces, everywhere in `value`, what the patterns match in strings and the string
    /// members named as header rules name them; whether anything changed.
    pub fn replace_in_value(
        &self,
        value: &mut Value,
        placeholder_of: &mut impl FnMut(&str, Reach) -> String,
    ) -> bool {
        match value {
            Value::String(text) => match self.replace_matches(text, placeholder_of) {
                Some(replaced) => {
                    *text = replaced;
                    true
                }
                None => false,
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
                self.replace_in_value(item, placeholder_of) | changed
            }),
            Value::Object(map) => map.iter_mut().fold(false, |changed, (key, item)| {
                let named = match item {
                    Value::String(text) if self.names_header(key) && !is_placeholder(text) => {
                        *text = placeholder_of(text, Reach::Here);
                        true
                    }
                    _ => false,
                };
                named | self.replace_in_value(item, placeholder_of) | changed
            }),
            _ => false,
        }
    }

    /// Replaces the string and number values at the JSON paths of `body` by `placeholder_of`
    /// each; whether anything changed.
    pub fn replace_at_paths(
        &self,
        body: &mut Value,
        placeholder_of: &mut impl FnMut(&str, Reach) -> String,
    ) -> bool {
        let mut changed = false;
        for path in &self.paths {
            visit_mut(body, path, &mut |value| {
                if let Some(text) = scalar_text(value) {
                    let placeholder = placeholder_of(&text, Reach::Here);
                    *value = Value::String(placeholder);
                    changed = true;
                }
            });
        }
        changed
    }

    /// `headers` and `body` of a replayed request with the recorded request's placeholders put
    /// where the rules found values when it was recorded: a value the run computes again is
    /// not compared, as a redacted one cannot be. `None` when no rule changes anything.
    pub fn adopt_placeholders(
        &self,
        recorded: (&[(String, String)], &Value),
        replayed: (&[(String, String)], &Value),
    ) -> Option<(Vec<(String, String)>, Value)> {
        if !self.finds_in_requests() {
            return None;
        }
        let (recorded_headers, recorded_body) = recorded;
        let mut changed = false;
        let headers = replayed
            .0
            .iter()
            .map(|(name, value)| {
                let placeholder = recorded_headers
                    .iter()
                    .find(|(n, v)| n == name && is_placeholder(v))
                    .filter(|_| self.names_header(name));
                match placeholder {
                    Some((_, placeholder)) if placeholder != value => {
                        changed = true;
                        (name.clone(), placeholder.clone())
                    }
                    _ => (name.clone(), value.clone()),
                }
            })
            .collect();
        let mut body = replayed.1.clone();
        for path in &self.paths {
            changed |= adopt_at(&mut body, recorded_body, path);
        }
        changed.then_some((headers, body))
    }
}

/// Whether `text` is a placeholder a recorder writes.
pub(crate) fn is_placeholder(text: &str) -> bool {
    text.starts_with("<<") && text.ends_with(">>") && !text.contains(char::is_whitespace)
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Calls `found` with each value of `value` at `path`, to change it.
fn visit_mut(value: &mut Value, path: &[Step], found: &mut impl FnMut(&mut Value)) {
    let Some((step, rest)) = path.split_first() else {
        found(value);
        return;
    };
    match (step, value) {
        (Step::Key(key), Value::Object(map)) => {
            if let Some(member) = map.get_mut(key) {
                visit_mut(member, rest, found);
            }
        }
        (Step::Index(i), Value::Array(items)) => {
            if let Some(item) = items.get_mut(*i) {
                visit_mut(item, rest, found);
            }
        }
        (Step::Any, Value::Object(map)) => {
            map.values_mut().for_each(|v| visit_mut(v, rest, found));
        }
        (Step::Any, Value::Array(items)) => {
            items.iter_mut().for_each(|v| visit_mut(v, rest, found))
        }
        (Step::Deep(key), value) => visit_deep(value, key, rest, found),
        _ => {}
    }
}

/// Calls `found` with each value at `rest` below every member named `key` at any depth.
fn visit_deep(value: &mut Value, key: &str, rest: &[Step], found: &mut impl FnMut(&mut Value)) {
    match value {
        Value::Object(map) => {
            for (name, member) in map.iter_mut() {
                if name == key {
                    visit_mut(member, rest, found);
                } else {
                    visit_deep(member, key, rest, found);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| visit_deep(v, key, rest, found)),
        _ => {}
    }
}

/// Puts the placeholders `recorded` holds at `path` into `replayed` at the same places;
/// whether anything changed.
fn adopt_at(replayed: &mut Value, recorded: &Value, path: &[Step]) -> bool {
    let Some((step, rest)) = path.split_first() else {
        return match recorded {
            Value::String(placeholder) if is_placeholder(placeholder) && replayed != recorded => {
                *replayed = recorded.clone();
                true
            }
            _ => false,
        };
    };
    match (step, replayed, recorded) {
        (Step::Key(key), Value::Object(mine), Value::Object(theirs)) => {
            match (mine.get_mut(key), theirs.get(key)) {
                (Some(mine), Some(theirs)) => adopt_at(mine, theirs, rest),
                _ => false,
            }
        }
        (Step::Index(i), Value::Array(mine), Value::Array(theirs)) => {
            match (mine.get_mut(*i), theirs.get(*i)) {
                (Some(mine), Some(theirs)) => adopt_at(mine, theirs, rest),
                _ => false,
            }
        }
        (Step::Any, Value::Object(mine), Value::Object(theirs)) => {
            let mut changed = false;
            for (key, value) in mine.iter_mut() {
                if let Some(theirs) = theirs.get(key) {
                    changed |= adopt_at(value, theirs, rest);
                }
            }
            changed
        }
        (Step::Any, Value::Array(mine), Value::Array(theirs)) => {
            let mut changed = false;
            for (value, theirs) in mine.iter_mut().zip(theirs) {
                changed |= adopt_at(value, theirs, rest);
            }
            changed
        }
        (Step::Deep(key), mine, theirs) => adopt_deep(mine, theirs, key, rest),
        _ => false,
    }
}

/// [`adopt_at`] below every member named `key` at any depth.
fn adopt_deep(mine: &mut Value, theirs: &Value, key: &str, rest: &[Step]) -> bool {
    let mut changed = false;
    match (mine, theirs) {
        (Value::Object(mine), Value::Object(theirs)) => {
            for (name, value) in mine.iter_mut() {
                let Some(theirs) = theirs.get(name) else {
                    continue;
                };
                changed |= if name == key {
                    adopt_at(value, theirs, rest)
                } else {
                    adopt_deep(value, theirs, key, rest)
                };
            }
        }
        (Value::Array(mine), Value::Array(theirs)) => {
            for (value, theirs) in mine.iter_mut().zip(theirs) {
                changed |= adopt_deep(value, theirs, key, rest);
            }
        }
        _ => {}
    }
    changed
}

/// Parses `$.a.b[0][*].c`, `a.b.*.c`, `$..name` or `a["odd key"]`.
fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut rest = path.trim();
    rest = rest.strip_prefix('$').unwrap_or(rest);
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or("an unclosed `[`")?;
            let inside = after[..end].trim();
            steps.push(match inside {
                "*" => Step::Any,
                quoted
                    if quoted.len() >= 2
                        && (quoted.starts_with('"') || quoted.starts_with('\'')) =>
                {
                    Step::Key(quoted[1..quoted.len() - 1].to_owned())
                }
                number => {
                    Step::Index(number.parse().map_err(|_| {
                        format!("`[{number}]` is not an index, `*` or a quoted key")
                    })?)
                }
            });
            rest = &after[end + 1..];
            continue;
        }
        let deep = rest.starts_with("..");
        rest = rest
            .strip_prefix("..")
            .or(rest.strip_prefix('.'))
            .unwrap_or(rest);
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let key = &rest[..end];
        if key.is_empty() {
            return Err("an empty step".into());
        }
        steps.push(match (deep, key) {
            (true, "*") => return Err("`..*` names everything".into()),
            (true, key) => Step::Deep(key.to_owned()),
            (false, "*") => Step::Any,
            (false, key) => Step::Key(key.to_owned()),
        });
        rest = &rest[end..];
    }
    if steps.is_empty() {
        return Err("the path names nothing".into());
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn rules(value: Value) -> Result<Rules, RuleError> {
        Rules::from_setting(Some(&value))
    }

    #[test]
    fn paths_find_values_through_members_indexes_and_wildcards() {
        let rules = rules(json!({
            "jsonPaths": ["$.metadata.user_id", "messages[*].content", "tags[1]", "a[\"b.c\"]", "$..deep"]
        }))
        .unwrap();
        let body = json!({
            "metadata": {"user_id": "alice-1234"},
            "messages": [{"content": "one"}, {"content": 2}, {"content": {"nested": true}}],
            "tags": ["x", "y"],
            "a": {"b.c": "dotted"},
            "z": [{"x": {"deep": "found"}}, {"deep": {"deep": "outer wins"}}]
        });
        let mut found = Vec::new();
        let mut body = body;
        assert!(rules.replace_at_paths(&mut body, &mut |v, _| {
            found.push(v.to_owned());
            format!("<<{}>>", found.len())
        }));
        assert_eq!(found, ["alice-1234", "one", "2", "y", "dotted", "found"]);
        assert_eq!(body["z"][1]["deep"], json!({"deep": "outer wins"}));
        assert_eq!(body["messages"][1]["content"], "<<3>>");
        assert_eq!(body["messages"][2]["content"], json!({"nested": true}));
    }

    #[test]
    fn a_bad_rule_is_named_by_its_field_and_place() {
        let error = rules(json!({"patterns": ["ok", "(unclosed"]})).unwrap_err();
        assert!(
            matches!(&error, RuleError::Pattern { index: 1, .. }),
            "{error}"
        );
        assert!(error
            .to_string()
            .starts_with("settings `redact.patterns[1]`"));
        let error = rules(json!({"jsonPaths": ["a[x]"]})).unwrap_err();
        assert!(matches!(error, RuleError::Path { index: 0, .. }), "{error}");
        let error = rules(json!({"headerz": []})).unwrap_err();
        assert!(matches!(error, RuleError::Shape(_)), "{error}");
        assert!(rules(json!({"jsonPaths": ["a...b"]})).is_err());
        assert!(rules(json!({"jsonPaths": ["a."]})).is_err());
        assert!(rules(json!({"jsonPaths": ["$"]})).is_err());
        assert!(rules(json!({"jsonPaths": ["$..*"]})).is_err());
    }

    #[test]
    fn a_pattern_with_a_group_replaces_the_group_and_header_rules_name_members() {
        let rules = rules(json!({
            "patterns": ["ticket=([0-9]+)", "acct-[a-z]{4}"],
            "headers": ["X-Tenant"]
        }))
        .unwrap();
        let mut value = json!({
            "text": "see ticket=4242 and acct-wxyz, ticket= too",
            "options": {"headers": {"x-tenant": "acme", "other": "kept"}},
            "list": ["acct-abcd"]
        });
        let mut found = Vec::new();
        assert!(rules.replace_in_value(&mut value, &mut |v, _| {
            found.push(v.to_owned());
            format!("<<{}>>", found.len())
        }));
        assert_eq!(found, ["4242", "acct-wxyz", "acme", "acct-abcd"]);
        assert_eq!(
            value,
            json!({
                "text": "see ticket=<<1>> and <<2>>, ticket= too",
                "options": {"headers": {"x-tenant": "<<3>>", "other": "kept"}},
                "list": ["<<4>>"]
            })
        );
    }

    #[test]
    fn a_replayed_request_takes_the_recorded_placeholders_where_the_rules_point() {
        let rules = rules(json!({
            "headers": ["X-Tenant"],
            "jsonPaths": ["metadata.user_id", "items[*].id"]
        }))
        .unwrap();
        let recorded_headers = vec![("x-tenant".to_owned(), "<<secret-2>>".to_owned())];
        let recorded = json!({
            "metadata": {"user_id": "<<secret-1>>"},
            "items": [{"id": "<<secret-3>>"}, {"id": "kept"}],
            "other": "<<secret-1>>"
        });
        let headers = vec![("x-tenant".to_owned(), "acme".to_owned())];
        let replayed = json!({
            "metadata": {"user_id": "alice"},
            "items": [{"id": "one"}, {"id": "two"}],
            "other": "alice"
        });
        let (headers, body) = rules
            .adopt_placeholders((&recorded_headers, &recorded), (&headers, &replayed))
            .unwrap();
        assert_eq!(headers, recorded_headers);
        assert_eq!(
            body,
            json!({
                "metadata": {"user_id": "<<secret-1>>"},
                "items": [{"id": "<<secret-3>>"}, {"id": "two"}],
                "other": "alice"
            })
        );
        assert!(rules
            .adopt_placeholders(
                (&recorded_headers, &recorded),
                (&recorded_headers, &recorded)
            )
            .is_none());
    }
}
