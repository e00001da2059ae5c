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
}
