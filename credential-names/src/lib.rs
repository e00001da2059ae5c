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

/// The variables a configured value names as Pi 1.5.2 interpolates them (`$NAME` and
/// `${NAME}`, `$$` and `$!` being a literal `$` and `!`; a `!command` names none): each one's
/// value is a credential wherever the configured value is one.
pub fn referenced_variables(configured: &str) -> Vec<&str> {
    let mut names = Vec::new();
    if configured.starts_with('!') {
        return names;
    }
    let name_len = |s: &str| {
        let first = s
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !first {
            return 0;
        }
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let mut rest = configured;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if after.starts_with('$') || after.starts_with('!') {
            rest = &after[1..];
        } else if let Some(braced) = after.strip_prefix('{') {
            let Some(end) = braced.find('}') else { break };
            let name = &braced[..end];
            if !name.is_empty() && name_len(name) == name.len() {
                names.push(name);
            }
            rest = &braced[end + 1..];
        } else {
            let len = name_len(after);
            if len > 0 {
                names.push(&after[..len]);
            }
            rest = &after[len..];
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
    }
}
