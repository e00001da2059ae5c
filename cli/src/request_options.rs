//! What each model request is sent with besides the conversation, as the original coding agent
//! sets it up: the key and headers from the model registry for every request; for the agent's
//! own turns (its stream function in `createAgentSession`) also the settings `thinkingBudgets`,
//! `retry.provider.maxRetries` and `retry.provider.timeoutMs`, and the attribution headers of
//! OpenRouter and Cloudflare. Compaction and branch summaries call pi-ai directly there, with the
//! key and headers only, and (Pi 1.5's `completeSummarization`) with `cacheRetention: "none"`:
//! a one-off summary writes no cache. `PI_CACHE_RETENTION=long`, read by pi-ai's providers,
//! applies to the agent's own requests.
//!
//! Read by the original but without effect on our requests: `retry.provider.maxRetryDelayMs`
//! (no provider of the APIs we speak reads it in 0.73.1) and `transport` (only the Codex
//! provider, which we do not have, uses WebSockets).

use std::collections::BTreeMap;

use pi_core::agent::ModelRequest;
use pi_core::model::{Model, ThinkingLevel};
use pi_providers::registry::Environment;
use pi_providers::{retry, CacheRetention, CallOptions};

use crate::settings::Settings;

/// The settings and variables that shape requests, read once per run.
#[derive(Clone, Debug)]
pub struct RequestSettings {
    thinking_budgets: BTreeMap<ThinkingLevel, u64>,
    max_retries: Option<u32>,
    timeout_ms: Option<Result<u64, String>>,
    telemetry: bool,
    cache_retention: CacheRetention,
}

impl RequestSettings {
    /// Reads them from the merged settings and the environment.
    pub fn new(settings: &Settings, env: &Environment) -> RequestSettings {
        RequestSettings {
            thinking_budgets: settings.thinking_budgets(),
            max_retries: settings.provider_max_retries(),
            timeout_ms: settings.provider_timeout_ms(),
            telemetry: telemetry_enabled(settings, env),
            cache_retention: if env.get_raw("PI_CACHE_RETENTION") == Some("long") {
                CacheRetention::Long
            } else {
                CacheRetention::Short
            },
        }
    }

    /// The options of `request`, sent with `api_key` and the registry's `headers`. A timeout
    /// setting the SDKs refuse fails the agent's requests with their error text.
    pub fn options(
        &self,
        request: &ModelRequest,
        api_key: String,
        headers: Vec<(String, String)>,
    ) -> CallOptions {
        let mut options = CallOptions {
            api_key,
            cache_retention: self.cache_retention,
            ..CallOptions::default()
        };
        // The agent's turns carry the session id; summaries do not (as in the original).
        if request.session_id.is_none() {
            options.headers = headers;
            options.cache_retention = CacheRetention::None;
            return options;
        }
        let mut merged = Vec::new();
        if self.telemetry {
            merge(&mut merged, attribution_headers(&request.model));
        }
        merge(&mut merged, headers);
        options.headers = merged;
        options.thinking_budgets = self.thinking_budgets.clone();
        if retry::applies_to(&request.model.api) {
            options.max_retries = self.max_retries.unwrap_or(0);
            match &self.timeout_ms {
                Some(Ok(ms)) => options.timeout_ms = Some(*ms),
                Some(Err(refusal)) => options.refused = Some(refusal.clone()),
                None => {}
            }
        }
        options
    }
}

/// Whether attribution headers are sent: `PI_TELEMETRY` when set (`1`, `true` or `yes` turn
/// it on, anything else off), else the `enableInstallTelemetry` setting.
fn telemetry_enabled(settings: &Settings, env: &Environment) -> bool {
    match env.get_raw("PI_TELEMETRY") {
        Some(value) => ["1", "true", "yes"].contains(&value.to_lowercase().as_str()),
        None => settings.install_telemetry(),
    }
}

/// The headers that tell OpenRouter and Cloudflare the requests come from Pi.
pub fn attribution_headers(model: &Model) -> Vec<(String, String)> {
    let pairs: &[(&str, &str)] =
        if model.provider == "openrouter" || model.base_url.contains("openrouter.ai") {
            &[
                ("http-referer", "https://pi.dev"),
                ("x-openrouter-title", "pi"),
                ("x-openrouter-categories", "cli-agent"),
            ]
        } else if model.provider == "cloudflare-workers-ai"
            || model.provider == "cloudflare-ai-gateway"
            || model.base_url.contains("api.cloudflare.com")
            || model.base_url.contains("gateway.ai.cloudflare.com")
        {
            &[("user-agent", "pi-coding-agent")]
        } else {
            &[]
        };
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// Adds `headers` to `into`, a later value replacing an earlier one of the same name (header
/// names compare without case).
fn merge(into: &mut Vec<(String, String)>, headers: Vec<(String, String)>) {
    for (name, value) in headers {
        match into.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            Some(slot) => *slot = (name, value),
            None => into.push((name, value)),
        }
    }
}
