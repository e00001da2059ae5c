//! The flags extensions register (`pi.registerFlag`) and the command line's values for them
//! (Pi 1.5.2's `applyExtensionFlagValues`): the command line's unknown `--name [value]` options
//! are handed to the extension host, which sets those of registered flags for `pi.getFlag`;
//! the others are Pi's errors, worded here.

use serde::Deserialize;
use serde_json::{Map, Value};

/// One flag an extension registered, as `init` lists it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlagDeclaration {
    pub name: String,
    /// `"boolean"` or `"string"`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub extension_path: Option<String>,
}

/// An option the command line gave that Pi's own options do not know: `--name` alone (`None`)
/// or with its value (`--name value`, `--name=value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GivenFlag {
    pub name: String,
    pub value: Option<String>,
}

/// The values sent to the extension host (`{name: true}` or `{name: "value"}`; a flag given
/// twice keeps its last value, as Pi's `Map` does).
pub fn flag_values(given: &[GivenFlag]) -> Value {
    let mut values = Map::new();
    for flag in given {
        let value = match &flag.value {
            Some(text) => Value::String(text.clone()),
            None => Value::Bool(true),
        };
        values.insert(flag.name.clone(), value);
    }
    Value::Object(values)
}

/// Pi's errors about `given` against the flags `declared`: a string flag without a value, in
/// the order given, then every option no extension registered, in one line.
pub fn flag_errors(declared: &[FlagDeclaration], given: &[GivenFlag]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for (index, flag) in given.iter().enumerate() {
        // A name given again counts where it was first given, with its last value (Pi's `Map`).
        if given[..index].iter().any(|f| f.name == flag.name) {
            continue;
        }
        let last = given
            .iter()
            .rev()
            .find(|f| f.name == flag.name)
            .unwrap_or(flag);
        match declared.iter().find(|d| d.name == flag.name) {
            None => unknown.push(&flag.name),
            Some(d) if d.kind != "boolean" && last.value.is_none() => errors.push(format!(
                "Extension flag \"--{}\" requires a value",
                flag.name
            )),
            Some(_) => {}
        }
    }
    if !unknown.is_empty() {
        let plural = if unknown.len() == 1 { "" } else { "s" };
        let names: Vec<String> = unknown.iter().map(|n| format!("--{n}")).collect();
        errors.push(format!("Unknown option{plural}: {}", names.join(", ")));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn given(name: &str, value: Option<&str>) -> GivenFlag {
        GivenFlag {
            name: name.into(),
            value: value.map(str::to_owned),
        }
    }

    fn declared(name: &str, kind: &str) -> FlagDeclaration {
        FlagDeclaration {
            name: name.into(),
            kind: kind.into(),
            default: None,
            description: None,
            extension_path: None,
        }
    }

    #[test]
    fn unregistered_options_are_one_error_and_a_string_flag_needs_a_value() {
        let flags = [declared("greeting", "string"), declared("loud", "boolean")];
        let line = [
            given("foo", None),
            given("greeting", None),
            given("loud", Some("yes")),
            given("bar", Some("3")),
        ];
        assert_eq!(
            flag_errors(&flags, &line),
            [
                "Extension flag \"--greeting\" requires a value",
                "Unknown options: --foo, --bar"
            ]
        );
        assert_eq!(
            flag_errors(&[], &[given("foo", None)]),
            ["Unknown option: --foo"]
        );
        assert!(flag_errors(&flags, &[given("greeting", Some("hi"))]).is_empty());
    }

    #[test]
    fn a_flag_given_twice_keeps_its_last_value() {
        let line = [given("greeting", Some("a")), given("greeting", Some("b"))];
        assert_eq!(flag_values(&line), json!({"greeting": "b"}));
        assert_eq!(flag_values(&[given("loud", None)]), json!({"loud": true}));
    }
}
