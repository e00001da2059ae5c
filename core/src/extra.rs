//! Fields of a JSON object that this version does not model, kept so that a line read from Pi is
//! written back unchanged. Almost always empty, so it costs one pointer until it is not.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Unknown fields, in the order they were read. Use with `#[serde(flatten)]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    /// No unknown fields.
    pub fn new() -> Self {
        Extra(None)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// An unknown field by name.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|m| m.get(key))
    }

    /// Adds or replaces a field.
    pub fn insert(&mut self, key: String, value: Value) {
        self.0
            .get_or_insert_with(Default::default)
            .insert(key, value);
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().flat_map(|m| m.iter())
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(self.0.as_ref().map(|m| m.len()))?;
        for (key, value) in self.iter() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ExtraVisitor;

        impl<'de> Visitor<'de> for ExtraVisitor {
            type Value = Extra;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Extra, A::Error> {
                let mut extra = Extra::new();
                while let Some((key, value)) = access.next_entry::<String, Value>()? {
                    extra.insert(key, value);
                }
                Ok(extra)
            }
        }

        deserializer.deserialize_map(ExtraVisitor)
    }
}
