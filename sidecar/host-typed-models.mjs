// Pi 1.5's models beside the language models: the classifier and image models (the built-in
// ones the harness gives with `init`, and those the extensions' providers register), with the
// implementations of their APIs those providers give (`classifiers`, `images`), which
// codemode's `models.*` reaches through `ctx.modelRegistry`.
// The harness's catalog holds the chat models only (Pi keeps the others out of every chat
// list), so the typed ones stay here, where their implementations run; a script's call is part of
// the codemode call the session records, so a replay needs none of this.
import { catalog, hasAuth } from "./host-scope.mjs";

const TYPES = ["chat", "image", "classifier"];

/** Per provider registered with a config, in registration order: the config in force. */
const registered = new Map();

/** The registrations made while loading, which a new session's registry starts from. */
let asLoaded = new Map();

/** Keeps the registrations so far as those made while loading. */
export function keepTypedAsLoaded() {
  asLoaded = new Map(registered);
}

/** Forgets the registrations made after loading: a new session's registry is built afresh
 * from the loaded ones, as Pi builds its model runtime. */
export function forgetTypedChanges() {
  registered.clear();
  for (const [name, config] of asLoaded) registered.set(name, config);
}

/** The built-in providers' typed models (the harness's catalog data), in their order. */
let builtin = [];

/** Takes the built-in typed models the harness gives with `init`. */
export function setBuiltinTypedModels(models) {
  builtin = Array.isArray(models) ? models : [];
}

/** Takes `config` as the provider's registration, its defined fields over those registered
 * before (as the runtime merges a registration again); `undefined` forgets the provider. */
export function registerTypedProvider(name, config) {
  if (config === undefined) {
    registered.delete(name);
    return;
  }
  const merged = { ...registered.get(name) };
  for (const [key, value] of Object.entries(config)) if (value !== undefined) merged[key] = value;
  registered.set(name, merged);
}

/** Pi's `getModelType`: a model without a type is a chat model. */
const typeOf = (model) => model?.type ?? "chat";

/** Pi's `extensionModelFromDefinition` for a non-chat definition: its own fields, its api (a
 * typed model names its own), the provider and the baseUrl, its headers left out. */
function typedModel(name, config, definition) {
  const api = definition.api;
  if (!api) throw new Error(`Provider ${name}, model ${definition.id}: no "api" specified. Set it at model level.`);
  const baseUrl = definition.baseUrl ?? config.baseUrl;
  if (!baseUrl) throw new Error(`Provider ${name}: "baseUrl" is required when defining custom models.`);
  const model = { ...definition, api, provider: name, baseUrl };
  delete model.headers;
  return model;
}

/** Pi's checks of the typed models `config` defines: throws where Pi refuses the registration. */
export function checkTypedModels(name, config) {
  for (const definition of config.models ?? []) {
    if (TYPES.includes(typeOf(definition)) && typeOf(definition) !== "chat") typedModel(name, config, definition);
  }
}

/** The typed models a registered provider's config defines. */
function registeredModels(name, config) {
  const models = [];
  for (const definition of config.models ?? []) {
    if (typeOf(definition) === "chat" || !TYPES.includes(typeOf(definition))) continue;
    try {
      models.push(typedModel(name, config, definition));
    } catch {
      // Pi refuses the registration; the harness reports it with the chat models' checks.
    }
  }
  return models;
}

/** Every typed model (of `provider` when given) in Pi's provider order: the built-in
 * providers' (a registration with models replacing a provider's, one with a baseUrl moving
 * them), then the other registered providers'. */
function typedModels(provider) {
  const models = [];
  const placed = new Set();
  for (const model of builtin) {
    if (provider !== undefined && model.provider !== provider) continue;
    const config = registered.get(model.provider);
    if (config?.models) {
      if (!placed.has(model.provider)) models.push(...registeredModels(model.provider, config));
    } else {
      models.push({ ...structuredClone(model), ...(config?.baseUrl ? { baseUrl: config.baseUrl } : {}) });
    }
    placed.add(model.provider);
  }
  for (const [name, config] of registered) {
    if ((provider === undefined || name === provider) && !placed.has(name)) models.push(...registeredModels(name, config));
  }
  return models;
}

/** Pi's `getModelsOfType`: the catalog's models of `type`, of `provider` when given. */
export function getModelsOfType(type, provider) {
  if (type === "chat") {
    return catalog.models.filter((m) => provider === undefined || m.provider === provider).map((m) => structuredClone(m));
  }
  return typedModels(provider).filter((m) => typeOf(m) === type);
}

/** Whether a provider registered with `config` has a key or a login (Pi's authenticated providers). */
const configured = (name) => hasAuth(name) || registered.get(name)?.apiKey !== undefined || Boolean(registered.get(name)?.oauth);

/** The built-in providers' filters of their typed models (Pi's `filterAllModels`; a
 * `filterModels` filters chat models only): OpenAI's ChatGPT subscription reaches none of its
 * classifiers. An extension's registration keeps the built-in provider's filter. */
const typedFilters = {
  openai: (model) => !(catalog.oauthProviders.has("openai") && typeOf(model) === "classifier"),
};

/** Pi's `getAvailableOfType`: those of providers with auth, through their providers' filters. */
export async function getAvailableOfType(type, provider) {
  return getModelsOfType(type, provider).filter((m) => configured(m.provider) && (typedFilters[m.provider]?.(m) ?? true));
}

/** Pi's `getModelOfType`. */
export function getModelOfType(type, provider, id) {
  return getModelsOfType(type, provider).find((m) => m.id === id);
}

/** pi-ai's error result of a classifier or an image call (`classifierErrorResult`,
 * `imageErrorResult`): `empty` holds what a result without output carries. */
function errorResult(model, error, aborted, empty) {
  return {
    api: model.api,
    provider: model.provider,
    model: model.id,
    ...empty,
    stopReason: aborted ? "aborted" : "error",
    errorMessage: error instanceof Error ? error.message : String(error),
    timestamp: Date.now(),
  };
}

/** The key a provider's config names: written literally, or an environment variable's name. */
function apiKeyOf(config) {
  const key = config.apiKey;
  if (typeof key !== "string") return undefined;
  const named = /^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/.exec(key);
  return named ? process.env[named[1]] : key;
}

/** Pi's `prepareRequest` for a typed model: its provider's registration, the key and headers. */
function prepared(model, options) {
  const config = registered.get(model.provider);
  if (!config) {
    // A built-in provider's own classifier or image API over HTTP: not run by this harness
    // (said, never answered as if the provider had none).
    throw new Error(`${model.provider}'s own "${model.api}" API is not supported by this harness's extension host yet`);
  }
  const definition = (config.models ?? []).find((d) => d.id === model.id);
  const headers = config.headers || definition?.headers ? { ...config.headers, ...definition?.headers } : undefined;
  return { config, options: { ...options, apiKey: options?.apiKey ?? apiKeyOf(config), headers, env: options?.env } };
}

/** Pi's model runtime's `classify` and `generateImages`: the model checked, then the
 * implementation its provider registered for its api; every failure an error result. */
function typedCall({ type, article, field, method, unsupportedText, missingText, empty, check }) {
  return async (model, context, options) => {
    try {
      if (typeOf(model) !== type) throw new Error(`Model ${model.provider}/${model.id} is not ${article} ${type} model`);
      check?.(model, context);
      const request = prepared(model, options);
      const implementations = request.config[field] ?? {};
      if (Object.keys(implementations).length === 0) throw new Error(unsupportedText(model.provider));
      const implementation = implementations[model.api];
      if (!implementation) return errorResult(model, new Error(missingText(model.provider, model.api)), false, empty);
      return await implementation[method](model, context, request.options);
    } catch (error) {
      return errorResult(model, error, options?.signal?.aborted, empty);
    }
  };
}

export const classify = typedCall({
  type: "classifier",
  article: "a",
  field: "classifiers",
  method: "classify",
  unsupportedText: (provider) => `Provider ${provider} does not support classification`,
  missingText: (provider, api) => `Provider ${provider} has no classifier implementation for "${api}"`,
  empty: { answers: {} },
  check: (model, context) => {
    if (context.images?.length && !model.input.includes("image")) {
      throw new Error(`Model ${model.provider}/${model.id} does not accept image input`);
    }
  },
});

export const generateImages = typedCall({
  type: "image",
  article: "an",
  field: "images",
  method: "generateImages",
  unsupportedText: (provider) => `Provider ${provider} does not support image generation`,
  missingText: (provider, api) => `Provider ${provider} has no image implementation for "${api}"`,
  empty: { output: [] },
});
