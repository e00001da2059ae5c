// The providers extensions register or unregister once they have loaded (Pi 1.5.2's
// `pi.registerProvider`/`pi.unregisterProvider`, and `pi.registerVirtualModel`, from a handler,
// a command or a tool's execute):
// each change is an action of the handler that made it, which the harness applies to its model
// registry (the config, keys and all, goes to its memory only), and the catalog that
// `ctx.modelRegistry` and `pi.setModel` read here changes at once, as Pi's registry does, so the
// handler's next read sees it.
import { current, plain, unsupported } from "./host-scope.mjs";
import { catalog } from "./session-view.mjs";
import { nativeRegistration, providerRegistration } from "./host-loading.mjs";
import { registerLaterVirtualModel } from "./host-routing.mjs";
import { checkTypedModels, forgetTypedChanges, registerTypedProvider } from "./host-typed-models.mjs";

/** Per provider changed after loading: its models and auth before the first change (what an
 * unregistration gives back), and the config registered since (a registration again merges
 * its defined fields over it, as Pi's model runtime does). */
const changed = new Map();

function remember(name) {
  if (changed.has(name)) return changed.get(name);
  const before = {
    models: catalog.models.filter((m) => m.provider === name),
    auth: catalog.authProviders.has(name),
    config: {},
  };
  changed.set(name, before);
  return before;
}

/** Forgets every change: the harness gave the catalog anew (a session replaced another, and
 * Pi builds the new one's model runtime afresh). */
export function forgetProviderChanges() {
  changed.clear();
  forgetTypedChanges();
}

/** Puts `models` where the provider's models were in the catalog (at the end for a new one). */
function replaceModels(name, models) {
  const at = catalog.models.findIndex((m) => m.provider === name);
  const kept = catalog.models.filter((m) => m.provider !== name);
  const place = at === -1 ? kept.length : Math.min(at, kept.length);
  kept.splice(place, 0, ...models);
  catalog.models = kept;
}

/** Pi's `_refreshCurrentModelFromRegistry`, as the handler's later reads see it: the model in
 * force replaced by the catalog's of the same provider and id, when there is one. */
function refreshModel() {
  const state = current.getStore()?.state;
  const model = state?.model;
  if (!model) return;
  const found = catalog.models.find((m) => m.provider === model.provider && m.id === model.id);
  if (found) state.model = structuredClone(found);
}

/** The provider's chat models once `config` is applied over `base` (Pi's composer: a config
 * with models gives those, each filled in from the config's api and baseUrl, else from the
 * provider's model of the same id; one without only moves the models to its baseUrl). Its
 * models of other types are `host-typed-models.mjs`'s, out of the chat catalog. */
function composed(name, base, config) {
  if (!config.models) return config.baseUrl ? base.map((m) => ({ ...m, baseUrl: config.baseUrl })) : base;
  return config.models.filter((definition) => (definition?.type ?? "chat") === "chat").map((definition) => {
    const defaults = base.find((m) => m.id === definition.id) ?? base[0];
    const api = definition.api ?? config.api ?? defaults?.api;
    if (!api) throw new Error(`Provider ${name}, model ${definition.id}: no "api" specified. Set it at model level or provider level.`);
    const baseUrl = definition.baseUrl ?? config.baseUrl ?? defaults?.baseUrl;
    if (!baseUrl) throw new Error(`Provider ${name}: "baseUrl" is required when defining custom models.`);
    const model = plain({ ...definition, api, provider: name, baseUrl });
    delete model.headers;
    return model;
  });
}

/** The actions the runner's provider changes become, `act` carrying them to the session;
 * `keepModel` for those through `ctx.modelRegistry`, which Pi 1.5.2 applies to its registry
 * without refreshing the session's model. */
export function providerActions(act, { keepModel = false } = {}) {
  const refreshed = () => {
    if (!keepModel) refreshModel();
  };
  const marked = (action) => (keepModel ? { ...action, keepModel: true } : action);
  return {
    registerProvider: (name, config, extensionPath = "<unknown>") => {
      if (!config) throw new Error("Provider config is required when registering by name");
      // Pi's `validateExtensionProvider`, on the registration alone: thrown where it was asked.
      if (config.streamSimple && !config.api) {
        throw new Error(`Provider ${name}: "api" is required when registering streamSimple.`);
      }
      const before = remember(name);
      const merged = { ...before.config };
      for (const [key, value] of Object.entries(config)) if (value !== undefined) merged[key] = value;
      const models = composed(name, before.models, merged);
      checkTypedModels(name, merged);
      replaceModels(name, models);
      before.config = merged;
      registerTypedProvider(name, config);
      if (merged.apiKey !== undefined || merged.oauth) catalog.authProviders.add(name);
      refreshed();
      act(marked({ action: "registerProvider", name, registration: providerRegistration({ name, config, extensionPath }) }));
    },
    registerNativeProvider: (provider, extensionPath = "<unknown>") => {
      const registration = nativeRegistration({ provider, extensionPath });
      const before = remember(registration.name);
      replaceModels(registration.name, composed(registration.name, before.models, registration.config));
      refreshed();
      act(marked({ action: "registerProvider", name: registration.name, registration }));
    },
    unregisterProvider: (name) => {
      const before = changed.get(name);
      if (before) {
        replaceModels(name, before.models);
        if (before.auth) catalog.authProviders.add(name);
        else catalog.authProviders.delete(name);
        changed.delete(name);
      } else {
        catalog.models = catalog.models.filter((m) => m.provider !== name);
      }
      registerTypedProvider(name, undefined);
      refreshed();
      act(marked({ action: "unregisterProvider", name }));
    },
    registerVirtualModel: (definition, extensionPath = "<unknown>") => {
      const data = registerLaterVirtualModel(definition, extensionPath);
      refreshed();
      act({ action: "registerVirtualModel", name: data.provider, definition: data });
    },
    unregisterVirtualModel: unsupported("pi.unregisterVirtualModel after the extensions have loaded"),
  };
}

/** `ctx.modelRegistry`'s changes (Pi's `ModelRegistry.registerProvider`, by name with a config
 * or with a provider object, and `unregisterProvider`): the registry changes as through the
 * runner, the session's model stays as it was. */
export function registryProviderActions(act) {
  const actions = providerActions(act, { keepModel: true });
  return {
    registerProvider: (providerOrName, config) =>
      typeof providerOrName === "string"
        ? actions.registerProvider(providerOrName, config)
        : actions.registerNativeProvider(providerOrName),
    unregisterProvider: (name) => actions.unregisterProvider(name),
  };
}
