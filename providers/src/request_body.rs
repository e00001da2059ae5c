//! A request body whose conversation array may share its elements with the body of the turn
//! before. Every request repeats the conversation so far: an encoder that rebuilt each earlier
//! message as a fresh JSON tree at every turn would make a session quadratic in allocations, and
//! a replay, which checks every request, quadratic in time. An encoder that remembers what it
//! built hands the same elements out again, and whoever compares two bodies can tell a shared
//! element by its address.

use std::borrow::Cow;
use std::sync::Arc;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{Map, Value};

/// A JSON request body: an object, one of whose members may be an array of shared elements.
#[derive(Clone, Debug)]
pub struct RequestBody {
    /// The whole body; when `shared` is set, its member of that name holds an empty array in
    /// its place (so the members keep their order).
    object: Value,
    shared: Option<SharedArray>,
}

/// The elements of one array member of a body, each shareable with other bodies.
#[derive(Clone, Debug)]
pub struct SharedArray {
    pub key: String,
    pub elements: Vec<Arc<Value>>,
}

impl RequestBody {
    /// `fields` with the member `key` set to `elements` (an empty array placeholder keeps the
    /// member's place when `fields` has it already).
    pub fn with_shared(
        mut fields: Map<String, Value>,
        key: &str,
        elements: Vec<Arc<Value>>,
    ) -> Self {
        fields.insert(key.to_owned(), Value::Array(Vec::new()));
        RequestBody {
            object: Value::Object(fields),
            shared: Some(SharedArray {
                key: key.to_owned(),
                elements,
            }),
        }
    }

    /// The body as one JSON value: borrowed when nothing is shared, put together otherwise.
    pub fn to_value(&self) -> Cow<'_, Value> {
        let Some(shared) = &self.shared else {
            return Cow::Borrowed(&self.object);
        };
        let mut whole = self.object.clone();
        if let Some(slot) = whole.get_mut(&shared.key) {
            *slot = Value::Array(shared.elements.iter().map(|e| (**e).clone()).collect());
        }
        Cow::Owned(whole)
    }

    /// The members outside the shared array (which holds an empty array), and that array;
    /// `None` when the body shares nothing.
    pub fn split(&self) -> Option<(&Map<String, Value>, &SharedArray)> {
        match (&self.object, &self.shared) {
            (Value::Object(fields), Some(shared)) => Some((fields, shared)),
            _ => None,
        }
    }

    /// Sets the members of `overrides` (the caller's `body_overrides`), last. Overriding the
    /// shared array replaces it whole.
    pub fn override_fields(&mut self, overrides: &Map<String, Value>) {
        if overrides.is_empty() {
            return;
        }
        if self
            .shared
            .as_ref()
            .is_some_and(|s| overrides.contains_key(&s.key))
        {
            self.object = self.to_value().into_owned();
            self.shared = None;
        }
        if let Some(fields) = self.object.as_object_mut() {
            for (key, value) in overrides {
                fields.insert(key.clone(), value.clone());
            }
        }
    }
}

impl From<Value> for RequestBody {
    fn from(object: Value) -> Self {
        RequestBody {
            object,
            shared: None,
        }
    }
}

/// Bodies are equal when they are the same JSON, however their elements are shared.
impl PartialEq for RequestBody {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

/// Written exactly as [`RequestBody::to_value`] would be, without putting it together.
impl Serialize for RequestBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some((fields, shared)) = self.split() else {
            return self.object.serialize(serializer);
        };
        let mut out = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in fields {
            if *key == shared.key {
                out.serialize_entry(key, &shared.elements)?;
            } else {
                out.serialize_entry(key, value)?;
            }
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn shared_body() -> RequestBody {
        let Value::Object(fields) = json!({"model": "m", "messages": null, "stream": true}) else {
            unreachable!()
        };
        let elements = vec![
            Arc::new(json!({"role": "user", "content": "a\n\"b\""})),
            Arc::new(json!({"role": "assistant", "content": null})),
        ];
        RequestBody::with_shared(fields, "messages", elements)
    }

    #[test]
    fn a_shared_body_is_written_as_the_json_it_stands_for() {
        let body = shared_body();
        let whole = json!({"model": "m", "messages": [
            {"role": "user", "content": "a\n\"b\""},
            {"role": "assistant", "content": null},
        ], "stream": true});
        assert_eq!(*body.to_value(), whole);
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            serde_json::to_string(&whole).unwrap()
        );
        assert_eq!(body, RequestBody::from(whole));
    }

    #[test]
    fn overrides_land_last_and_replace_a_shared_array_whole() {
        let mut body = shared_body();
        body.override_fields(json!({"stop": ["x"], "model": "n"}).as_object().unwrap());
        let text = serde_json::to_string(&body).unwrap();
        assert!(
            text.starts_with(r#"{"model":"n","messages":[{"role":"user""#),
            "{text}"
        );
        assert!(text.ends_with(r#""stream":true,"stop":["x"]}"#), "{text}");
        assert!(body.split().is_some());
        body.override_fields(json!({"messages": []}).as_object().unwrap());
        assert!(body.split().is_none());
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"n","messages":[],"stream":true,"stop":["x"]}"#
        );
    }
}
