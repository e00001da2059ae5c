//! The canonical form of a request: what replay matches on. Two requests that differ only in
//! what a client changes from run to run (credentials, user ids, cache keys, header order,
//! JSON key order) have the same canonical form; any other difference is a divergence.
//!
//! The form is: the method, the path with its query (credential parameters left out), the media
//! type of `content-type`, and the body as JSON with the ignored fields removed and object keys
//! sorted. Every other header is left out.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// Fields ignored by default: ids and cache keys a client may draw afresh for each run.
/// `metadata` (Anthropic's `user_id`, OpenAI's free-form tags), `user` and `safety_identifier`
/// (OpenAI's end-user ids), `prompt_cache_key` (a per-session cache key).
pub const DEFAULT_IGNORE: [&str; 4] = ["metadata", "user", "prompt_cache_key", "safety_identifier"];

/// Query parameters that carry credentials: never recorded, never matched on.
pub const SECRET_PARAMS: [&str; 4] = ["key", "api_key", "apikey", "token"];

/// Which body fields matching ignores: top-level member names (`metadata`) or JSON pointers
/// (`/messages/0/cache_control`), where a `*` token stands for every member or element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoreRule {
    fields: Vec<String>,
}

impl Default for IgnoreRule {
    fn default() -> Self {
        IgnoreRule {
            fields: DEFAULT_IGNORE.iter().map(|f| (*f).to_owned()).collect(),
        }
    }
}

impl IgnoreRule {
    /// Exactly these fields (an empty rule matches bodies whole).
    pub fn new(fields: Vec<String>) -> Self {
        IgnoreRule { fields }
    }

    /// The fields, as given.
    pub fn fields(&self) -> &[String] {
        &self.fields
    }

    /// `body` without the ignored fields.
    pub fn apply(&self, body: &mut Value) {
        for field in &self.fields {
            match field.strip_prefix('/') {
                Some(pointer) => {
                    let tokens: Vec<String> = pointer.split('/').map(unescape).collect();
                    remove(body, &tokens);
                }
                None => {
                    if let Value::Object(members) = body {
                        members.shift_remove(field.as_str());
                    }
                }
            }
        }
    }
}

/// A JSON pointer token as written (`~1` is `/`, `~0` is `~`).
fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Removes what `tokens` point at inside `value` (nothing when the path is not there).
fn remove(value: &mut Value, tokens: &[String]) {
    let Some((first, rest)) = tokens.split_first() else {
        return;
    };
    if rest.is_empty() {
        match value {
            Value::Object(members) if first == "*" => members.clear(),
            Value::Object(members) => {
                members.shift_remove(first.as_str());
            }
            // An array element is blanked rather than removed, so the others keep their places.
            Value::Array(items) if first == "*" => items.iter_mut().for_each(|i| *i = Value::Null),
            Value::Array(items) => {
                if let Some(item) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                    *item = Value::Null;
                }
            }
            _ => {}
        }
        return;
    }
    match value {
        Value::Object(members) if first == "*" => {
            members.values_mut().for_each(|v| remove(v, rest));
        }
        Value::Object(members) => {
            if let Some(v) = members.get_mut(first.as_str()) {
                remove(v, rest);
            }
        }
        Value::Array(items) if first == "*" => items.iter_mut().for_each(|v| remove(v, rest)),
        Value::Array(items) => {
            if let Some(v) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                remove(v, rest);
            }
        }
        _ => {}
    }
}

/// A request as matching sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct CanonicalRequest {
    pub method: String,
    /// The path and the query without credential parameters.
    pub path: String,
    /// The media type of `content-type`, lower case, without parameters.
    pub content_type: Option<String>,
    /// The body with the ignored fields removed (key order is left as it came: the digest and
    /// [`CanonicalRequest::to_value`] sort keys, equality of JSON objects ignores their order).
    pub body: Value,
}

impl CanonicalRequest {
    /// The canonical form of a request: `url` is its path and query, `body` its body as
    /// [`body_value`] reads it.
    pub fn new(
        method: &str,
        url: &str,
        content_type: Option<&str>,
        mut body: Value,
        rule: &IgnoreRule,
    ) -> Self {
        rule.apply(&mut body);
        CanonicalRequest {
            method: method.to_ascii_uppercase(),
            path: without_secret_params(url),
            content_type: media_type(content_type),
            body,
        }
    }

    /// The digest two requests are matched by.
    pub fn digest(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        for part in [&self.method, &self.path] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.update(self.content_type.as_deref().unwrap_or("").as_bytes());
        hash.update([0]);
        hash_value(&self.body, &mut hash);
        hash.finalize().into()
    }

    /// The request as JSON, for a divergence report's diff.
    pub fn to_value(&self) -> Value {
        json!({
            "method": self.method,
            "path": self.path,
            "contentType": self.content_type,
            "body": sorted(self.body.clone()),
        })
    }

    /// The method and path, which a nearest recording should share.
    pub fn route(&self) -> (&str, &str) {
        let path = self.path.split('?').next().unwrap_or("");
        (&self.method, path)
    }
}

/// The digest of a request as its bytes came: method, path and query without credential
/// parameters, media type, and the body's bytes. Requests with the same bytes have the same
/// canonical form, so a replay that finds this digest among its recordings' (their bodies
/// written as compact JSON, as most clients write theirs) skips parsing the body.
pub fn raw_digest(method: &str, url: &str, content_type: Option<&str>, body: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [&method.to_ascii_uppercase(), &without_secret_params(url)] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.update(media_type(content_type).unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(body);
    hash.finalize().into()
}

/// The media type of a `content-type` value, lower case, without parameters.
fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty())
}

/// A request body as a JSON value: `null` when empty, the JSON when it parses, else a string of
/// its (lossily decoded) text.
pub fn body_value(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// `url` without its credential query parameters.
pub fn without_secret_params(url: &str) -> String {
    let Some((path, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|param| {
            let name = param.split('=').next().unwrap_or("");
            !param.is_empty() && !SECRET_PARAMS.contains(&name.to_ascii_lowercase().as_str())
        })
        .collect();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// Feeds `value` to `hash` in an unambiguous encoding with object keys in sorted order, without
/// building a sorted copy (a request body holds the whole conversation, and this runs for every
/// request a replay answers).
fn hash_value(value: &Value, hash: &mut Sha256) {
    let text = |hash: &mut Sha256, s: &str| {
        hash.update((s.len() as u64).to_le_bytes());
        hash.update(s.as_bytes());
    };
    match value {
        Value::Null => hash.update(b"n"),
        Value::Bool(b) => hash.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            hash.update(b"#");
            text(hash, &n.to_string());
        }
        Value::String(s) => {
            hash.update(b"s");
            text(hash, s);
        }
        Value::Array(items) => {
            hash.update(b"[");
            hash.update((items.len() as u64).to_le_bytes());
            items.iter().for_each(|item| hash_value(item, hash));
        }
        Value::Object(members) => {
            hash.update(b"{");
            hash.update((members.len() as u64).to_le_bytes());
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (key, member) in members {
                text(hash, key);
                hash_value(member, hash);
            }
        }
    }
}

/// `value` with the keys of every object in sorted order (JSON key order means nothing).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(members) => {
            let mut members: Vec<(String, Value)> = members.into_iter().collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn canonical(url: &str, body: Value, rule: &IgnoreRule) -> CanonicalRequest {
        CanonicalRequest::new("post", url, Some("application/json"), body, rule)
    }

    #[test]
    fn volatile_fields_key_order_and_credentials_do_not_change_the_digest() {
        let rule = IgnoreRule::default();
        let a = canonical(
            "/v1/messages?key=AAAA&beta=true",
            json!({"model": "m", "metadata": {"user_id": "u1"}, "messages": [{"role": "user", "content": "hi"}]}),
            &rule,
        );
        let b = CanonicalRequest::new(
            "POST",
            "/v1/messages?beta=true&key=BBBB",
            Some("Application/JSON; charset=utf-8"),
            json!({"messages": [{"content": "hi", "role": "user"}], "model": "m", "metadata": {"user_id": "u2"}, "user": "x"}),
            &rule,
        );
        assert_eq!(a.path, "/v1/messages?beta=true");
        assert_eq!(b.path, "/v1/messages?beta=true");
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.route(), ("POST", "/v1/messages"));
    }

    #[test]
    fn anything_else_changes_the_digest() {
        let rule = IgnoreRule::default();
        let base = canonical("/v1/x", json!({"model": "m", "messages": ["a"]}), &rule);
        for other in [
            canonical("/v1/x", json!({"model": "n", "messages": ["a"]}), &rule),
            canonical(
                "/v1/x",
                json!({"model": "m", "messages": ["a", "b"]}),
                &rule,
            ),
            canonical("/v1/y", json!({"model": "m", "messages": ["a"]}), &rule),
            canonical(
                "/v1/x?stream=1",
                json!({"model": "m", "messages": ["a"]}),
                &rule,
            ),
            CanonicalRequest::new(
                "GET",
                "/v1/x",
                None,
                json!({"model": "m", "messages": ["a"]}),
                &rule,
            ),
        ] {
            assert_ne!(base.digest(), other.digest(), "{other:?}");
        }
    }

    #[test]
    fn the_raw_digest_ignores_credentials_and_content_type_parameters_only() {
        let body = br#"{"model":"m"}"#;
        let a = raw_digest("post", "/v1/x?key=A", Some("application/json"), body);
        let b = raw_digest(
            "POST",
            "/v1/x?key=B",
            Some("application/json; charset=utf-8"),
            body,
        );
        assert_eq!(a, b);
        let spaced = raw_digest(
            "POST",
            "/v1/x",
            Some("application/json"),
            br#"{"model": "m"}"#,
        );
        assert_ne!(a, spaced);
    }

    #[test]
    fn pointers_remove_nested_fields_and_wildcards_reach_every_element() {
        let rule = IgnoreRule::new(vec![
            "/messages/*/cache_control".into(),
            "/a~1b".into(),
            "/list/1".into(),
            "/missing/deep/path".into(),
        ]);
        let mut body = json!({
            "messages": [{"role": "user", "cache_control": 1}, {"role": "assistant", "cache_control": 2}, "text"],
            "a/b": 1, "list": [1, 2, 3], "metadata": {"user_id": "kept: not in this rule"}
        });
        rule.apply(&mut body);
        assert_eq!(
            body,
            json!({"messages": [{"role": "user"}, {"role": "assistant"}, "text"],
                   "list": [1, null, 3], "metadata": {"user_id": "kept: not in this rule"}})
        );
    }

    #[test]
    fn bodies_that_are_not_json_are_text_and_empty_bodies_null() {
        assert_eq!(body_value(b""), Value::Null);
        assert_eq!(body_value(b"{\"a\":1}"), json!({"a": 1}));
        assert_eq!(body_value(b"a=1&b=2"), json!("a=1&b=2"));
        assert_eq!(body_value(&[0xff, b'x']), json!("\u{fffd}x"));
    }
}
