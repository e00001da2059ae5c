//! The credentials a recording scrubs, one list for the `pi` binary (its recordings, imported
//! cassettes and eval reports) and the SDK's recordings, so both scrub the same set.

use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

/// Every credential a run on this machine could send or come across, with where it came from,
/// for a recording to scrub wherever it shows up (a prompt, a tool result, an answer): the
/// model registry's (`models.json`, `auth.json`, the environment:
/// [`ModelRegistry::credentials`]), then `others` (what `mcp.json` hands its servers, read by
/// `pi_mcp::machine_credentials`, which this crate cannot see; a program's own keys), each
/// value once, the first source named.
pub fn credentials(
    registry: &ModelRegistry,
    auth: &AuthStorage,
    env: &Environment,
    others: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    let registry = registry
        .credentials(auth, env)
        .into_iter()
        .map(|c| (c.value, c.source));
    for (value, source) in registry.chain(others) {
        if !found.iter().any(|(known, _)| *known == value) {
            found.push((value, source));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_providers::catalog;

    #[test]
    fn each_value_once_with_its_first_source() {
        let registry = ModelRegistry::builtin(catalog::builtin());
        let (auth, _) = AuthStorage::from_json(
            r#"{"anthropic": {"type": "api_key", "key": "sk-from-auth-0123456789"}}"#,
        );
        let found = credentials(
            &registry,
            &auth,
            &Environment::from_vars(Vec::<(String, String)>::new()),
            [
                ("sk-from-auth-0123456789".to_owned(), "again".to_owned()),
                ("mcp-token-0123456789".to_owned(), "mcp.json".to_owned()),
            ],
        );
        let values: Vec<&str> = found.iter().map(|(v, _)| v.as_str()).collect();
        assert_eq!(values, ["sk-from-auth-0123456789", "mcp-token-0123456789"]);
        assert_ne!(found[0].1, "again");
    }
}
