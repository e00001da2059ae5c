//! A replay's check of the request it builds against a recorded body ([`BodyText`], the text
//! in pieces: before one array, its elements, after it), walking the pieces; nothing is
//! copied or parsed again.
//!
//! A replay checks one request per turn, and each repeats the turns before: writing every
//! element out again would make a replay quadratic in text. [`CheckedElements`] remembers the
//! elements of the last body found equal to its recording, so an element the next recording
//! shares (the same piece of text) is checked by comparing the built value with the one
//! before, and only new elements are written out.

use std::sync::Arc;

use pi_providers::RequestBody;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

pub use pi_cassette_format::body::BodyText;

/// Whether `body`, as this build writes it, is this body's text. The elements of an array
/// found equal are kept in `checked` for the next body's check; an element the body shares
/// with the last one checked (the same allocation, found equal to the same recorded text)
/// is not looked at again.
pub fn matches(text: &BodyText, body: &RequestBody, checked: &mut CheckedElements) -> bool {
    let BodyText::Split {
        array,
        head,
        items,
        tail,
    } = text
    else {
        checked.elements.clear();
        return serde_json::to_string(body).is_ok_and(|written| text.is(&written));
    };
    let is_outline = |text: Result<String, serde_json::Error>| {
        text.is_ok_and(|text| {
            text.strip_prefix(&**head)
                .and_then(|rest| rest.strip_prefix("[]"))
                .is_some_and(|rest| rest == &**tail)
        })
    };
    let whole;
    let elements = match body.split() {
        Some((fields, shared)) if shared.key == *array => {
            let outline_checked = checked.outline.as_ref().is_some_and(|before| {
                Arc::ptr_eq(&before.head, head)
                    && Arc::ptr_eq(&before.tail, tail)
                    && members_alike(&before.members, fields)
            });
            if !outline_checked {
                if !is_outline(serde_json::to_string(fields)) {
                    return false;
                }
                checked.outline = Some(CheckedOutline {
                    head: Arc::clone(head),
                    tail: Arc::clone(tail),
                    members: fields.clone(),
                });
            }
            shared
                .elements
                .iter()
                .map(Element::Shared)
                .collect::<Vec<_>>()
        }
        _ => {
            checked.outline = None;
            whole = body.to_value();
            let Some(map) = whole.as_object() else {
                return false;
            };
            let Some(Value::Array(list)) = map.get(array.as_str()) else {
                return false;
            };
            if !is_outline(serde_json::to_string(&Outline { map, array })) {
                return false;
            }
            list.iter().map(Element::Plain).collect()
        }
    };
    if elements.len() != items.len() {
        return false;
    }
    let mut before = if checked.array == *array {
        std::mem::take(&mut checked.elements).into_iter()
    } else {
        Vec::new().into_iter()
    };
    let mut now = Vec::with_capacity(items.len());
    for (item, &element) in items.iter().zip(&elements) {
        let same_text = before.next().filter(|(text, _)| Arc::ptr_eq(text, item));
        // Checked before: the same allocation, or written alike. A shared element is then
        // remembered as itself (for the next address check), a plain one as before.
        let kept = same_text
            .filter(|(_, value)| match element {
                Element::Shared(shared) => {
                    Arc::ptr_eq(value, shared) || written_alike(value, shared)
                }
                Element::Plain(plain) => written_alike(value, plain),
            })
            .map(|(_, value)| match element {
                Element::Shared(shared) => Arc::clone(shared),
                Element::Plain(_) => value,
            });
        let remembered = match kept {
            Some(value) => value,
            None if serde_json::to_string(element.value()).is_ok_and(|t| *t == **item) => {
                element.to_arc()
            }
            None => return false,
        };
        now.push((Arc::clone(item), remembered));
    }
    checked.array.clone_from(array);
    checked.elements = now;
    true
}

/// One element of a body's array: shared (see [`RequestBody`]) or of a whole body.
#[derive(Clone, Copy)]
enum Element<'a> {
    Shared(&'a Arc<Value>),
    Plain(&'a Value),
}

impl<'a> Element<'a> {
    fn value(self) -> &'a Value {
        match self {
            Element::Shared(value) => value,
            Element::Plain(value) => value,
        }
    }

    /// The element, kept for the next check (a plain one is copied once, when first checked).
    fn to_arc(self) -> Arc<Value> {
        match self {
            Element::Shared(value) => Arc::clone(value),
            Element::Plain(value) => Arc::new(value.clone()),
        }
    }
}

/// The elements of the last body found equal to its recording, each with the recorded text it
/// was found equal to (see the module's documentation).
#[derive(Clone, Debug, Default)]
pub struct CheckedElements {
    array: String,
    elements: Vec<(Arc<str>, Arc<Value>)>,
    outline: Option<CheckedOutline>,
}

/// The members around the array (which is empty there) of the last body found equal, and the
/// recorded text before and after the array they were found equal to.
#[derive(Clone, Debug)]
struct CheckedOutline {
    head: Arc<str>,
    tail: Arc<str>,
    members: Map<String, Value>,
}

impl CheckedElements {
    /// Forgets the last body: the next check writes every element out.
    pub fn clear(&mut self) {
        self.elements.clear();
        self.outline = None;
    }
}

/// Whether `a` and `b` are written as the same text: equal, with their members in the same
/// order (which is what writing them keeps). Unlike `==`, it looks no key up.
fn written_alike(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => members_alike(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| written_alike(a, b))
        }
        // `0.0 == -0.0`, but they are written otherwise.
        (Value::Number(a), Value::Number(b)) => {
            a == b && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits)
        }
        _ => a == b,
    }
}

/// [`written_alike`] for the members of two objects.
fn members_alike(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && written_alike(va, vb))
}

/// A JSON object written with one array member empty: a split body's head, `[]` and tail.
struct Outline<'a> {
    map: &'a Map<String, Value>,
    array: &'a str,
}

impl Serialize for Outline<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(self.map.len()))?;
        for (key, value) in self.map {
            if key == self.array {
                out.serialize_entry(key, &[] as &[Value])?;
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
    use crate::format::{BodyDelta, RawJson};

    #[test]
    fn a_chain_checked_element_by_element_finds_what_the_text_finds() {
        let user = |c: &str| json!({"role": "user", "content": c});
        let bodies = [
            json!({"model": "m", "messages": [user("a")], "stream": true}),
            json!({"model": "m", "messages": [user("a"), user("b")], "stream": true}),
            json!({"model": "m", "messages": [user("a"), user("b"), user("c")], "stream": true}),
            json!({"model": "m", "messages": [user("z")], "stream": true}),
            json!({"model": "m", "messages": [user("z"), user("y")], "stream": true}),
        ];
        let mut text = BodyText::Whole(RawJson::from_value(&bodies[0]));
        let mut checked = CheckedElements::default();
        let body = |value: &Value| RequestBody::from(value.clone());
        assert!(matches(&text, &body(&bodies[0]), &mut checked));
        for pair in bodies.windows(2) {
            text = text
                .apply(&BodyDelta::between(&pair[0], &pair[1]).unwrap())
                .unwrap();
            // A changed kept element, a changed new one, a changed outline, the body before:
            // each is refused, with what the last check remembered.
            let last = pair[1]["messages"].as_array().unwrap().len() - 1;
            let mut wrongs = vec![pair[1].clone(), pair[1].clone(), pair[1].clone()];
            wrongs[0]["messages"][0]["content"] = json!("other");
            wrongs[1]["messages"][last]["role"] = json!("assistant");
            wrongs[2]["stream"] = json!(false);
            // The same members in another order are written differently.
            let mut reordered = serde_json::Map::new();
            let first = &pair[1]["messages"][0];
            reordered.insert("content".into(), first["content"].clone());
            reordered.insert("role".into(), first["role"].clone());
            let mut wrong = pair[1].clone();
            wrong["messages"][0] = Value::Object(reordered);
            wrongs.push(wrong);
            wrongs.push(pair[0].clone());
            for wrong in &wrongs {
                assert!(
                    !matches(&text, &body(wrong), &mut checked.clone()),
                    "{wrong}"
                );
            }
            assert!(matches(&text, &body(&pair[1]), &mut checked));
            // Checked again with what it remembers of itself.
            assert!(matches(&text, &body(&pair[1]), &mut checked));
        }
    }

    #[test]
    fn shared_elements_are_checked_once_and_a_changed_one_is_still_found() {
        let user = |c: &str| Arc::new(json!({"role": "user", "content": c}));
        let fields = json!({"model": "m", "messages": [], "stream": true});
        let fields = fields.as_object().unwrap();
        let (a, b, c) = (user("a"), user("b"), user("c"));
        let shared = |elements: &[&Arc<Value>]| {
            let elements = elements.iter().map(|e| Arc::clone(e)).collect();
            RequestBody::with_shared(fields.clone(), "messages", elements)
        };
        let first = shared(&[&a, &b]);
        let second = shared(&[&a, &b, &c]);
        let whole = |body: &RequestBody| body.to_value().into_owned();
        let mut text = BodyText::Whole(RawJson::from_value(&whole(&first)));
        let mut checked = CheckedElements::default();
        assert!(matches(&text, &first, &mut checked));
        text = text
            .apply(&BodyDelta::between(&whole(&first), &whole(&second)).unwrap())
            .unwrap();
        assert!(matches(&text, &second, &mut checked.clone()));
        // Another element in a kept place, a new element that differs, another outline.
        assert!(!matches(
            &text,
            &shared(&[&a, &user("x"), &c]),
            &mut checked.clone()
        ));
        assert!(!matches(
            &text,
            &shared(&[&a, &b, &user("x")]),
            &mut checked.clone()
        ));
        let mut other = fields.clone();
        other.insert("stream".into(), json!(false));
        let outline = RequestBody::with_shared(other, "messages", vec![a, b, c]);
        assert!(!matches(&text, &outline, &mut checked.clone()));
        // The same body unshared is the same text.
        assert!(matches(
            &text,
            &RequestBody::from(whole(&second)),
            &mut checked
        ));
    }
}
