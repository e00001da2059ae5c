//! The parts of a Chat Completions chunk the decoder reads, borrowed from the bytes where
//! possible. Fields are lenient as pi-ai's JavaScript is: a field of an unexpected type is
//! treated as absent instead of failing the chunk.

use std::borrow::Cow;
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A string, or nothing when the JSON value is not a string.
#[derive(Debug, Default)]
pub(super) struct Text<'a>(pub(super) Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }

            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(v.to_owned()))))
            }

            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_unit<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_none<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }

        deserializer.deserialize_any(TextVisitor)
    }
}

impl Text<'_> {
    /// The string, when it is one and not empty.
    pub(super) fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|s| !s.is_empty())
    }

    /// A delta's text: as [`Text::non_empty`], or also empty in an event a recording `emptied`.
    pub(super) fn delta(&self, emptied: bool) -> Option<&str> {
        match emptied {
            true => self.0.as_deref(),
            false => self.non_empty(),
        }
    }
}

/// A list, or nothing when the JSON value is not one.
#[derive(Debug)]
pub(super) struct List<T>(pub(super) Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Array(items) => Ok(List(
                items
                    .into_iter()
                    .filter_map(|v| T::deserialize(v).ok())
                    .collect(),
            )),
            _ => Ok(List(Vec::new())),
        }
    }
}

/// One streamed chunk.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Chunk<'a> {
    #[serde(borrow)]
    pub(super) id: Text<'a>,
    #[serde(borrow)]
    pub(super) model: Text<'a>,
    pub(super) usage: Option<Value>,
    pub(super) error: Option<Value>,
    #[serde(borrow)]
    pub(super) choices: Choices<'a>,
    /// A recording's mark on an event whose delta it emptied while it replaced a key the model
    /// streamed in pieces (the cassette format's `EMPTIED`): the run saw a delta here.
    #[serde(rename = "pi:emptied")]
    pub(super) emptied: Option<Value>,
}

/// The `choices` array; only the first element matters.
#[derive(Debug, Default)]
pub(super) struct Choices<'a>(pub(super) Option<Choice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChoicesVisitor;

        impl<'de> Visitor<'de> for ChoicesVisitor {
            type Value = Choices<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the choices")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Choices<'de>, A::Error> {
                let first = seq.next_element::<Choice<'de>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Choices(first))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Choices<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Choices(None))
            }

            fn visit_unit<E>(self) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }

            fn visit_str<E>(self, _: &str) -> Result<Choices<'de>, E> {
                Ok(Choices(None))
            }
        }

        deserializer.deserialize_any(ChoicesVisitor)
    }
}

/// `choices[0]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Choice<'a> {
    #[serde(borrow)]
    pub(super) delta: Option<Delta<'a>>,
    pub(super) finish_reason: Option<Value>,
    pub(super) usage: Option<Value>,
}

/// `choices[0].delta`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Delta<'a> {
    #[serde(borrow)]
    pub(super) content: Text<'a>,
    #[serde(borrow)]
    pub(super) reasoning_content: Text<'a>,
    #[serde(borrow)]
    pub(super) reasoning: Text<'a>,
    #[serde(borrow)]
    pub(super) reasoning_text: Text<'a>,
    pub(super) tool_calls: List<ToolCallDelta>,
    pub(super) reasoning_details: List<Value>,
}

/// One entry of `delta.tool_calls`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ToolCallDelta {
    pub(super) index: Option<Value>,
    pub(super) id: Option<Value>,
    pub(super) function: Option<Value>,
}
