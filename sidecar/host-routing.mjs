// The routers of the virtual models extensions registered while loading (Pi 1.5.2's
// `pi.registerVirtualModel`): the harness asks, before a request for a virtual model goes out,
// which physical model and thinking level it goes to. The answer is the hook point's decision,
// recorded, so a replay needs no Node.

import { current, plain } from "./host-scope.mjs";
import { catalog, clampThinkingLevel, hasAuth, snapshot } from "./session-view.mjs";

const VIRTUAL_MODEL_API = "pi-virtual";

/** The definitions by `provider/id`, with the index of the extension that registered each. */
const routers = new Map();

/** Keeps `registrations` (Pi's pending virtual model registrations) for routing; `extensions`
 * are the loaded extensions, whose index names the owner. */
export function keepRouters(registrations, extensions) {
  for (const { definition, extensionPath } of registrations) {
    const owner = extensions.findIndex((e) => e.path === extensionPath);
    routers.set(`${definition?.provider}/${definition?.id}`, { definition, owner });
  }
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
