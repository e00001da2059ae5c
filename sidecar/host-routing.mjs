// The routers of the virtual models extensions registered (Pi 1.5.2's
// `pi.registerVirtualModel`, while loading or later): the harness asks, before a request for a virtual model goes out,
// which physical model and thinking level it goes to. The answer is the hook point's decision,
// recorded, so a replay needs no Node.

import { current, plain } from "./host-scope.mjs";
import { catalog, clampThinkingLevel, hasAuth, snapshot } from "./session-view.mjs";

const VIRTUAL_MODEL_API = "pi-virtual";
const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/** The definitions by `provider/id`, with the index of the extension that registered each. */
const routers = new Map();

/** The loaded extensions, whose index names a router's owner. */
let loadedExtensions = [];

/** Keeps `registrations` (Pi's pending virtual model registrations) for routing; `extensions`
 * are the loaded extensions, whose index names the owner. */
export function keepRouters(registrations, extensions) {
  loadedExtensions = extensions;
  for (const { definition, extensionPath } of registrations) keepRouter(definition, extensionPath);
}

function keepRouter(definition, extensionPath) {
  const owner = loadedExtensions.findIndex((e) => e.path === extensionPath);
  routers.set(`${definition?.provider}/${definition?.id}`, { definition, owner });
}

/** A definition as plain data, its router left here: what the harness's registry takes. */
export function virtualModelData(definition, extensionPath) {
  return plain({
    provider: String(definition?.provider),
    id: String(definition?.id),
    name: String(definition?.name ?? ""),
    thinkingLevels: strings(definition?.thinkingLevels),
    contextWindow: count(definition?.contextWindow),
    maxTokens: count(definition?.maxTokens),
    input: strings(definition?.input),
    extensionPath,
  });
}

/** A definition's list of names as plain strings (absent when it is not a list). */
function strings(value) {
  return Array.isArray(value) ? value.filter((v) => typeof v === "string") : undefined;
}

/** A definition's count (absent unless a whole number, 0 or more). */
function count(value) {
  return Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** The catalog entry of a definition (Pi's `createVirtualModel`). */
function catalogEntry(data) {
  const levels = data.thinkingLevels ?? ["off"];
  const thinkingLevelMap = {};
  for (const level of THINKING_LEVELS) thinkingLevelMap[level] = levels.includes(level) ? level : null;
  return {
    id: data.id,
    name: data.name,
    api: VIRTUAL_MODEL_API,
    provider: data.provider,
    baseUrl: "",
    reasoning: levels.some((level) => level !== "off"),
    thinkingLevelMap,
    input: data.input ?? ["text", "image"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: data.contextWindow ?? 0,
    maxTokens: data.maxTokens ?? 0,
  };
}

/** `pi.registerVirtualModel` once the extensions have loaded (Pi 1.5.2's model runtime takes it
 * at once): checked as Pi checks it (its errors thrown where it was asked), its router kept, and
 * the catalog the handler reads next gains it, after its provider's models (a new provider's at
 * the end). The definition's plain data comes back, for the action that tells the harness. */
export function registerLaterVirtualModel(definition, extensionPath) {
  const { provider, id } = definition ?? {};
  if (!String(provider ?? "").trim() || !String(id ?? "").trim()) {
    throw new Error("Virtual model provider and id must not be empty.");
  }
  const existing = catalog.models.find((m) => m.provider === provider && m.id === id);
  if (existing && existing.api !== VIRTUAL_MODEL_API) {
    throw new Error(`Virtual model ${provider}/${id} conflicts with a physical model.`);
  }
  keepRouter(definition, extensionPath);
  const data = virtualModelData(definition, extensionPath);
  const entry = catalogEntry(data);
  const models = catalog.models;
  if (existing) {
    models[models.indexOf(existing)] = entry;
  } else {
    const last = models.findLastIndex((m) => m.provider === provider);
    models.splice(last === -1 ? models.length : last + 1, 0, entry);
  }
  // A provider only virtual models define counts as configured, with no credential.
  if (!models.some((m) => m.provider === provider && m.api !== VIRTUAL_MODEL_API)) catalog.authProviders.add(provider);
  return data;
}

/** A catalog model that is not virtual (Pi's `getPhysicalModel`). */
function physical(provider, id) {
  const model = catalog.models.find((m) => m.provider === provider && m.id === id);
  return model && model.api !== VIRTUAL_MODEL_API ? structuredClone(model) : undefined;
}

/** Latest successful response (Pi's `findLatestResponse`). */
function latestResponse(messages) {
  return messages.findLast((m) => m.role === "assistant" && m.stopReason !== "error" && m.stopReason !== "aborted");
}

/** Routes the request `asked.question` as Pi's `ModelRuntime.resolveModel` does: `{model,
 * thinkingLevel, state?}` (`state` only when the router gave a new one) or `{error}` with Pi's
 * text, with the `actions` the router asked for. The router's context reads the session's state
 * `asked` carries; `bind` gives the registering extension's runner, whose context it is. */
export async function route(asked, bind) {
  const request = asked.question ?? {};
  const name = `Virtual model ${request.provider}/${request.modelId}`;
  // What the router asks of the session (`pi.appendEntry`, ...) is applied before the request.
  const store = { state: snapshot(asked), actions: [], errors: [], told: [] };
  try {
    const entry = routers.get(`${request.provider}/${request.modelId}`);
    const model = catalog.models.find((m) => m.provider === request.provider && m.id === request.modelId);
    if (!entry || !model) throw new Error(`${name} is not registered.`);
    if (entry.owner >= 0) bind(entry.owner);
    const messages = request.messages ?? [];
    const latest = latestResponse(messages);
    const previousModel = latest && physical(latest.provider, latest.model);
    const failed = request.failed;
    const failedModel = failed && physical(failed.provider, failed.model);
    const state = request.state;
    const routed = await current.run(store, () =>
      entry.definition.route({
        model: structuredClone(model),
        thinkingLevel: request.thinkingLevel,
        reason: request.reason,
        previous: previousModel && { model: previousModel, thinkingLevel: latest?.thinkingLevel },
        failed: failedModel && { model: failedModel, thinkingLevel: failed.thinkingLevel, message: failed },
        state,
        messages,
      }),
    );
    const target = physical(routed?.model?.provider, routed?.model?.id);
    const where = `${name} routed to ${routed?.model?.provider}/${routed?.model?.id}`;
    if (!target) throw new Error(`${where}, which is not a physical model.`);
    if (!hasAuth(target.provider)) throw new Error(`${where}, which has no credentials.`);
    const changed = routed.state !== undefined && routed.state !== state;
    return {
      model: target,
      thinkingLevel: clampThinkingLevel(target, routed.thinkingLevel),
      ...(changed ? { state: plain(routed.state) } : {}),
      actions: plain(store.actions),
    };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error), actions: plain(store.actions) };
  }
}
