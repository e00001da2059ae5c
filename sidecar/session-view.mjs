// What the handlers' getters read: the state mirror the harness sends with each event, Pi's
// `SessionManager` reads over it, a boundary's context preview, and the model catalog
// (`ctx.modelRegistry`).
//
//
// The harness sends with each event only what changed since the event before: the fields whose
// value differs (`state`), those to forget (`unset`), and the session's entries the host lacks
// (`entries`: written over the kept ones from `from`). Each event's handlers read a snapshot
// taken as it arrives, its entries the first `session.entryCount` kept, so events in flight at
// once (parallel tool calls) each keep their own.

import { catalog, hasAuth, loaded, scope, unsupported } from "./host-scope.mjs";
import * as typed from "./host-typed-models.mjs";


const mirror = { state: {}, entries: [] };

/** Applies an event's changes to the mirror and returns the event's own snapshot. */
export function snapshot(request) {
  // Entries that would leave a hole, or a count past the entries held, are the harness's error:
  // the getters would answer a session that never was.
  const from = request.entries?.from;
  if (from !== undefined && from > mirror.entries.length) {
    throw new Error(`the state mirror's entries start at ${from}, past the ${mirror.entries.length} held`);
  }
  const held = request.entries ? from + request.entries.list.length : mirror.entries.length;
  const count = (request.state?.session ?? mirror.state.session)?.entryCount;
  if (count !== undefined && count > held) {
    throw new Error(`the state mirror holds ${held} entries, not the ${count} counted`);
  }
  for (const [field, value] of Object.entries(request.state ?? {})) mirror.state[field] = value;
  for (const field of request.unset ?? []) delete mirror.state[field];
  if (request.entries) {
    mirror.entries.length = Math.min(mirror.entries.length, request.entries.from);
    mirror.entries.push(...request.entries.list);
  }
  const state = { activeTools: [], ...mirror.state };
  if (state.session && !state.session.entries) {
    state.session = { ...state.session, entries: mirror.entries.slice(0, state.session.entryCount ?? mirror.entries.length) };
  }
  return state;
}

export const entries = () => scope().state.session?.entries ?? [];
export const entry = (id) => entries().find((e) => e.id === id);
export const leafId = () => scope().state.session?.leafId ?? null;
const byId = () => new Map(entries().map((e) => [e.id, e]));

/** Pi's own context and projection builders (its `SessionManager` calls them on its entries),
 * its `SessionManager` and `convertToLlm` (a boundary's context preview). */
export const projections = { buildContextEntries: undefined, buildSessionProjection: undefined, SessionManager: undefined, convertToLlm: undefined };

/** Pi's `_buildBoundaryContext`: the context as it would be with `drafts` appended to the
 * mirrored branch (Pi's `_applyBoundaryDrafts` on an in-memory copy), what the model would be
 * sent, and whether it could answer it. */
function boundaryContext(drafts, boundary, state) {
  const header = sessionManager.getHeader();
  const manager = projections.SessionManager.inMemory(state.cwd, undefined, [header, ...sessionManager.getBranch()].filter(Boolean));
  for (const draft of drafts) {
    if (draft.type === "custom") manager.appendCustomEntry(draft.customType, draft.data);
    else if (draft.type === "custom_message") manager.appendCustomMessageEntry(draft.customType, draft.content, draft.display, draft.details);
    else if (draft.type === "context_edit") manager.appendContextEdit(draft.targetId, draft.replacement);
    else if (draft.type === "compaction") manager.appendCompaction(draft.summary, draft.firstKeptEntryId, 0, draft.details, true, draft.usage);
  }
  const projection = manager.buildSessionProjection();
  const llmMessages = projections.convertToLlm(projection.messages);
  const finalRole = llmMessages[llmMessages.length - 1]?.role;
  const contextCanContinue = llmMessages.some((m) => m.role !== "system") && finalRole !== "assistant";
  const asked = askedPending();
  const pendingMessages = [...(state.pendingMessages ?? []), ...asked.map((a) => a.message)];
  const queued = !!state.hasPendingMessages || asked.some((a) => a.queued);
  // A turn's held messages are still pending at its `turn_end` (none are by the time a run settles).
  const held = asked.some((a) => !a.queued) || (boundary === "turn_end" && (state.pendingMessages ?? []).length > 0);
  return {
    contextEntries: projection.entries,
    contextMessages: projection.messages,
    llmMessages,
    pendingMessages,
    canContinue: contextCanContinue || held || (boundary === "turn_end" ? queued : finalRole === "assistant" && queued),
  };
}

/** The messages the boundary's handlers so far asked to send, as Pi holds them while its run is
 * active (the session applies the actions once the handlers are done): a user message or a
 * custom one that triggers a turn is queued (`queued`), a custom one that does not is held for
 * the turn's end; a custom one for the next turn, or a user message without `deliverAs` (Pi
 * refuses it while streaming), is not pending. */
function askedPending() {
  const now = Date.now();
  return scope().actions.flatMap((action) => {
    if (action.action === "sendUserMessage" && action.deliverAs) {
      // Pi's `sendUserMessage`: the text parts joined by line breaks, then the images.
      const parts = typeof action.content === "string" ? [{ type: "text", text: action.content }] : action.content;
      const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
      const content = [{ type: "text", text }, ...parts.filter((p) => p.type !== "text")];
      return [{ queued: true, message: { role: "user", content, timestamp: now } }];
    }
    if (action.action === "sendMessage" && action.deliverAs !== "nextTurn") {
      const message = { role: "custom", ...action.message, content: action.message.content ?? [], timestamp: now };
      return [{ queued: action.triggerTurn !== false, message }];
    }
    return [];
  });
}

/** The id of the mirrored entry that persisted `message` (Pi's `_findPersistedMessageEntryId`). */
export function persistedEntryId(message) {
  const text = JSON.stringify(message);
  const found = [...entries()].reverse().find((e) => e.type === "message" && JSON.stringify(e.message) === text);
  return found?.id;
}

/** Pi's `AgentActivityOutcome` of an assistant message. */
export const outcomeOf = (message) => (message?.stopReason === "aborted" ? "aborted" : message?.stopReason === "error" ? "error" : "completed");

/** Runs a boundary's handlers as Pi's `emitBoundary`; the drafts and `continue` they left, or
 * null (the harness refuses a continuation the context cannot take, once the drafts are
 * written, as Pi does). */
export async function boundary(runner, event, kind, state) {
  const result = await runner.emitBoundary(event, async (drafts) => boundaryContext(drafts, kind, state));
  if (!result.valid || (result.entries.length === 0 && !result.continue)) return null;
  return { type: "boundary", entries: result.entries, continue: result.continue };
}

/** The labels in force, each with the time it was set (a later `label` entry wins; an empty one
 * clears). */
function labels() {
  const byTarget = new Map();
  for (const e of entries()) {
    if (e.type !== "label") continue;
    if (e.label) byTarget.set(e.targetId, { label: e.label, labelTimestamp: e.timestamp });
    else byTarget.delete(e.targetId);
  }
  return byTarget;
}

/** Pi's `getTree()`: a node per entry with its label; roots are the entries without a parent (or
 * their own), and orphans; children oldest first. */
function tree() {
  const labelled = labels();
  const nodes = new Map(
    entries().map((e) => [e.id, { entry: e, children: [], label: labelled.get(e.id)?.label, labelTimestamp: labelled.get(e.id)?.labelTimestamp }]),
  );
  const roots = [];
  for (const node of nodes.values()) {
    const parentId = node.entry.parentId;
    const parent = parentId === null || parentId === node.entry.id ? undefined : nodes.get(parentId);
    (parent ? parent.children : roots).push(node);
  }
  const time = (node) => new Date(node.entry.timestamp).getTime();
  for (const node of nodes.values()) node.children.sort((a, b) => time(a) - time(b));
  return roots;
}

/** The session manager's reads (Pi's `ReadonlySessionManager`), answered from the mirror. */
export const sessionManager = {
  getCwd: () => scope().state.cwd,
  getSessionDir: () => scope().state.sessionDir,
  getSessionId: () => scope().state.session?.id,
  getSessionFile: () => scope().state.sessionFile,
  getSessionName: () => scope().state.session?.name,
  getLeafId: leafId,
  getLeafEntry: () => {
    const leaf = scope().state.session?.leafId;
    return leaf ? entry(leaf) : undefined;
  },
  getHeader: () => scope().state.session?.header ?? null,
  getEntries: () => [...entries()],
  getEntry: entry,
  getChildren: (parentId) => entries().filter((e) => e.parentId === parentId),
  getLabel: (id) => labels().get(id)?.label,
  getTree: tree,
  buildContextEntries: () => projections.buildContextEntries(entries(), leafId(), byId()),
  buildSessionProjection: () => projections.buildSessionProjection(entries(), leafId(), byId()),
  // Pi's walk from an entry (the leaf by default) up its parents, root first.
  getBranch: (fromId) => {
    const byId = new Map(entries().map((e) => [e.id, e]));
    const path = [];
    const start = fromId ?? scope().state.session?.leafId;
    for (let at = start ? byId.get(start) : undefined; at; at = at.parentId ? byId.get(at.parentId) : undefined) {
      path.push(at);
    }
    return path.reverse();
  },
};

export { catalog, hasAuth };

/** The model registry's reads (Pi's `ModelRegistry`), answered from the catalog `init` gave;
 * it registers nothing (the providers the extensions registered while loading went to the
 * harness with `init`'s answer), and hands out no key. */
const registryReads = {
  getAll: () => catalog.models.map((model) => structuredClone(model)),
  getAvailable: () => catalog.models.filter((model) => hasAuth(model.provider)).map((model) => structuredClone(model)),
  find: (provider, modelId) => {
    const found = catalog.models.find((model) => model.provider === provider && model.id === modelId);
    return found ? structuredClone(found) : undefined;
  },
  hasConfiguredAuth: (model) => hasAuth(model?.provider),
  getError: () => undefined,
  // Its provider changes are the extension host's (`registryProviderActions`), which makes them
  // actions of the handler or tool that changed them. Pi 1.5's per-request router is not run
  // by this harness: said, never ignored.
  registerVirtualModel: unsupported("ctx.modelRegistry.registerVirtualModel"),
  unregisterVirtualModel: unsupported("ctx.modelRegistry.unregisterVirtualModel"),
  // Pi 1.5's models of every type (classifiers, image models beside the chat models), which
  // codemode's `models.*` reaches.
  getModelsOfType: typed.getModelsOfType,
  getAvailableOfType: typed.getAvailableOfType,
  getModelOfType: typed.getModelOfType,
  findOfType: typed.getModelOfType,
  classify: typed.classify,
  generateImages: typed.generateImages,
};
/** The fields of a model the harness applies (a replay needs no catalog to find the rest). */
export const MODEL_FIELDS = ["id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost", "contextWindow", "maxTokens"];

const THINKING_LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/** Pi's thinking level after a switch to `model`: the model's own setting, the settings'
 * default, else the level in force. */
export function switchedThinkingLevel(state, model) {
  const settings = state.settings ?? loaded.settings ?? {};
  return settings.modelThinkingLevels?.[`${model.provider}/${model.id}`] ?? settings.defaultThinkingLevel ?? state.thinkingLevel ?? "medium";
}

/** Pi's clamp of `level` to the levels `model` supports: the nearest one above it, else below. */
export function clampThinkingLevel(model, level) {
  const supported = model.reasoning
    ? THINKING_LEVELS.filter((l) => {
        const mapped = model.thinkingLevelMap?.[l];
        if (mapped === null) return false;
        return l === "xhigh" || l === "max" ? mapped !== undefined : true;
      })
    : ["off"];
  if (supported.includes(level)) return level;
  const asked = THINKING_LEVELS.indexOf(level);
  if (asked === -1) return supported[0] ?? "off";
  const above = THINKING_LEVELS.slice(asked).find((l) => supported.includes(l));
  const below = THINKING_LEVELS.slice(0, asked).reverse().find((l) => supported.includes(l));
  return above ?? below ?? supported[0] ?? "off";
}

export const modelRegistry = new Proxy(registryReads, { get: (target, name) => target[name] ?? (() => undefined) });
