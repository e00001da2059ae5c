//! Building the model list: the built-in catalog with models.json's provider and per-model
//! overrides applied, then its custom models upserted by provider and id.

use pi_core::message::Extra;
use pi_core::model::{Model, ModelCost};
use serde_json::{Map, Value};

use super::config::{ModelOverride, ModelsConfig};
use crate::catalog::Catalog;

/// Shallow-merges compat objects, merging the two routing objects one level deeper.
pub fn merge_compat(base: Option<&Value>, over: Option<&Value>) -> Option<Value> {
    let Some(over) = over else {
        return base.cloned();
    };
    let empty = Map::new();
    let base_map = base.and_then(Value::as_object).unwrap_or(&empty);
    let over_map = over.as_object().unwrap_or(&empty);
    let mut merged = base_map.clone();
    for (key, value) in over_map {
        merged.insert(key.clone(), value.clone());
    }
    for nested in ["openRouterRouting", "vercelGatewayRouting"] {
        let (b, o) = (base_map.get(nested), over_map.get(nested));
        if is_truthy(b) || is_truthy(o) {
            let mut inner = b.and_then(Value::as_object).cloned().unwrap_or_default();
            for (key, value) in o.and_then(Value::as_object).into_iter().flatten() {
                inner.insert(key.clone(), value.clone());
            }
            merged.insert(nested.to_owned(), Value::Object(inner));
        }
    }
    Some(Value::Object(merged))
}

fn is_truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(_) => true,
    }
}

/// A custom model's unknown fields: its `promptCache`, if it has one.
fn prompt_cache_extra(prompt_cache: Option<Map<String, Value>>) -> Extra {
    let mut extra = Extra::new();
    if let Some(cache) = prompt_cache {
        extra.insert(PROMPT_CACHE.into(), Value::Object(cache));
    }
    extra
}

/// Where a model keeps its prompt cache's lifetimes (Pi 1.5.2's `promptCache`).
const PROMPT_CACHE: &str = "promptCache";

fn apply_override(model: &mut Model, over: &ModelOverride) {
    if let Some(cache) = &over.prompt_cache {
        let mut merged = match model.extra.get(PROMPT_CACHE) {
            Some(Value::Object(old)) => old.clone(),
            _ => Map::new(),
        };
        merged.extend(cache.clone());
        model
            .extra
            .insert(PROMPT_CACHE.into(), Value::Object(merged));
    }
    if let Some(name) = &over.name {
        model.name.clone_from(name);
    }
    if let Some(reasoning) = over.reasoning {
        model.reasoning = reasoning;
    }
    if let Some(levels) = &over.thinking_level_map {
        let map = model
            .thinking_level_map
            .get_or_insert_with(Default::default);
        map.extend(levels.iter().map(|(k, v)| (*k, v.clone())));
    }
    if let Some(input) = &over.input {
        model.input.clone_from(input);
    }
    if let Some(n) = over.context_window {
        model.context_window = n as u64;
    }
    if let Some(n) = over.max_tokens {
        model.max_tokens = n as u64;
    }
    if let Some(cost) = &over.cost {
        let old = &model.cost;
        model.cost = ModelCost {
            input: cost.input.unwrap_or(old.input),
            output: cost.output.unwrap_or(old.output),
            cache_read: cost.cache_read.unwrap_or(old.cache_read),
            cache_write: cost.cache_write.unwrap_or(old.cache_write),
            tiers: old.tiers.clone(),
        };
    }
    model.compat = merge_compat(model.compat.as_ref(), over.compat.as_ref());
}

/// Every model: built-ins (overridden) in catalog order, then custom models not replacing one.
pub fn build_models(catalog: &Catalog, config: &ModelsConfig) -> Vec<Model> {
    let provider = |name: &str| config.providers.iter().find(|(p, _)| p == name);
    let mut models = Vec::new();
    for name in catalog.get_providers() {
        let entry = provider(name).map(|(_, c)| c);
        for builtin in catalog.get_models(name) {
            let mut model = builtin.clone();
            if let Some(c) = entry.filter(|c| c.base_url.is_some() || c.compat.is_some()) {
                if let Some(url) = &c.base_url {
                    model.base_url.clone_from(url);
                }
                model.compat = merge_compat(model.compat.as_ref(), c.compat.as_ref());
            }
            let over = entry.and_then(|c| c.model_overrides.as_ref()?.get(&model.id));
            if let Some(over) = over {
                apply_override(&mut model, over);
            }
            models.push(model);
        }
    }
    for custom in custom_models(catalog, config) {
        match models
            .iter_mut()
            .find(|m| m.provider == custom.provider && m.id == custom.id)
        {
            Some(slot) => *slot = custom,
            None => models.push(custom),
        }
    }
    models
}

fn custom_models(catalog: &Catalog, config: &ModelsConfig) -> Vec<Model> {
    let mut out = Vec::new();
    for (name, provider) in &config.providers {
        let defaults = catalog.get_models(name).first();
        for def in provider.models.iter().flatten() {
            let api = def
                .api
                .as_ref()
                .or(provider.api.as_ref())
                .or(defaults.map(|m| &m.api));
            let base_url = def
                .base_url
                .as_ref()
                .or(provider.base_url.as_ref())
                .or(defaults.map(|m| &m.base_url));
            let (Some(api), Some(base_url)) = (api, base_url) else {
                continue;
            };
            out.push(Model {
                id: def.id.clone(),
                name: def.name.clone().unwrap_or_else(|| def.id.clone()),
                api: api.clone(),
                provider: name.clone(),
                base_url: base_url.clone(),
                reasoning: def.reasoning.unwrap_or(false),
                thinking_level_map: def.thinking_level_map.clone(),
                input: def.input.clone().unwrap_or_else(|| vec!["text".to_owned()]),
                cost: def.cost.clone().unwrap_or_default(),
                context_window: def.context_window.map_or(128_000, |n| n as u64),
                max_tokens: def.max_tokens.map_or(16_384, |n| n as u64),
                headers: None,
                compat: merge_compat(provider.compat.as_ref(), def.compat.as_ref()),
                extra: prompt_cache_extra(def.prompt_cache.clone()),
            });
        }
    }
    out
}
