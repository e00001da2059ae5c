//! Providers an extension registers (Pi 1.5.2's `pi.registerProvider(name, config)`), layered
//! over the built-in catalog and models.json as Pi's provider composer layers them: a config
//! with `models` replaces the provider's models with its own (each filled in from the provider's
//! `api`/`baseUrl`, else from a model of the provider below it); one without only moves the
//! provider's models to its `baseUrl`. Its `apiKey`, `headers` and `authHeader` take the place
//! of models.json's (headers merged, the extension's winning). A registration of a name already
//! registered merges its defined fields over the earlier one's.
//!
//! What cannot run outside JavaScript is kept as a fact, not dropped: a provider whose requests
//! stream through the extension's own `streamSimple`, or whose key comes from its `oauth`
//! functions, lists its models, and a request to one fails with [`Unusable`], naming the
//! extension and the provider.

use pi_core::model::Model;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::config::HeaderConfig;
use super::{ModelRegistry, ProviderRequestConfig};

/// One registration as the extension host reports it: plain data, the extension's functions
/// replaced by the fact that they were given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRegistration {
    /// The provider's id (`registerProvider`'s first argument).
    pub name: String,
    /// The extension that registered it (for errors).
    #[serde(default)]
    pub extension_path: String,
    /// The config's data fields, as the extension wrote them (`baseUrl`, `api`, `apiKey`,
    /// `headers`, `authHeader`, `models`, ...).
    #[serde(default)]
    pub config: Map<String, Value>,
    /// Whether the config gave a `streamSimple` function.
    #[serde(default)]
    pub stream_simple: bool,
    /// Whether the config gave `oauth` (login and key functions).
    #[serde(default)]
    pub oauth: bool,
    /// Whether it is a provider object (`pi.registerProvider(provider)`: its own auth and
    /// stream functions), whose models the config lists as it listed them.
    #[serde(default)]
    pub native: bool,
}

/// The config's fields the registry reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderConfig {
    base_url: Option<String>,
    api: Option<String>,
    api_key: Option<String>,
    headers: Option<HeaderConfig>,
    auth_header: Option<bool>,
    models: Option<Vec<Value>>,
}

/// A provider registered by an extension that this harness cannot send requests to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Extension \"{extension}\" registered provider \"{provider}\" with {what}, which runs in JavaScript: this harness cannot use its models (Pi 1.5.2 runs them through the extension)")]
pub struct Unusable {
    pub extension: String,
    pub provider: String,
    /// `a custom streamSimple` or `oauth`.
    pub what: &'static str,
}

/// What a provider was before extensions registered it, and what they registered so far.
#[derive(Clone, Debug)]
pub(super) struct ExtensionLayer {
    provider: String,
    base_models: Vec<Model>,
    base_request: Option<ProviderRequestConfig>,
    config: Map<String, Value>,
    /// Set when its requests cannot be made here: the api that streams through the
    /// extension (`None`: every api, as when only oauth gives a key), and why.
    pub(super) unusable: Option<(Option<String>, Unusable)>,
}

impl ExtensionLayer {
    /// Why a request to `model` cannot be made here, if it cannot.
    pub(super) fn refuses(&self, model: &Model) -> Option<&Unusable> {
        let (api, why) = self.unusable.as_ref()?;
        (self.provider == model.provider && api.as_ref().is_none_or(|api| *api == model.api))
            .then_some(why)
    }
}

impl ModelRegistry {
    /// Registers `registration` as Pi 1.5.2's model runtime does; an invalid one leaves the
    /// registry as it was and gives Pi's error text.
    pub fn register_provider(&mut self, registration: &ProviderRegistration) -> Result<(), String> {
        let name = &registration.name;
        // Pi's model runtime refuses a blank id for a provider object only; one registered by
        // name is taken as it is.
        if registration.native && name.trim().is_empty() {
            return Err("Provider id must not be empty.".to_owned());
        }
        let index = self
            .extension_layers
            .iter()
            .position(|layer| layer.provider == *name);
        let (base_models, base_request, mut merged) = match index {
            Some(i) => {
                let layer = &self.extension_layers[i];
                (
                    layer.base_models.clone(),
                    layer.base_request.clone(),
                    layer.config.clone(),
                )
            }
            None => (
                self.models
                    .iter()
                    .filter(|m| m.provider == *name)
                    .cloned()
                    .collect(),
                self.request_config(name).cloned(),
                Map::new(),
            ),
        };
        let own: ProviderConfig = parse(name, &registration.config)?;
        if registration.stream_simple && own.api.is_none() {
            return Err(format!(
                "Provider {name}: \"api\" is required when registering streamSimple."
            ));
        }
        for (key, value) in &registration.config {
            if !value.is_null() {
                merged.insert(key.clone(), value.clone());
            }
        }
        let config: ProviderConfig = parse(name, &merged)?;
        let models = compose_models(name, &base_models, &config, registration.native)?;
        let unusable = if registration.native {
            Some((None, what(registration, name, "a provider object")))
        } else if registration.stream_simple {
            Some((
                config.api.clone(),
                what(registration, name, "a custom streamSimple"),
            ))
        } else if registration.oauth && config.api_key.is_none() {
            Some((None, what(registration, name, "oauth")))
        } else {
            None
        };
        self.replace_models(name, models);
        self.set_request_config(name, layered_request(base_request.as_ref(), &config));
        for definition in config.models.iter().flatten() {
            if let (Some(id), Some(headers)) = (
                definition.get("id").and_then(Value::as_str),
                definition.get("headers").and_then(Value::as_object),
            ) {
                self.merge_model_headers(name, id, headers);
            }
        }
        let layer = ExtensionLayer {
            provider: name.clone(),
            base_models,
            base_request,
            config: merged,
            unusable,
        };
        match index {
            Some(i) => self.extension_layers[i] = layer,
            None => self.extension_layers.push(layer),
        }
        Ok(())
    }

    /// Removes what extensions registered under `name` (Pi 1.5.2's `unregisterProvider`): the
    /// provider is what it was below them (a built-in or models.json's provider gets its own
    /// models, key and headers back; one only extensions gave is gone). A name no extension
    /// registered changes nothing.
    pub fn unregister_provider(&mut self, name: &str) {
        let Some(index) = self
            .extension_layers
            .iter()
            .position(|layer| layer.provider == name)
        else {
            return;
        };
        let layer = self.extension_layers.remove(index);
        self.replace_models(name, layer.base_models);
        match layer.base_request {
            Some(request) => self.set_request_config(name, request),
            None => {
                self.request_configs.retain(|(p, _)| p != name);
                self.model_headers.retain(|((p, _), _)| p != name);
            }
        }
    }

    /// Why a request to `model` cannot be made by this harness (its provider's extension
    /// streams it, or only its oauth functions give a key), if so.
    pub fn unusable(&self, model: &Model) -> Option<&Unusable> {
        self.extension_layers
            .iter()
            .find_map(|layer| layer.refuses(model))
    }

    /// Puts `models` where the provider's physical models were (at the end for a new
    /// provider), its virtual models after them, as Pi's composition keeps them.
    fn replace_models(&mut self, provider: &str, models: Vec<Model>) {
        let at = self.models.iter().position(|m| m.provider == provider);
        let virtual_models: Vec<Model> = self
            .models
            .iter()
            .filter(|m| m.provider == provider && super::is_virtual(m))
            .cloned()
            .collect();
        self.models.retain(|m| m.provider != provider);
        let at = at.unwrap_or(self.models.len()).min(self.models.len());
        let ids: Vec<&str> = virtual_models.iter().map(|m| m.id.as_str()).collect();
        let physical = models.into_iter().filter(|m| !ids.contains(&m.id.as_str()));
        self.models
            .splice(at..at, physical.chain(virtual_models.iter().cloned()));
    }

    fn set_request_config(&mut self, provider: &str, config: ProviderRequestConfig) {
        match self.request_configs.iter_mut().find(|(p, _)| p == provider) {
            Some(slot) => slot.1 = config,
            None => self.request_configs.push((provider.to_owned(), config)),
        }
    }

    fn merge_model_headers(&mut self, provider: &str, id: &str, headers: &Map<String, Value>) {
        let key = (provider.to_owned(), id.to_owned());
        match self.model_headers.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => existing.extend(headers.clone()),
            None => self.model_headers.push((key, headers.clone())),
        }
    }
}

fn what(registration: &ProviderRegistration, name: &str, what: &'static str) -> Unusable {
    Unusable {
        extension: registration.extension_path.clone(),
        provider: name.to_owned(),
        what,
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    name: &str,
    config: &Map<String, Value>,
) -> Result<T, String> {
    serde_json::from_value(Value::Object(config.clone()))
        .map_err(|e| format!("Provider {name}: {e}"))
}

/// The key and headers: the extension's over models.json's.
fn layered_request(
    base: Option<&ProviderRequestConfig>,
    config: &ProviderConfig,
) -> ProviderRequestConfig {
    let mut headers = base.and_then(|b| b.headers.clone());
    if let Some(own) = &config.headers {
        headers.get_or_insert_with(Map::new).extend(own.clone());
    }
    ProviderRequestConfig {
        api_key: config
            .api_key
            .clone()
            .or_else(|| base.and_then(|b| b.api_key.clone())),
        headers,
        auth_header: config
            .auth_header
            .unwrap_or_else(|| base.is_some_and(|b| b.auth_header)),
        origin: super::Origin::Extension,
    }
}

/// The provider's models once `config` is applied over `base` (Pi's `applyExtension`).
fn compose_models(
    name: &str,
    base: &[Model],
    config: &ProviderConfig,
    native: bool,
) -> Result<Vec<Model>, String> {
    let Some(definitions) = &config.models else {
        return Ok(base
            .iter()
            .map(|model| Model {
                base_url: config
                    .base_url
                    .clone()
                    .unwrap_or_else(|| model.base_url.clone()),
                ..model.clone()
            })
            .collect());
    };
    let mut models = Vec::new();
    for definition in definitions {
        match model_of(name, base, config, definition) {
            Ok(Some(model)) => models.push(model),
            Ok(None) => {}
            // A provider object's own models are listed as they can be: one whose shape is
            // not a model's is left out, since no request to it could be made here anyway.
            Err(_) if native => {}
            Err(e) => return Err(e),
        }
    }
    Ok(models)
}

/// One model `definition` of the provider (Pi's `extensionModelFromDefinition`): `None` for
/// one that is not a chat model (image and classifier models: no session selects them).
fn model_of(
    name: &str,
    base: &[Model],
    config: &ProviderConfig,
    definition: &Value,
) -> Result<Option<Model>, String> {
    let Some(fields) = definition.as_object() else {
        return Err(format!("Provider {name}: a model is not an object"));
    };
    let id = fields.get("id").and_then(Value::as_str).unwrap_or_default();
    match fields.get("type").and_then(Value::as_str) {
        // A typed model names its own api: Pi refuses the registration of one that does not.
        Some("classifier" | "image") => {
            if fields.get("api").and_then(Value::as_str).is_none() {
                return Err(format!(
                    "Provider {name}, model {id}: no \"api\" specified. Set it at model level."
                ));
            }
            if fields.get("baseUrl").and_then(Value::as_str).is_none() && config.base_url.is_none()
            {
                return Err(format!(
                    "Provider {name}: \"baseUrl\" is required when defining custom models."
                ));
            }
            return Ok(None);
        }
        Some(t) if t != "chat" => return Ok(None),
        _ => {}
    }
    let api_of = |m: &Map<String, Value>| m.get("api").and_then(Value::as_str).map(str::to_owned);
    let defaults = base
        .iter()
        .find(|m| m.id == id)
        .or_else(|| {
            let api = api_of(fields)?;
            base.iter().find(|m| m.api == api)
        })
        .or_else(|| base.iter().find(|m| m.api == "openai-completions"))
        .or_else(|| base.first());
    let api = api_of(fields)
        .or_else(|| config.api.clone())
        .or_else(|| defaults.map(|m| m.api.clone()))
        .ok_or_else(|| {
            format!("Provider {name}, model {id}: no \"api\" specified. Set it at model level or provider level.")
        })?;
    let base_url = fields
        .get("baseUrl")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| config.base_url.clone())
        .or_else(|| defaults.map(|m| m.base_url.clone()))
        .ok_or_else(|| {
            format!("Provider {name}: \"baseUrl\" is required when defining custom models.")
        })?;
    let mut model = fields.clone();
    model.remove("headers");
    model.insert("api".into(), Value::String(api));
    model.insert("provider".into(), Value::String(name.to_owned()));
    model.insert("baseUrl".into(), Value::String(base_url));
    serde_json::from_value(Value::Object(model))
        .map(Some)
        .map_err(|e| format!("Provider {name}, model {id}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use serde_json::json;

    fn registration(name: &str, config: Value) -> ProviderRegistration {
        ProviderRegistration {
            name: name.into(),
            extension_path: "/ext.ts".into(),
            config: config.as_object().cloned().unwrap_or_default(),
            ..ProviderRegistration::default()
        }
    }

    fn gateway_model() -> Value {
        json!({"id": "gw", "name": "GW", "reasoning": false, "input": ["text"],
            "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 1000, "maxTokens": 100, "headers": {"x-model": "m"}})
    }

    #[test]
    fn a_new_provider_adds_its_models_at_the_end_with_its_key_and_headers() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let config = json!({"baseUrl": "http://gw/v1", "api": "openai-completions",
            "apiKey": "literal-key", "headers": {"x-gw": "1"}, "models": [gateway_model()]});
        registry
            .register_provider(&registration("gateway", config))
            .unwrap();
        let last = registry.all().last().unwrap();
        assert_eq!(
            (last.provider.as_str(), last.id.as_str()),
            ("gateway", "gw")
        );
        assert_eq!(last.base_url, "http://gw/v1");
        assert_eq!(last.headers, None);
        let env = super::super::Environment::from_vars(Vec::<(String, String)>::new());
        let auth = super::super::AuthStorage::default();
        let resolved = registry.request_auth(last, &auth, &env, 0).unwrap();
        assert_eq!(resolved.api_key.as_deref(), Some("literal-key"));
        assert_eq!(
            resolved.headers,
            Some(vec![
                ("x-gw".to_owned(), "1".to_owned()),
                ("x-model".to_owned(), "m".to_owned())
            ])
        );
        assert!(registry.has_configured_auth(last, &auth, &env));
        let found = registry.credentials(&auth, &env);
        assert!(found.iter().any(|c| c.value == "literal-key"));
    }

    #[test]
    fn a_base_url_alone_moves_an_existing_providers_models_in_place() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let before: Vec<(String, String)> = registry
            .all()
            .iter()
            .map(|m| (m.provider.clone(), m.id.clone()))
            .collect();
        registry
            .register_provider(&registration(
                "anthropic",
                json!({"baseUrl": "http://proxy"}),
            ))
            .unwrap();
        let after: Vec<(String, String)> = registry
            .all()
            .iter()
            .map(|m| (m.provider.clone(), m.id.clone()))
            .collect();
        assert_eq!(before, after);
        assert!(registry
            .all()
            .iter()
            .filter(|m| m.provider == "anthropic")
            .all(|m| m.base_url == "http://proxy"));
    }

    #[test]
    fn an_unregistration_gives_back_what_was_below_the_extensions() {
        let builtin = ModelRegistry::builtin(catalog::builtin());
        let mut registry = builtin.clone();
        registry
            .register_provider(&registration(
                "gateway",
                json!({"baseUrl": "http://gw", "api": "openai-completions", "apiKey": "gw-key",
                    "models": [gateway_model()]}),
            ))
            .unwrap();
        registry
            .register_provider(&registration(
                "anthropic",
                json!({"baseUrl": "http://proxy"}),
            ))
            .unwrap();
        registry.unregister_provider("gateway");
        registry.unregister_provider("anthropic");
        registry.unregister_provider("never-registered");
        assert_eq!(registry.all(), builtin.all());
        assert!(registry.find("gateway", "gw").is_none());
        let env = super::super::Environment::from_vars(Vec::<(String, String)>::new());
        let auth = super::super::AuthStorage::default();
        assert!(registry.credentials(&auth, &env).is_empty());
    }

    #[test]
    fn a_broken_registration_changes_nothing_and_says_what_pi_says() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let count = registry.all().len();
        let mut model = gateway_model();
        model["api"] = Value::Null;
        let error = registry
            .register_provider(&registration("gateway", json!({"models": [model]})))
            .unwrap_err();
        assert_eq!(
            error,
            "Provider gateway, model gw: no \"api\" specified. Set it at model level or provider level."
        );
        let mut streamed = registration("s", json!({"baseUrl": "http://x"}));
        streamed.stream_simple = true;
        assert_eq!(
            registry.register_provider(&streamed).unwrap_err(),
            "Provider s: \"api\" is required when registering streamSimple."
        );
        assert_eq!(registry.all().len(), count);
    }

    #[test]
    fn a_typed_model_without_its_own_api_is_refused_as_pi_refuses_it() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let count = registry.all().len();
        let typed = json!({"id": "cls", "type": "classifier", "input": ["text"]});
        let error = registry
            .register_provider(&registration(
                "typed",
                json!({"baseUrl": "http://x", "api": "openai-completions", "apiKey": "k",
                    "models": [gateway_model(), typed]}),
            ))
            .unwrap_err();
        assert_eq!(
            error,
            "Provider typed, model cls: no \"api\" specified. Set it at model level."
        );
        assert_eq!(registry.all().len(), count);
        let named = json!({"id": "img", "type": "image", "api": "typed-images"});
        registry
            .register_provider(&registration(
                "typed",
                json!({"baseUrl": "http://x", "apiKey": "k", "models": [named]}),
            ))
            .unwrap();
    }

    #[test]
    fn a_streamed_provider_is_listed_but_refused_naming_extension_and_provider() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let mut streamed = registration(
            "custom",
            json!({"baseUrl": "http://x", "api": "custom-api", "apiKey": "k",
                "models": [gateway_model()]}),
        );
        streamed.stream_simple = true;
        registry.register_provider(&streamed).unwrap();
        let model = registry.find("custom", "gw").unwrap().clone();
        let why = registry.unusable(&model).unwrap().to_string();
        assert!(
            why.contains("\"/ext.ts\"") && why.contains("\"custom\""),
            "{why}"
        );
        let env = super::super::Environment::from_vars(Vec::<(String, String)>::new());
        let error = registry
            .request_auth(&model, &super::super::AuthStorage::default(), &env, 0)
            .unwrap_err();
        assert_eq!(error.to_string(), why);
    }

    #[test]
    fn a_provider_object_lists_its_models_and_is_refused() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let mut listed = gateway_model();
        listed["api"] = json!("openai-completions");
        listed["baseUrl"] = json!("http://own/v1");
        let mut native = registration(
            "own",
            json!({"baseUrl": "http://own/v1", "models": [listed, {"id": "half"}]}),
        );
        native.native = true;
        registry.register_provider(&native).unwrap();
        let ids: Vec<&str> = registry
            .all()
            .iter()
            .filter(|m| m.provider == "own")
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["gw"]);
        let model = registry.find("own", "gw").unwrap().clone();
        let why = registry.unusable(&model).unwrap().to_string();
        assert!(why.contains("a provider object"), "{why}");
    }

    #[test]
    fn registering_again_merges_over_the_earlier_registration() {
        let mut registry = ModelRegistry::builtin(catalog::builtin());
        let config = json!({"baseUrl": "http://gw/v1", "api": "openai-completions",
            "apiKey": "k", "models": [gateway_model()]});
        registry
            .register_provider(&registration("gateway", config))
            .unwrap();
        registry
            .register_provider(&registration(
                "gateway",
                json!({"baseUrl": "http://other/v1"}),
            ))
            .unwrap();
        let model = registry.find("gateway", "gw").unwrap();
        assert_eq!(model.base_url, "http://other/v1");
        assert_eq!(
            registry
                .all()
                .iter()
                .filter(|m| m.provider == "gateway")
                .count(),
            1
        );
    }
}
