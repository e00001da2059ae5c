//! Building request bodies from values already made. `json!` copies every value it is given
//! (through serialization, for a `Vec<Value>` or a `Map` too); a body's messages are built for
//! every call, so their parts are moved into place instead.

use serde_json::{Map, Value};

/// A JSON object of `members`, in order, moved in.
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect::<Map<String, Value>>(),
    )
}
