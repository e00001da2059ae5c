//! A field that Pi may leave out, write as `null`, or give a value.
//!
//! JavaScript distinguishes `undefined` (the key is dropped by `JSON.stringify`) from `null` (the key
//! is written). A few of Pi's fields can be either, so round-tripping them needs three states.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Absent, explicitly `null`, or a value. Use with
/// `#[serde(default, skip_serializing_if = "Nullable::is_absent")]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Nullable<T> {
    #[default]
    Absent,
    Null,
    Value(T),
}

impl<T> Nullable<T> {
    /// True when the key should be left out.
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }

    /// The value, if there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Nullable::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(v) => v.serialize(serializer),
            _ => serializer.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            Some(v) => Nullable::Value(v),
            None => Nullable::Null,
        })
    }
}
