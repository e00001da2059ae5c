//! The run's model as the command line chooses it: `--provider`/`--model`, the `--models` scope
//! (else the `enabledModels` setting) and `--api-key` for the chosen model's provider. It is
//! chosen from the registry read from disk, and chosen again once extensions registered
//! providers: Pi 1.5.2 registers theirs before it resolves the model, so `--model` of an
//! extension's provider is found, and the first choice's diagnostics give way to the second's.

use pi_core::model::{Model, ThinkingLevel};
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

use crate::diagnostic::Diagnostic;
use crate::model_select::{resolve_cli_model, resolve_model_scope, ScopedModel};

/// What the command line asked of the model.
#[derive(Clone, Debug, Default)]
pub struct ModelRequest {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `--models`, else the `enabledModels` setting.
    pub patterns: Vec<String>,
    pub api_key: Option<String>,
}

/// The model chosen, and what choosing it found wrong.
#[derive(Debug, Default)]
pub struct ModelChoice {
    pub model: Option<Model>,
    /// The level a `--model <pattern>:<level>` named.
    pub thinking: Option<ThinkingLevel>,
    pub scoped: Vec<ScopedModel>,
    /// The scope's warnings (patterns that match nothing), without their `Warning: ` prefix.
    pub warnings: Vec<String>,
    /// The model's diagnostics, in Pi's order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Chooses the model `request` names from `registry` (setting `--api-key` for its provider).
pub fn choose(
    request: &ModelRequest,
    registry: &ModelRegistry,
    auth: &mut AuthStorage,
    env: &Environment,
) -> ModelChoice {
    let mut choice = ModelChoice::default();
    if !request.patterns.is_empty() {
        let available: Vec<Model> = registry.available(auth, env).cloned().collect();
        let (scoped, warnings) = resolve_model_scope(&request.patterns, &available);
        choice.scoped = scoped;
        choice.warnings = warnings;
    }
    let cli = resolve_cli_model(
        request.provider.as_deref(),
        request.model.as_deref(),
        registry.all(),
    );
    choice
        .diagnostics
        .extend(cli.warning.map(Diagnostic::Warning));
    choice.diagnostics.extend(cli.error.map(Diagnostic::Error));
    if let Some(why) = cli.model.as_ref().and_then(|m| registry.unusable(m)) {
        choice.diagnostics.push(Diagnostic::Error(why.to_string()));
    }
    if let Some(key) = &request.api_key {
        let provider = cli
            .model
            .as_ref()
            .or(choice.scoped.first().map(|s| &s.model))
            .map(|m| m.provider.clone());
        match provider {
            Some(provider) => auth.set_runtime_api_key(&provider, key),
            None => choice.diagnostics.push(Diagnostic::Error(
                "--api-key requires a model to be specified via --model, --provider/--model, or --models".into(),
            )),
        }
    }
    choice.thinking = cli.model.is_some().then_some(cli.thinking).flatten();
    choice.model = cli.model;
    choice
}

/// Where the first choice's warnings and diagnostics sit among the run's (to be replaced by
/// the second's).
#[derive(Clone, Debug, Default)]
pub struct ChoicePlace {
    pub warnings: std::ops::Range<usize>,
    pub diagnostics: std::ops::Range<usize>,
}
