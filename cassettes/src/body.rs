//! A recorded request body as text, in pieces: each request repeats the conversation before it,
//! so a replay keeps a body as the text before one array, the array's elements and the text
//! after it, and the next body (a [`BodyDelta`] of it) shares them. Comparing a body with the
//! text of the request a replay builds walks the pieces; nothing is copied or parsed again.
//!
//! A replay checks one request per turn, and each repeats the turns before: writing every
//! element out again would make a replay quadratic in text. [`CheckedElements`] remembers the
//! elements of the last body found equal to its recording, so an element the next recording
//! shares (the same piece of text) is checked by comparing the built value with the one
//! before, and only new elements are written out.

use std::sync::Arc;

use pi_providers::RequestBody;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::format::{BodyDelta, RawJson};

/// A recorded body's JSON text (compact, as this build writes it).
#[derive(Clone, Debug)]
pub enum BodyText {
    Whole(RawJson),
    /// `head` `[` `items` joined by `,` `]` `tail`.
    Split {
        array: String,
        head: Arc<str>,
        items: Vec<Arc<str>>,
        tail: Arc<str>,
    },
}

impl BodyText {
    /// The body `delta` makes of this one.
    pub fn apply(&self, delta: &BodyDelta) -> Result<BodyText, String> {
        let (head, items, tail) = match self {
            BodyText::Split {
                array,
                head,
                items,
                tail,
            } if *array == delta.array => (Arc::clone(head), items.clone(), Arc::clone(tail)),
            _ => split(&self.text(), &delta.array)?,
        };
        let kept = items.get(..delta.keep).ok_or_else(|| {
            format!(
                "`keep` {} is more than the previous {} elements",
                delta.keep,
                items.len()
            )
        })?;
        let items = kept
            .iter()
            .cloned()
            .chain(delta.append.iter().map(|item| Arc::from(item.get())))
            .collect();
        Ok(BodyText::Split {
            array: delta.array.clone(),
            head,
            items,
            tail,
        })
    }

    /// Whether `text` is this body's text.
    pub fn is(&self, text: &str) -> bool {
        match self {
            BodyText::Whole(raw) => raw.get() == text,
            BodyText::Split {
                head, items, tail, ..
            } => {
                let mut rest = text;
                let mut take = |piece: &str| match rest.strip_prefix(piece) {
                    Some(after) => {
                        rest = after;
                        true
                    }
                    None => false,
                };
                if !(take(head) && take("[")) {
                    return false;
                }
                let items_match = items
                    .iter()
                    .enumerate()
                    .all(|(i, item)| (i == 0 || take(",")) && take(item));
                items_match && take("]") && take(tail) && rest.is_empty()
            }
        }
    }

    /// Whether `body`, as this build writes it, is this body's text. The elements of an array
    /// found equal are kept in `checked` for the next body's check; an element the body shares
    /// with the last one checked (the same allocation, found equal to the same recorded text)
    /// is not looked at again.
    pub fn matches(&self, body: &RequestBody, checked: &mut CheckedElements) -> bool {
        let BodyText::Split {
            array,
            head,
            items,
            tail,
        } = self
        else {
            checked.elements.clear();
            return serde_json::to_string(body).is_ok_and(|text| self.is(&text));
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

    /// The whole text.
    pub fn text(&self) -> String {
        match self {
            BodyText::Whole(raw) => raw.get().to_owned(),
            BodyText::Split {
                head, items, tail, ..
            } => {
                let size =
                    head.len() + tail.len() + items.iter().map(|i| i.len() + 1).sum::<usize>();
                let mut out = String::with_capacity(size + 2);
                out.push_str(head);
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(item);
                }
                out.push(']');
                out.push_str(tail);
                out
            }
        }
    }

    /// The body as JSON (for a diff).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text()).unwrap_or(Value::Null)
    }

    /// The body as one piece of JSON text.
    pub fn to_raw(&self) -> RawJson {
        match self {
            BodyText::Whole(raw) => raw.clone(),
            split => RawJson::from_text(split.text())
                .unwrap_or_else(|_| RawJson::from_value(&Value::Null)),
        }
    }
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

/// A body's text before an array, the array's elements, the text after it.
type Pieces = (Arc<str>, Vec<Arc<str>>, Arc<str>);

/// `text` (a compact JSON object) cut around its `array` member: the text before the array,
/// its elements, the text after.
fn split(text: &str, array: &str) -> Result<Pieces, String> {
    let entries: RawEntries<'_> =
        serde_json::from_str(text).map_err(|e| format!("the previous body: {e}"))?;
    let mut head = String::from("{");
    let mut tail = String::new();
    let mut items = None;
    for (index, (key, value)) in entries.0.iter().enumerate() {
        let out = if items.is_some() {
            &mut tail
        } else {
            &mut head
        };
        if index > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(key).map_err(|e| e.to_string())?);
        out.push(':');
        if key == array && items.is_none() {
            let elements: Vec<&RawValue> = serde_json::from_str(value.get())
                .map_err(|_| format!("`{array}` of the previous body is not an array"))?;
            items = Some(elements.iter().map(|e| Arc::from(e.get())).collect());
        } else {
            out.push_str(value.get());
        }
    }
    tail.push('}');
    let items = items.ok_or_else(|| format!("the previous body has no `{array}`"))?;
    Ok((Arc::from(head), items, Arc::from(tail)))
}

/// A JSON object's members as text, in order.
struct RawEntries<'a>(Vec<(std::borrow::Cow<'a, str>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for RawEntries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = RawEntries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(RawEntries(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_chain_of_deltas_gives_each_body_as_written() {
        let bodies = [
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}], "stream": true}),
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b, \"c\""}], "stream": true}),
            json!({"model": "m", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b, \"c\""}], "stream": true}),
            json!({"model": "m", "messages": [{"role": "user", "content": "z"}], "stream": true}),
        ];
        let mut text = BodyText::Whole(RawJson::from_value(&bodies[0]));
        for pair in bodies.windows(2) {
            let delta = BodyDelta::between(&pair[0], &pair[1]).unwrap();
            text = text.apply(&delta).unwrap();
            let written = serde_json::to_string(&pair[1]).unwrap();
            assert!(text.is(&written), "{} vs {written}", text.text());
            assert_eq!(text.text(), written);
            assert!(!text.is(&written.replace("\"m\"", "\"n\"")));
            assert!(!text.is(&written[..written.len() - 1]));
        }
    }

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
        assert!(text.matches(&body(&bodies[0]), &mut checked));
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
                assert!(!text.matches(&body(wrong), &mut checked.clone()), "{wrong}");
            }
            assert!(text.matches(&body(&pair[1]), &mut checked));
            // Checked again with what it remembers of itself.
            assert!(text.matches(&body(&pair[1]), &mut checked));
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
        assert!(text.matches(&first, &mut checked));
        text = text
            .apply(&BodyDelta::between(&whole(&first), &whole(&second)).unwrap())
            .unwrap();
        assert!(text.matches(&second, &mut checked.clone()));
        // Another element in a kept place, a new element that differs, another outline.
        assert!(!text.matches(&shared(&[&a, &user("x"), &c]), &mut checked.clone()));
        assert!(!text.matches(&shared(&[&a, &b, &user("x")]), &mut checked.clone()));
        let mut other = fields.clone();
        other.insert("stream".into(), json!(false));
        let outline = RequestBody::with_shared(other, "messages", vec![a, b, c]);
        assert!(!text.matches(&outline, &mut checked.clone()));
        // The same body unshared is the same text.
        assert!(text.matches(&RequestBody::from(whole(&second)), &mut checked));
    }

    #[test]
    fn bodies_that_differ_elsewhere_have_no_delta() {
        let a = json!({"model": "m", "messages": [], "max_tokens": 1});
        assert!(
            BodyDelta::between(&a, &json!({"model": "m", "messages": [1], "max_tokens": 2}))
                .is_none()
        );
        assert!(
            BodyDelta::between(&a, &json!({"messages": [], "model": "m", "max_tokens": 1}))
                .is_none()
        );
        assert!(BodyDelta::between(&a, &json!([1])).is_none());
    }
}
