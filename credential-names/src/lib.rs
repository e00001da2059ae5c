//! Which names say their value is a credential. One rule, used wherever a value must be kept
//! from a recording or a shell by its name alone: the model registry gathering what to redact,
//! the shell's environment, and a cassette's headers. It has no dependencies, so the pure
//! providers and the cassette format can share it without depending on each other.

/// Word endings in a variable's or header's name that mark its value as a credential
/// (`API_KEY`, `APIKEY`, `GH_TOKEN`, `PGPASSWORD`).
const CREDENTIAL_ENDINGS: [&str; 6] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIALS",
];

/// Whole words of a header's name that mark its value as a credential (`authorization`,
/// `x-model-auth`, `cookie`). Not of a variable's: `SSH_AUTH_SOCK` names a socket.
const CREDENTIAL_HEADER_WORDS: [&str; 5] =
    ["AUTH", "AUTHORIZATION", "COOKIE", "SIGNATURE", "CREDENTIAL"];

/// The words of a name: its runs of letters and digits, upper-cased.
fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase)
}

/// Whether a variable named `name` holds a credential, judged by its name: a word ends in
/// KEY, TOKEN, SECRET, PASSWORD (`OPENAI_API_KEY`, `GH_TOKEN`, `AWS_SECRET_ACCESS_KEY`); not
/// `GIT_AUTHOR_NAME`, `KEYBOARD_LAYOUT` or `SSH_AUTH_SOCK`. Every provider's key variable is
/// one. Used to replace their values in recordings and to keep them from shell commands.
pub fn is_credential_variable(name: &str) -> bool {
    words(name).any(|w| CREDENTIAL_ENDINGS.iter().any(|e| w.ends_with(e)))
}

/// Whether a header named `name` holds a credential, judged by its name: as a variable's, or
/// a word that says authorization, a cookie or a signature (`X-Portkey-Api-Key`,
/// `cf-aig-authorization`, `x-model-auth`).
pub fn is_credential_name(name: &str) -> bool {
    is_credential_variable(name)
        || words(name).any(|w| CREDENTIAL_HEADER_WORDS.contains(&w.as_str()))
}

/// The credential in a header's value without its scheme: `KEY` of `Bearer KEY` (or of `Basic
/// KEY`, `Token KEY`), which a server or a model may repeat alone; `None` for a value of one word.
pub fn bare_token(value: &str) -> Option<&str> {
    let mut words = value.split_whitespace();
    let token = words.next_back()?;
    words.next().is_some().then_some(token)
}

/// One piece of a configured value (an `apiKey` or a header of models.json, auth.json's
/// `key`): text sent as it is, or a variable interpolated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplatePart<'a> {
    Literal(String),
    Variable(&'a str),
}

/// The length of the variable name `s` starts with (a letter or `_`, then letters, digits and
/// `_`); 0 when it starts with none.
fn name_len(s: &str) -> usize {
    let first = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first {
        return 0;
    }
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// A configured value that is not a `!command`, read as Pi 1.5.2 reads it: `$NAME` and
/// `${NAME}` interpolate a variable, `$$` and `$!` are a literal `$` and `!`, and anything
/// else (a bare `NAME`, a `$` before no name, `${bad-name}`, an unclosed `${`) is literal.
/// Adjacent literal text is one part.
pub fn template_parts(configured: &str) -> Vec<TemplatePart<'_>> {
    let mut parts = Vec::new();
    let literal = |parts: &mut Vec<TemplatePart<'_>>, text: &str| {
        if text.is_empty() {
            return;
        }
        match parts.last_mut() {
            Some(TemplatePart::Literal(last)) => last.push_str(text),
            _ => parts.push(TemplatePart::Literal(text.to_owned())),
        }
    };
    let mut rest = configured;
    while let Some(at) = rest.find('$') {
        literal(&mut parts, &rest[..at]);
        let after = &rest[at + 1..];
        if after.starts_with('$') || after.starts_with('!') {
            literal(&mut parts, &after[..1]);
            rest = &after[1..];
        } else if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                None => {
                    literal(&mut parts, "$");
                    rest = after;
                }
                Some(end) => {
                    let name = &braced[..end];
                    if !name.is_empty() && name_len(name) == name.len() {
                        parts.push(TemplatePart::Variable(name));
                    } else {
                        literal(&mut parts, &rest[at..at + end + 3]);
                    }
                    rest = &braced[end + 1..];
                }
            }
        } else {
            let len = name_len(after);
            if len > 0 {
                parts.push(TemplatePart::Variable(&after[..len]));
            } else {
                literal(&mut parts, "$");
            }
            rest = &after[len..];
        }
    }
    literal(&mut parts, rest);
    parts
}

/// The variables a configured value names as Pi 1.5.2 interpolates them ([`template_parts`];
/// a `!command` names none), each once, in order of first mention: each one's value is a
/// credential wherever the configured value is one.
pub fn referenced_variables(configured: &str) -> Vec<&str> {
    if configured.starts_with('!') {
        return Vec::new();
    }
    let mut names = Vec::new();
    for part in template_parts(configured) {
        if let TemplatePart::Variable(name) = part {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_that_hold_credentials() {
        for name in [
            "authorization",
            "x-api-key",
            "api-key",
            "x-goog-api-key",
            "cookie",
            "proxy-authorization",
            "X-Portkey-Api-Key",
            "cf-aig-authorization",
            "x-model-auth",
        ] {
            assert!(is_credential_name(name), "{name}");
        }
        for name in [
            "content-type",
            "x-title",
            "anthropic-version",
            "x-author",
            "user-agent",
        ] {
            assert!(!is_credential_name(name), "{name}");
        }
    }

    #[test]
    fn a_schemes_token_and_the_variables_a_value_names() {
        assert_eq!(bare_token("Bearer abc"), Some("abc"));
        assert_eq!(bare_token("  Basic  xyz "), Some("xyz"));
        assert_eq!(bare_token("abc"), None);
        assert_eq!(
            referenced_variables("Bearer $KEY and ${OTHER}-$$NOT $!NOT2 ${bad-name} $"),
            ["KEY", "OTHER"]
        );
        assert!(referenced_variables("!echo $KEY").is_empty());
        assert_eq!(referenced_variables("$A_1${B}"), ["A_1", "B"]);
        assert_eq!(referenced_variables("${A $B $B"), ["B"]);
    }

    /// Pi 1.5.2's `parseConfigValueTemplate`: escapes, names and what stays literal.
    #[test]
    fn a_configured_value_as_literal_text_and_variables() {
        use TemplatePart::{Literal, Variable};
        let lit = |s: &str| Literal(s.to_owned());
        assert_eq!(template_parts("OPENAI_API_KEY"), [lit("OPENAI_API_KEY")]);
        assert_eq!(template_parts("$KEY"), [Variable("KEY")]);
        assert_eq!(
            template_parts("Bearer ${KEY}x"),
            [lit("Bearer "), Variable("KEY"), lit("x")]
        );
        assert_eq!(template_parts("a$$b$!c"), [lit("a$b!c")]);
        assert_eq!(template_parts("$1 $ $-"), [lit("$1 $ $-")]);
        assert_eq!(template_parts("${bad-name}${}"), [lit("${bad-name}${}")]);
        assert_eq!(template_parts("x${A $B"), [lit("x${A "), Variable("B")]);
        assert_eq!(template_parts("$A$B"), [Variable("A"), Variable("B")]);
        assert!(template_parts("").is_empty());
    }
}
