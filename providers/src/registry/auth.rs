//! auth.json credentials and the environment-variable table pi-ai reads keys from.

use std::path::Path;

use serde_json::{Map, Value};

use super::env::Environment;

/// Providers whose subscription login stores an OAuth access token usable as the key.
const OAUTH_PROVIDERS: [&str; 3] = ["anthropic", "github-copilot", "openai-codex"];

/// Variables holding a provider's key, most preferred first (pi-ai's table).
pub fn key_variables(provider: &str) -> &'static [&'static str] {
    match provider {
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// pi-ai's `getEnvApiKey`: the first set key variable, or `<authenticated>` for the cloud
/// providers that authenticate through their own credential chains.
pub fn env_api_key(provider: &str, env: &Environment) -> Option<String> {
    if let Some(value) = key_variables(provider).iter().find_map(|v| env.get(v)) {
        return Some(value.to_owned());
    }
    let authenticated = match provider {
        "google-vertex" => {
            let adc = match env.get("GOOGLE_APPLICATION_CREDENTIALS") {
                Some(path) => env.exists(Path::new(path)),
                None => env.get("HOME").is_some_and(|home| {
                    env.exists(
                        &Path::new(home)
                            .join(".config/gcloud/application_default_credentials.json"),
                    )
                }),
            };
            let project = env
                .get("GOOGLE_CLOUD_PROJECT")
                .or(env.get("GCLOUD_PROJECT"));
            adc && project.is_some() && env.get("GOOGLE_CLOUD_LOCATION").is_some()
        }
        "amazon-bedrock" => {
            env.get("AWS_PROFILE").is_some()
                || (env.get("AWS_ACCESS_KEY_ID").is_some()
                    && env.get("AWS_SECRET_ACCESS_KEY").is_some())
                || [
                    "AWS_BEARER_TOKEN_BEDROCK",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                ]
                .iter()
                .any(|v| env.get(v).is_some())
        }
        _ => false,
    };
    authenticated.then(|| "<authenticated>".to_owned())
}

/// A stored OAuth token has expired; refreshing it needs the provider's login flow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("OAuth token for \"{provider}\" expired; log in again to refresh it")]
pub struct OAuthExpired {
    pub provider: String,
}

/// Credentials by provider (auth.json), plus keys given for this run only (`--api-key`).
#[derive(Clone, Debug, Default)]
pub struct AuthStorage {
    stored: Map<String, Value>,
    runtime: Vec<(String, String)>,
}

impl AuthStorage {
    /// Credentials from auth.json text; unreadable JSON counts as no credentials, with the
    /// parse error returned alongside as the original records it. Reading the file is the
    /// caller's (pi-effects' `registry_files::load_auth`).
    pub fn from_json(text: &str) -> (AuthStorage, Option<serde_json::Error>) {
        if text.is_empty() {
            return (AuthStorage::default(), None);
        }
        match serde_json::from_str::<Map<String, Value>>(text) {
            Ok(stored) => (
                AuthStorage {
                    stored,
                    runtime: Vec::new(),
                },
                None,
            ),
            Err(e) => (AuthStorage::default(), Some(e)),
        }
    }

    /// A key for this run only, preferred over everything else.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.runtime.retain(|(p, _)| p != provider);
        self.runtime.push((provider.to_owned(), key.to_owned()));
    }

    /// The keys given for this run only, by provider.
    pub fn runtime_keys(&self) -> impl Iterator<Item = (&str, &str)> {
        self.runtime.iter().map(|(p, k)| (p.as_str(), k.as_str()))
    }

    /// auth.json's credentials by provider, as stored.
    pub fn stored(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.stored.iter().map(|(p, c)| (p.as_str(), c))
    }

    /// The providers auth.json logs in with OAuth (and no key given for this run only), whose
    /// built-in filters (Pi's `filterAllModels`) keep some models from a subscription.
    pub fn oauth_providers(&self) -> Vec<String> {
        self.stored
            .iter()
            .filter(|(p, c)| {
                c.get("type").and_then(Value::as_str) == Some("oauth")
                    && self.runtime_key(p).is_none()
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The variables auth.json's credential for `provider` carries (its `env`), which its key
    /// and the model's headers read before the process's, and which Pi 1.5.2 hands on with
    /// the credential.
    pub fn credential_env(&self, provider: &str) -> Vec<(&str, &str)> {
        let vars = self.stored.get(provider).and_then(|c| c.get("env"));
        vars.and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, value)| Some((name.as_str(), value.as_str()?)))
            .collect()
    }

    fn runtime_key(&self, provider: &str) -> Option<&str> {
        self.runtime
            .iter()
            .find(|(p, _)| p == provider)
            .map(|(_, k)| k.as_str())
    }

    /// Whether any credential is configured, without running commands. A stored credential
    /// of a type Pi 1.5.2 does not know stands in for the environment's and counts as none.
    pub fn has_auth(&self, provider: &str, env: &Environment) -> bool {
        self.has_stored_auth(provider)
            .unwrap_or_else(|| env_api_key(provider, env).is_some())
    }

    /// Whether the run's key or auth.json gives `provider` a credential; `None` when neither
    /// names it, and the caller looks further (models.json, then the environment).
    pub fn has_stored_auth(&self, provider: &str) -> Option<bool> {
        if self.runtime_key(provider).is_some() {
            return Some(true);
        }
        let credential = self.stored.get(provider).filter(|c| !c.is_null())?;
        Some(matches!(
            credential.get("type").and_then(Value::as_str),
            Some("api_key" | "oauth")
        ))
    }

    /// The key to send: `--api-key`, then auth.json (key or OAuth token; one of another type
    /// gives none), then the provider's key variable.
    pub fn api_key(
        &self,
        provider: &str,
        env: &Environment,
        now_ms: i64,
    ) -> Result<Option<String>, OAuthExpired> {
        Ok(match self.stored_api_key(provider, env, now_ms)? {
            Some(key) => key,
            None => env_key(provider, env),
        })
    }

    /// The key the run's `--api-key` or auth.json gives `provider` (a credential of another
    /// type gives none); `None` when neither names it, and the caller looks further.
    pub fn stored_api_key(
        &self,
        provider: &str,
        env: &Environment,
        now_ms: i64,
    ) -> Result<Option<Option<String>>, OAuthExpired> {
        if let Some(key) = self.runtime_key(provider).filter(|k| !k.is_empty()) {
            return Ok(Some(Some(key.to_owned())));
        }
        let Some(credential) = self.stored.get(provider).filter(|c| !c.is_null()) else {
            return Ok(None);
        };
        let field = |name| credential.get(name);
        Ok(Some(match field("type").and_then(Value::as_str) {
            Some("api_key") => field("key")
                .and_then(Value::as_str)
                .and_then(|k| env.overlaid(self.credential_env(provider)).resolve(k)),
            Some("oauth") if OAUTH_PROVIDERS.contains(&provider) => {
                let expires = field("expires").and_then(Value::as_f64).unwrap_or(0.0);
                if now_ms as f64 >= expires {
                    return Err(OAuthExpired {
                        provider: provider.to_owned(),
                    });
                }
                field("access").and_then(Value::as_str).map(str::to_owned)
            }
            _ => None,
        }))
    }
}

/// The provider's key variable's value. A cloud provider's own credential chain
/// (`<authenticated>`) makes it available but is no key to send (Pi 1.5.2 resolves no
/// `apiKey` for it).
pub fn env_key(provider: &str, env: &Environment) -> Option<String> {
    key_variables(provider)
        .iter()
        .find_map(|v| env.get(v))
        .map(str::to_owned)
}
