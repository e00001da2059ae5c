//! Fields of a JSON object that this version does not model, kept so that a line read from Pi is
//! written back unchanged: their values, and, when the object's keys were not in the order this
//! version writes them (an unknown field between known ones, a migrated entry whose `id` comes
//! last, a field left out), the order they were read in. Almost always empty, so it costs one
//! pointer until it is not.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One key of an object as it was read: a known field (by its index in the struct) or an
/// unknown one (by its index among the unknown fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Known(u8),
    Extra(u16),
}

#[derive(Clone, Debug, Default)]
struct Inner {
    fields: Map<String, Value>,
    /// The keys in the order read; `None` when that order is the one the struct writes.
    layout: Option<Box<[Slot]>>,
}

/// Unknown fields, in the order they were read, and where they stood. Use with
/// `#[serde(flatten)]` (the values only) or inside a [`json_object!`](crate::json_object) struct
/// (values and places).
#[derive(Clone, Debug, Default)]
pub struct Extra(Option<Box<Inner>>);

/// Equality is about content: two objects with the same fields are equal whatever their key order.
impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        let empty = Map::new();
        let mine = self.0.as_ref().map_or(&empty, |i| &i.fields);
        let theirs = other.0.as_ref().map_or(&empty, |i| &i.fields);
        mine == theirs
    }
}

impl Extra {
    /// No unknown fields.
    pub fn new() -> Self {
        Extra(None)
    }

    /// Whether there are no unknown fields.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|i| i.fields.is_empty())
    }

    /// An unknown field by name.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().and_then(|i| i.fields.get(key))
    }

    /// Adds or replaces a field (a new one goes last).
    pub fn insert(&mut self, key: String, value: Value) {
        self.inner().fields.insert(key, value);
    }

    /// The fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().flat_map(|i| i.fields.iter())
    }

    /// The number of unknown fields.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |i| i.fields.len())
    }

    /// The unknown field at `index`, in read order.
    pub fn get_index(&self, index: usize) -> Option<(&String, &Value)> {
        self.0.as_ref().and_then(|i| i.fields.iter().nth(index))
    }

    /// The key order as read, when it differs from the struct's own.
    pub fn layout(&self) -> Option<&[Slot]> {
        self.0.as_ref().and_then(|i| i.layout.as_deref())
    }

    pub(crate) fn set_layout(&mut self, layout: Vec<Slot>) {
        self.inner().layout = Some(layout.into_boxed_slice());
    }

    fn inner(&mut self) -> &mut Inner {
        self.0.get_or_insert_with(Default::default)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
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

/// Follows the keys of one object while it is read, and keeps their order only when it is not
/// the struct's own: known fields ascending, unknown ones after them, every always-written field
/// present. Costs two integers for an object in the usual order.
#[derive(Debug, Default)]
pub struct KeyOrder {
    /// Known fields seen (bit per field index).
    seen: u64,
    /// Highest known index seen while the order is still the usual one.
    next: u8,
    /// Unknown fields seen while the order is still the usual one.
    extras: u16,
    /// The order read, once it departed from the usual one.
    slots: Option<Vec<Slot>>,
}

impl KeyOrder {
    /// A known field, by index. Returns false for a repeated key (its first place is kept).
    pub fn known(&mut self, index: u8) -> bool {
        let bit = 1u64 << index;
        if self.seen & bit != 0 {
            return false;
        }
        self.seen |= bit;
        match &mut self.slots {
            Some(slots) => slots.push(Slot::Known(index)),
            None if self.extras == 0 && index >= self.next => self.next = index + 1,
            None => {
                let mut slots = self.usual_so_far(self.seen & !bit);
                slots.push(Slot::Known(index));
                self.slots = Some(slots);
            }
        }
        true
    }

    /// A new unknown field, which is the `index`th unknown field of the object.
    pub fn extra(&mut self, index: usize) {
        match &mut self.slots {
            Some(slots) => slots.push(Slot::Extra(index as u16)),
            None => self.extras += 1,
        }
    }

    /// The order read, if the struct must keep it: it departed from the usual order, or a field
    /// in `always` (bits of fields written even at their default) was missing.
    pub fn finish(mut self, always: u64) -> Option<Vec<Slot>> {
        if self.slots.is_none() && always & !self.seen != 0 {
            self.slots = Some(self.usual_so_far(self.seen));
        }
        self.slots
    }

    fn usual_so_far(&self, seen: u64) -> Vec<Slot> {
        let mut slots: Vec<Slot> = (0..64u8)
            .filter(|i| seen & (1u64 << i) != 0)
            .map(Slot::Known)
            .collect();
        slots.extend((0..self.extras).map(Slot::Extra));
        slots
    }
}

/// A key read without copying when the input allows it.
#[derive(Debug)]
pub struct Key<'de>(pub std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Whether an optional field is left out when written.
pub trait Omit {
    fn omitted(&self) -> bool;
}

impl<T> Omit for Option<T> {
    fn omitted(&self) -> bool {
        self.is_none()
    }
}

impl<T> Omit for crate::nullable::Nullable<T> {
    fn omitted(&self) -> bool {
        self.is_absent()
    }
}

/// Declares a struct read from and written to a JSON object with Pi's key names, in Pi's key
/// order, keeping unknown fields and the order of keys as read (in a trailing `extra: Extra`).
///
/// Each field is `name: Type = "key" (mode)`, where mode is
/// - `req`: must be present; always written;
/// - `opt`: may be absent (the type's [`Omit`] says when it is left out on writing);
/// - `def`: may be absent (then the type's default); always written, unless it was absent when
///   read and still holds the default;
/// - `fixed`: may be absent (then the type's default); always written (a constant such as a
///   header's `type`, which a tagged reader has already taken).
#[macro_export]
macro_rules! json_object {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $key:literal ($mode:ident)
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// Unknown fields and the key order as read.
            pub extra: $crate::extra::Extra,
        }

        const _: () = {
            #[allow(non_camel_case_types, dead_code)]
            #[derive(Clone, Copy)]
            enum Index { $($field),* }

            const ALWAYS: u64 = 0 $( | $crate::json_object!(@always $mode, Index::$field) )*;

            impl $name {
                fn write_field<M: serde::ser::SerializeMap>(
                    &self,
                    index: u8,
                    map: &mut M,
                ) -> Result<(), M::Error> {
                    $(
                        if index == Index::$field as u8 {
                            if !$crate::json_object!(@omit $mode, &self.$field) {
                                map.serialize_entry($key, &self.$field)?;
                            }
                            return Ok(());
                        }
                    )*
                    Ok(())
                }
            }

            impl serde::Serialize for $name {
                fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    use serde::ser::SerializeMap;
                    let mut map = serializer.serialize_map(None)?;
                    match self.extra.layout() {
                        None => {
                            $(
                                if !$crate::json_object!(@omit $mode, &self.$field) {
                                    map.serialize_entry($key, &self.$field)?;
                                }
                            )*
                            for (key, value) in self.extra.iter() {
                                map.serialize_entry(key, value)?;
                            }
                        }
                        Some(slots) => {
                            let mut written = 0u64;
                            let mut extras = 0usize;
                            for slot in slots {
                                match *slot {
                                    $crate::extra::Slot::Known(index) => {
                                        written |= 1u64 << index;
                                        self.write_field(index, &mut map)?;
                                    }
                                    $crate::extra::Slot::Extra(index) => {
                                        extras = extras.max(usize::from(index) + 1);
                                        if let Some((key, value)) = self.extra.get_index(usize::from(index)) {
                                            map.serialize_entry(key, value)?;
                                        }
                                    }
                                }
                            }
                            $(
                                if written & (1u64 << Index::$field as u8) == 0
                                    && !$crate::json_object!(@omit_unread $mode, &self.$field, $ty)
                                {
                                    map.serialize_entry($key, &self.$field)?;
                                }
                            )*
                            for index in extras..self.extra.len() {
                                if let Some((key, value)) = self.extra.get_index(index) {
                                    map.serialize_entry(key, value)?;
                                }
                            }
                        }
                    }
                    map.end()
                }
            }

            impl<'de> serde::Deserialize<'de> for $name {
                fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                    struct ObjectVisitor;

                    impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
                        type Value = $name;

                        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                            f.write_str(concat!("struct ", stringify!($name)))
                        }

                        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                            $( let mut $field: Option<$ty> = None; )*
                            let mut extra = $crate::extra::Extra::new();
                            let mut order = $crate::extra::KeyOrder::default();
                            while let Some(key) = map.next_key::<$crate::extra::Key<'de>>()? {
                                match key.0.as_ref() {
                                    $(
                                        $key => {
                                            order.known(Index::$field as u8);
                                            $field = Some(map.next_value()?);
                                        }
                                    )*
                                    _ => {
                                        let value: serde_json::Value = map.next_value()?;
                                        let key = key.0.into_owned();
                                        if extra.get(&key).is_none() {
                                            order.extra(extra.len());
                                        }
                                        extra.insert(key, value);
                                    }
                                }
                            }
                            $(
                                let $field: $ty = match $field {
                                    Some(value) => value,
                                    None => $crate::json_object!(@missing $mode, $key),
                                };
                            )*
                            if let Some(slots) = order.finish(ALWAYS) {
                                extra.set_layout(slots);
                            }
                            Ok($name { $($field,)* extra })
                        }
                    }

                    deserializer.deserialize_map(ObjectVisitor)
                }
            }
        };
    };
    (@always req, $index:expr) => { 0 };
    (@always opt, $index:expr) => { 0 };
    (@always def, $index:expr) => { 1u64 << ($index as u8) };
    (@always fixed, $index:expr) => { 0 };
    (@omit req, $value:expr) => { false };
    (@omit opt, $value:expr) => { $crate::extra::Omit::omitted($value) };
    (@omit def, $value:expr) => { false };
    (@omit fixed, $value:expr) => { false };
    (@omit_unread req, $value:expr, $ty:ty) => { false };
    (@omit_unread opt, $value:expr, $ty:ty) => { $crate::extra::Omit::omitted($value) };
    (@omit_unread def, $value:expr, $ty:ty) => { *$value == <$ty as Default>::default() };
    (@omit_unread fixed, $value:expr, $ty:ty) => { false };
    (@missing req, $key:literal) => { return Err(serde::de::Error::missing_field($key)) };
    (@missing opt, $key:literal) => { Default::default() };
    (@missing def, $key:literal) => { Default::default() };
    (@missing fixed, $key:literal) => { Default::default() };
}

#[cfg(test)]
mod tests {
    use crate::message::{TextContent, Usage};
    use crate::session::entry::MessageEntry;

    fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(line: &str) -> String {
        crate::json::to_string(&serde_json::from_str::<T>(line).unwrap()).unwrap()
    }

    #[test]
    fn keys_come_back_in_the_order_read() {
        // A migrated v1 entry: `id` and `parentId` after the payload.
        let line = r#"{"timestamp":"t","message":{"role":"user","content":"x","timestamp":1},"id":"a","parentId":null}"#;
        assert_eq!(round_trip::<MessageEntry>(line), line);
        // An unknown field between known ones, and one after them.
        let line = r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":4,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0},"cacheWrite1h":0}"#;
        assert_eq!(round_trip::<Usage>(line), line);
    }

    #[test]
    fn an_absent_defaulted_field_stays_absent_and_a_repeated_key_keeps_its_first_place() {
        let line = r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
        assert_eq!(round_trip::<Usage>(line), line);
        // As JSON.parse: the last value, in the first key's place.
        assert_eq!(
            round_trip::<TextContent>(r#"{"text":"a","x":1,"text":"b","x":2}"#),
            r#"{"text":"b","x":2}"#
        );
    }

    #[test]
    fn a_missing_required_field_is_an_error_naming_it() {
        let error = serde_json::from_str::<TextContent>(r#"{"textSignature":"s"}"#).unwrap_err();
        assert!(
            error.to_string().contains("missing field `text`"),
            "{error}"
        );
    }
}
