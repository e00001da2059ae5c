//! The cassette formats' versions and the features a cassette may require, in one place.
//!
//! A version is `major.minor`. Minors only add what an older reader of the same major may
//! ignore, so a reader reads every minor of its major; a higher major is refused. What a reader
//! must understand to replay a cassette at all is named in the header's `features`: a name this
//! build does not know (in [`KNOWN_FEATURES`] / [`PROXY_KNOWN_FEATURES`]) refuses the cassette.
//! Both refusals tell the user to use a newer pi: the cassette cannot be used by this build,
//! which says nothing about whether the build reproduces the run.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A format version, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FormatVersion {
    pub major: u32,
    pub minor: u32,
}

/// The run-cassette format this build writes; it reads every `1.x`.
pub const FORMAT_VERSION: FormatVersion = FormatVersion::new(1, 0);

/// The proxy-cassette format this build writes; it reads every `1.x`.
pub const PROXY_FORMAT_VERSION: FormatVersion = FormatVersion::new(1, 0);

/// The `features` of a run cassette this build understands (none is defined yet).
pub const KNOWN_FEATURES: &[&str] = &[];

/// The `features` of a proxy cassette this build understands (none is defined yet).
pub const PROXY_KNOWN_FEATURES: &[&str] = &[];

impl FormatVersion {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        FormatVersion { major, minor }
    }

    /// `format` as a header holds it: a number `N` (`N.0`: every cassette written before
    /// minors existed holds the number 1) or a string `"N.M"`.
    pub fn from_json(value: &Value) -> Result<FormatVersion, String> {
        let bad = || format!("field `format`: {value} is not a version (1 or \"1.0\")");
        match value {
            Value::Number(n) => {
                let major = n
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(bad)?;
                Ok(FormatVersion::new(major, 0))
            }
            Value::String(text) => {
                let (major, minor) = text.split_once('.').ok_or_else(bad)?;
                let number = |part: &str| {
                    let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
                    digits.then(|| part.parse::<u32>().ok()).flatten()
                };
                match (number(major), number(minor)) {
                    (Some(major), Some(minor)) => Ok(FormatVersion::new(major, minor)),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Written as the number `N` for `N.0`, which every earlier build reads (so `git bisect` can
/// replay new cassettes with old builds), else as the string `"N.M"`.
impl Serialize for FormatVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.minor == 0 {
            serializer.serialize_u32(self.major)
        } else {
            serializer.serialize_str(&self.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for FormatVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        FormatVersion::from_json(&value).map_err(serde::de::Error::custom)
    }
}

/// Why this build cannot read a header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error(
        "{what} format {found} is newer than this build reads (format {reads}); use a newer pi"
    )]
    Newer {
        what: &'static str,
        found: FormatVersion,
        reads: FormatVersion,
    },
    #[error(
        "the {what} needs the feature `{feature}`, which this build does not know; use a newer pi"
    )]
    UnknownFeature { what: &'static str, feature: String },
    #[error("{0}")]
    Field(String),
}

/// Checks a header line (as JSON) that `what` names ("cassette", "proxy cassette") against a
/// reader of `reads` that knows the features `known`: its `format` and its `features`.
pub fn check_header(
    header: &Value,
    what: &'static str,
    reads: FormatVersion,
    known: &[&str],
) -> Result<(), Unreadable> {
    let format = header
        .get("format")
        .ok_or_else(|| Unreadable::Field("field `format`: missing".into()))?;
    let found = FormatVersion::from_json(format).map_err(Unreadable::Field)?;
    if found.major > reads.major {
        return Err(Unreadable::Newer { what, found, reads });
    }
    let features = match header.get("features") {
        None => return Ok(()),
        Some(Value::Array(features)) => features,
        Some(_) => return Err(Unreadable::Field("field `features`: not a list".into())),
    };
    for feature in features {
        let name = feature.as_str().ok_or_else(|| {
            Unreadable::Field(format!("field `features`: {feature} is not a name"))
        })?;
        if !known.contains(&name) {
            return Err(Unreadable::UnknownFeature {
                what,
                feature: name.to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn check(header: Value) -> Result<(), Unreadable> {
        check_header(&header, "cassette", FORMAT_VERSION, &["known"])
    }

    #[test]
    fn the_number_1_is_1_0_and_is_written_back_as_1() {
        let version = FormatVersion::from_json(&json!(1)).unwrap();
        assert_eq!(version, FormatVersion::new(1, 0));
        assert_eq!(serde_json::to_value(version).unwrap(), json!(1));
        let minor = FormatVersion::new(1, 3);
        assert_eq!(serde_json::to_value(minor).unwrap(), json!("1.3"));
        let back: FormatVersion = serde_json::from_value(json!("1.3")).unwrap();
        assert_eq!(back, minor);
    }

    #[test]
    fn every_minor_of_the_major_is_read() {
        for format in [json!(1), json!("1.0"), json!("1.7"), json!("1.4294967295")] {
            assert_eq!(check(json!({"format": format})), Ok(()), "{format}");
        }
    }

    #[test]
    fn a_higher_major_is_refused_naming_both_versions() {
        for (format, shown) in [
            (json!(2), "2.0"),
            (json!("2.0"), "2.0"),
            (json!("3.1"), "3.1"),
        ] {
            let error = check(json!({"format": format})).unwrap_err();
            assert!(matches!(error, Unreadable::Newer { .. }), "{error:?}");
            let text = error.to_string();
            assert!(text.contains(&format!("format {shown} is newer")), "{text}");
            assert!(text.contains("(format 1.0)"), "{text}");
            assert!(text.ends_with("use a newer pi"), "{text}");
        }
    }

    #[test]
    fn an_unknown_feature_is_refused_by_name_and_a_known_one_is_read() {
        assert_eq!(check(json!({"format": 1, "features": []})), Ok(()));
        assert_eq!(check(json!({"format": 1, "features": ["known"]})), Ok(()));
        let error = check(json!({"format": "1.2", "features": ["known", "streams-v9"]}));
        let error = error.unwrap_err();
        assert_eq!(
            error,
            Unreadable::UnknownFeature {
                what: "cassette",
                feature: "streams-v9".into()
            }
        );
        assert!(error.to_string().contains("`streams-v9`"));
        assert!(error.to_string().ends_with("use a newer pi"));
    }

    #[test]
    fn malformed_versions_and_features_are_field_errors() {
        for header in [
            json!({}),
            json!({"format": "1"}),
            json!({"format": "1.2.3"}),
            json!({"format": "a.b"}),
            json!({"format": "1.-1"}),
            json!({"format": " 1.0"}),
            json!({"format": 1.5}),
            json!({"format": -1}),
            json!({"format": 1, "features": "x"}),
            json!({"format": 1, "features": [7]}),
        ] {
            let error = check(header.clone()).unwrap_err();
            assert!(matches!(error, Unreadable::Field(_)), "{header}: {error:?}");
        }
    }
}
