//! Fast deserialization of JSON objects tagged by a field (`type`, `role`).
//!
//! serde's internally tagged and untagged enums buffer the whole object before choosing a
//! variant, which made reading a large session several times slower than parsing its JSON.
//! Pi always writes the tag first, so [`Tagged`] types read the first key and, when it is the
//! tag, hand the rest of the object straight to the variant's own deserializer. An object whose
//! tag comes later, or whose tag is unknown, takes the slow path through a JSON map.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Error, MapAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

/// A type read from a JSON object whose `TAG` field names the variant.
pub(crate) trait Tagged: Sized {
    /// The name of the tag field.
    const TAG: &'static str;
    /// What the object is, for error messages.
    const EXPECTING: &'static str;

    /// Whether `tag` names a variant [`variant`](Self::variant) can read.
    fn known(tag: &str) -> bool;

    /// Reads the variant named by a known `tag` from the rest of the object.
    fn variant<'de, A: MapAccess<'de>>(
        tag: &str,
        rest: MapAccessDeserializer<A>,
    ) -> Result<Self, A::Error>;

    /// An object without a known tag: kept whole (`Other`) or refused.
    fn unknown(map: Map<String, Value>) -> Result<Self, String>;

    /// The slow path: the whole object (tag included, in its place).
    fn from_map(mut map: Map<String, Value>) -> Result<Self, String> {
        let tag = match map.get(Self::TAG) {
            Some(Value::String(tag)) if Self::known(tag) => tag.clone(),
            _ => return Self::unknown(map),
        };
        map.shift_remove(Self::TAG);
        Value::Object(map)
            .deserialize_map(VariantVisitor::<Self>(tag, PhantomData))
            .map_err(|e| e.to_string())
    }
}

/// Reads a known variant from an already-parsed map.
struct VariantVisitor<T>(String, PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for VariantVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::variant(&self.0, MapAccessDeserializer::new(map))
    }
}

/// Deserializes a [`Tagged`] type.
pub(crate) fn deserialize_tagged<'de, D: Deserializer<'de>, T: Tagged>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut whole = Map::new();
        if let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == T::TAG {
                let tag: Value = map.next_value()?;
                if let Some(name) = tag.as_str().filter(|name| T::known(name)) {
                    return T::variant(name, MapAccessDeserializer::new(map));
                }
                whole.insert(key.into_owned(), tag);
            } else {
                let value: Value = map.next_value()?;
                whole.insert(key.into_owned(), value);
            }
        }
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            whole.insert(key, value);
        }
        T::from_map(whole).map_err(A::Error::custom)
    }
}
