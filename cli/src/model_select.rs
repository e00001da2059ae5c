//! Choosing models as Pi's `model-resolver.js` does: `--provider` / `--model` (exact references,
//! `provider/id`, fuzzy matches preferring aliases, `:thinking` suffixes, custom ids for a known
//! provider), the `--models` scope (globs and fuzzy patterns) and the model a new session starts
//! with when none was asked for.

mod collate;
mod glob;

use pi_core::model::{Model, ThinkingLevel};
use pi_providers::catalog;

pub use collate::locale_compare;
use glob::glob_match;

/// What `--provider` / `--model` resolved to; Pi reports the warning and the error only after
/// the `@file` arguments are read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliModel {
    pub model: Option<Model>,
    /// The level a `<pattern>:<level>` suffix named.
    pub thinking: Option<ThinkingLevel>,
    pub warning: Option<String>,
    pub error: Option<String>,
}

/// A model of the `--models` scope, with the level its pattern named.
#[derive(Clone, Debug, PartialEq)]
pub struct ScopedModel {
    pub model: Model,
    pub thinking: Option<ThinkingLevel>,
}

/// An id without a `-YYYYMMDD` date (or ending in `-latest`) names the newest version.
fn is_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let bytes = id.as_bytes();
    let dated = bytes.len() >= 9
        && bytes[bytes.len() - 9] == b'-'
        && bytes[bytes.len() - 8..].iter().all(u8::is_ascii_digit);
    !dated
}

fn one<'a>(mut matches: impl Iterator<Item = &'a Model>) -> Option<&'a Model> {
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

/// A bare id or `provider/id` that names exactly one model (case-insensitive); ambiguous
/// references name none.
pub fn find_exact_model_reference<'a>(reference: &str, models: &'a [Model]) -> Option<&'a Model> {
    let trimmed = reference.trim();
    if trimmed.is_empty() {
        return None;
    }
    let lower = trimmed.to_lowercase();
    let canonical = models
        .iter()
        .filter(|m| format!("{}/{}", m.provider, m.id).to_lowercase() == lower);
    match canonical.clone().count() {
        1 => return one(canonical),
        0 => {}
        _ => return None,
    }
    if let Some((provider, id)) = trimmed.split_once('/') {
        let (provider, id) = (provider.trim().to_lowercase(), id.trim().to_lowercase());
        if !provider.is_empty() && !id.is_empty() {
            let by_provider = models
                .iter()
                .filter(|m| m.provider.to_lowercase() == provider && m.id.to_lowercase() == id);
            match by_provider.clone().count() {
                1 => return one(by_provider),
                0 => {}
                _ => return None,
            }
        }
    }
    one(models.iter().filter(|m| m.id.to_lowercase() == lower))
}

/// An exact reference, else the best partial match of id or name: the highest-sorting alias,
/// else the latest dated version.
fn try_match_model<'a>(pattern: &str, models: &'a [Model]) -> Option<&'a Model> {
    if let Some(exact) = find_exact_model_reference(pattern, models) {
        return Some(exact);
    }
    let lower = pattern.to_lowercase();
    let matches: Vec<&Model> = models
        .iter()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect();
    let aliases: Vec<&Model> = matches
        .iter()
        .copied()
        .filter(|m| is_alias(&m.id))
        .collect();
    let pool = if aliases.is_empty() { matches } else { aliases };
    pool.into_iter()
        .reduce(|best, m| match locale_compare(&m.id, &best.id) {
            std::cmp::Ordering::Greater => m,
            _ => best,
        })
}

/// A pattern's model and `:thinking` suffix (Pi's `parseModelPattern`). The full pattern is
/// tried first (ids may contain colons); then the last `:` suffix is split off. An invalid
/// suffix fails in strict mode (`--model`) and is dropped with a warning otherwise (`--models`).
pub fn parse_model_pattern(pattern: &str, models: &[Model], strict: bool) -> CliModel {
    if let Some(model) = try_match_model(pattern, models) {
        return CliModel {
            model: Some(model.clone()),
            ..CliModel::default()
        };
    }
    let Some((prefix, suffix)) = pattern.rsplit_once(':') else {
        return CliModel::default();
    };
    match ThinkingLevel::parse(suffix) {
        Some(level) => {
            let inner = parse_model_pattern(prefix, models, strict);
            if inner.model.is_some() && inner.warning.is_none() {
                CliModel {
                    thinking: Some(level),
                    ..inner
                }
            } else {
                CliModel {
                    thinking: None,
                    ..inner
                }
            }
        }
        None if strict => CliModel::default(),
        None => {
            let inner = parse_model_pattern(prefix, models, strict);
            if inner.model.is_none() {
                return inner;
            }
            CliModel {
                thinking: None,
                warning: Some(format!(
                    "Invalid thinking level \"{suffix}\" in pattern \"{pattern}\". Using default instead."
                )),
                ..inner
            }
        }
    }
}

/// The `--models` scope over the available models; the warnings go to stderr as Pi prints them.
pub fn resolve_model_scope(
    patterns: &[String],
    available: &[Model],
) -> (Vec<ScopedModel>, Vec<String>) {
    let mut scoped: Vec<ScopedModel> = Vec::new();
    let mut warnings = Vec::new();
    let add = |scoped: &mut Vec<ScopedModel>, model: &Model, thinking| {
        if !scoped
            .iter()
            .any(|s| s.model.provider == model.provider && s.model.id == model.id)
        {
            scoped.push(ScopedModel {
                model: model.clone(),
                thinking,
            });
        }
    };
    for pattern in patterns {
        if pattern.contains(['*', '?', '[']) {
            let (glob, thinking) = match pattern.rsplit_once(':') {
                Some((glob, suffix)) if ThinkingLevel::parse(suffix).is_some() => {
                    (glob, ThinkingLevel::parse(suffix))
                }
                _ => (pattern.as_str(), None),
            };
            let matching: Vec<&Model> = available
                .iter()
                .filter(|m| {
                    glob_match(glob, &format!("{}/{}", m.provider, m.id)) || glob_match(glob, &m.id)
                })
                .collect();
            if matching.is_empty() {
                warnings.push(format!("No models match pattern \"{pattern}\""));
            }
            for model in matching {
                add(&mut scoped, model, thinking);
            }
            continue;
        }
        let parsed = parse_model_pattern(pattern, available, false);
        if let Some(warning) = parsed.warning {
            warnings.push(warning);
        }
        match parsed.model {
            Some(model) => add(&mut scoped, &model, parsed.thinking),
            None => warnings.push(format!("No models match pattern \"{pattern}\"")),
        }
    }
    (scoped, warnings)
}

/// `--provider` / `--model` over every model (not only those with a key, so `--api-key` can
/// name a first one). An unknown id for a known provider becomes a custom model of it.
pub fn resolve_cli_model(
    cli_provider: Option<&str>,
    cli_model: Option<&str>,
    models: &[Model],
) -> CliModel {
    let Some(cli_model) = cli_model else {
        return CliModel::default();
    };
    let error = |text: String| CliModel {
        error: Some(text),
        ..CliModel::default()
    };
    if models.is_empty() {
        return error(
            "No models available. Check your installation or add models to models.json.".into(),
        );
    }
    let canonical_provider = |name: &str| {
        let lower = name.to_lowercase();
        models
            .iter()
            .rev()
            .find(|m| m.provider.to_lowercase() == lower)
            .map(|m| m.provider.clone())
    };
    let mut provider = match cli_provider {
        Some(name) => match canonical_provider(name) {
            Some(p) => Some(p),
            None => {
                return error(format!(
                "Unknown provider \"{name}\". Use --list-models to see available providers/models."
            ))
            }
        },
        None => None,
    };
    let mut pattern = cli_model.to_owned();
    let mut inferred = false;
    if provider.is_none() {
        if let Some((maybe, rest)) = cli_model.split_once('/') {
            if let Some(canonical) = canonical_provider(maybe) {
                provider = Some(canonical);
                pattern = rest.to_owned();
                inferred = true;
            }
        }
    }
    let exact_anywhere = || {
        let lower = cli_model.to_lowercase();
        models.iter().find(|m| {
            m.id.to_lowercase() == lower
                || format!("{}/{}", m.provider, m.id).to_lowercase() == lower
        })
    };
    if provider.is_none() {
        if let Some(exact) = exact_anywhere() {
            return CliModel {
                model: Some(exact.clone()),
                ..CliModel::default()
            };
        }
    }
    if let (Some(_), Some(p)) = (cli_provider, &provider) {
        let prefix = format!("{p}/").to_lowercase();
        if cli_model.to_lowercase().starts_with(&prefix) {
            pattern = cli_model[prefix.len()..].to_owned();
        }
    }
    let candidates: Vec<Model> = match &provider {
        Some(p) => models
            .iter()
            .filter(|m| &m.provider == p)
            .cloned()
            .collect(),
        None => models.to_vec(),
    };
    let parsed = parse_model_pattern(&pattern, &candidates, true);
    if parsed.model.is_some() {
        return parsed;
    }
    if inferred {
        if let Some(exact) = exact_anywhere() {
            return CliModel {
                model: Some(exact.clone()),
                ..CliModel::default()
            };
        }
        let fallback = parse_model_pattern(cli_model, models, true);
        if fallback.model.is_some() {
            return fallback;
        }
    }
    if let Some(p) = &provider {
        if let Some(custom) = custom_model(p, &pattern, models) {
            let note = format!(
                "Model \"{pattern}\" not found for provider \"{p}\". Using custom model id."
            );
            return CliModel {
                model: Some(custom),
                warning: Some(match parsed.warning {
                    Some(w) => format!("{w} {note}"),
                    None => note,
                }),
                ..CliModel::default()
            };
        }
    }
    let display = match &provider {
        Some(p) => format!("{p}/{pattern}"),
        None => cli_model.to_owned(),
    };
    CliModel {
        warning: parsed.warning,
        error: Some(format!(
            "Model \"{display}\" not found. Use --list-models to see available models."
        )),
        ..CliModel::default()
    }
}

/// A model of `provider` with an id the catalog does not know, built on the provider's default
/// model (else its first).
fn custom_model(provider: &str, id: &str, models: &[Model]) -> Option<Model> {
    let of_provider: Vec<&Model> = models.iter().filter(|m| m.provider == provider).collect();
    let default_id = catalog::default_model(provider);
    let base = default_id
        .and_then(|d| of_provider.iter().find(|m| m.id == d))
        .or(of_provider.first())?;
    Some(Model {
        id: id.to_owned(),
        name: id.to_owned(),
        ..(*base).clone()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn model(provider: &str, id: &str, name: &str) -> Model {
        Model {
            id: id.into(),
            name: name.into(),
            provider: provider.into(),
            ..Model::default()
        }
    }

    fn models() -> Vec<Model> {
        vec![
            model("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
            model(
                "anthropic",
                "claude-sonnet-4-5-20250929",
                "Claude Sonnet 4.5",
            ),
            model("anthropic", "claude-opus-5-5", "Claude Opus 5.5"),
            model("openrouter", "openai/gpt-4o:extended", "GPT-4o extended"),
            model("openai", "gpt-4o", "GPT-4o"),
            model("vercel-ai-gateway", "zai/glm-5", "GLM 5"),
            model("zai", "glm-5", "GLM 5"),
        ]
    }

    fn resolve(provider: Option<&str>, pattern: &str) -> CliModel {
        resolve_cli_model(provider, Some(pattern), &models())
    }

    fn id(result: &CliModel) -> String {
        let m = result.model.as_ref().unwrap();
        format!("{}/{}", m.provider, m.id)
    }

    #[test]
    fn fuzzy_matches_prefer_aliases() {
        assert_eq!(id(&resolve(None, "sonnet")), "anthropic/claude-sonnet-4-5");
        assert_eq!(id(&resolve(None, "Opus")), "anthropic/claude-opus-5-5");
    }

    #[test]
    fn provider_prefixes_and_thinking_suffixes() {
        assert_eq!(id(&resolve(None, "zai/glm-5")), "zai/glm-5");
        let r = resolve(None, "sonnet:high");
        assert_eq!(
            (id(&r), r.thinking),
            (
                "anthropic/claude-sonnet-4-5".into(),
                Some(ThinkingLevel::High)
            )
        );
        assert_eq!(
            id(&resolve(None, "openai/gpt-4o:extended")),
            "openrouter/openai/gpt-4o:extended"
        );
        assert_eq!(
            id(&resolve(Some("OpenAI"), "openai/gpt-4o")),
            "openai/gpt-4o"
        );
    }

    #[test]
    fn errors_and_custom_ids() {
        let r = resolve(None, "nosuch");
        assert_eq!(
            r.error.as_deref(),
            Some("Model \"nosuch\" not found. Use --list-models to see available models.")
        );
        let r = resolve(Some("nope"), "x");
        assert_eq!(
            r.error.as_deref(),
            Some("Unknown provider \"nope\". Use --list-models to see available providers/models.")
        );
        let r = resolve(Some("anthropic"), "claude-next");
        assert_eq!(id(&r), "anthropic/claude-next");
        assert_eq!(
            r.warning.as_deref(),
            Some("Model \"claude-next\" not found for provider \"anthropic\". Using custom model id.")
        );
        assert!(resolve(None, "sonnet:bogus").error.is_some());
    }

    #[test]
    fn scopes_with_globs_and_warnings() {
        let patterns: Vec<String> = ["anthropic/*:low", "gpt-4o:bogus", "nothing*"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (scoped, warnings) = resolve_model_scope(&patterns, &models());
        let ids: Vec<_> = scoped
            .iter()
            .map(|s| (s.model.id.as_str(), s.thinking))
            .collect();
        assert_eq!(
            ids,
            [
                ("claude-sonnet-4-5", Some(ThinkingLevel::Low)),
                ("claude-sonnet-4-5-20250929", Some(ThinkingLevel::Low)),
                ("claude-opus-5-5", Some(ThinkingLevel::Low)),
                ("gpt-4o", None),
            ]
        );
        assert_eq!(
            warnings,
            [
                "Invalid thinking level \"bogus\" in pattern \"gpt-4o:bogus\". Using default instead.",
                "No models match pattern \"nothing*\"",
            ]
        );
    }
}
