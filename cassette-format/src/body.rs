//! A recorded request body as text, in pieces: each request repeats the conversation before it,
//! so a reader keeps a body as the text before one array, the array's elements and the text
//! after it, and the next body (a [`BodyDelta`] of it) shares them. Comparing a body with a
//! text walks the pieces; nothing is copied or parsed again.

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

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
