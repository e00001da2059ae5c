// The extension host: loads a user's Pi extensions with Pi 1.5.2's own loader (its jiti, its
// virtual modules, its handler semantics) and serves them to the harness over stdio, one JSON
// object a line (LF framing; U+2028/U+2029 escaped as Pi's RPC writes them).
//
// The install is named by PI_EXTENSION_HOST_PI_DIR (the folder holding node_modules with
// @earendil-works/pi-coding-agent), as the fixture scripts name the original.
//
// Requests (harness -> host), each with a numeric `id`:
//   {"id", "type": "init", "paths": [...], "cwd", "projectTrusted", "standIn", "flagValues",
//    "models"?, "authProviders"?, "oauthProviders"?, "typedModels"?} -> the
//       registrations (tools, commands, flags, providers, MCP servers), and for each extension that loaded
//       (in load order) its path and the events it handles; `flagValues` ({name: true or a
//       string}, the command line's `--name [value]`) set the registered flags `pi.getFlag`
//       reads; `models` (the run's catalog) and `authProviders` (the providers with auth
//       configured, never a key; `oauthProviders` those logged in with OAuth) answer `ctx.modelRegistry`'s reads and whether `pi.setModel`
//       may set a model; `typedModels` (the built-in classifier and image models) its reads
//       of the other model types
//   {"id", "type": "project_trust", "cwd", "mode"} -> {decision: {trusted, remember} or null,
//       errors: [{path, error}]}: Pi's `project_trust` event asked of the extensions `init`
//       loaded (those loaded before trust is decided), their context without a UI in `mode`
//   {"id", "type": "extend", "paths", "projectTrusted"} -> `init`'s answer for the final set
//       `paths` once trust is decided: those loaded already kept, the others loaded over the
//       same runtime, all ordered as `paths`
//   {"id", "type": "catalog", "models", "authProviders", "oauthProviders"} -> null: the catalog once the harness
//       has merged the registered providers into it
//   {"id", "type": "settings", "settings"} -> null: the run's merged settings, which
//       `pi.getSettings()` answers
//   {"id", "type": "mcp.unconnected"} -> null: nothing connects the MCP servers extensions
//       register (`--no-mcp`); those registered from now on are reported as Pi reports them
//   {"id", "type": "command", "name", "args", "idle", "state", "unset"?, "entries"?} -> the extension command `name`'s handler
//       run with `args` and Pi's command context: its actions and the errors it threw, and
//       where the handler called its context for what the session carries out
//       (`ctx.navigateTree`, `ctx.newSession`, `ctx.fork`, `ctx.switchSession`, and the
//       replaced session's `sendUserMessage` its `withSession` is given), `asked` ({run, ask}): the handler waits for that
//   {"id", "type": "command.resume", "run", "answer", "state", ...} -> the waiting handler of
//       run `run` goes on with `answer` ({result}; {error}, which its call throws; or
//       {replaced}: the session was replaced, `withSession` runs with the new session's
//       context, then the call returns it), answered as `command` is
//   {"id", "type": "tool.execute", "name", "toolCallId", "args", "cwd", "state", "unset"?, "entries"?}
//       -> updates, then the result: the registered tool's `execute` run with its extension's
//       context over the session's state at the call (its changes, as an event carries them)
//   {"id", "type": "tool.prepare_arguments", "name", "arguments"} -> {arguments}, {} (it
//       returned `undefined`) or {error}, with {modelArguments} when it changed the arguments
//       it was given in place (then threw or not):
//       the registered tool's `prepareArguments` run on a call's arguments as the model sent
//       them (pi-agent-core's `prepareToolCallArguments`), or the message it threw
//   {"id", "type": "tool.prepare_loadout", "declared", "registered"} -> {descriptions,
//       hiddenDeclarations, errors}: the `prepareLoadout` hooks of the declared tools run over
//       the loadout (`host-loadout.mjs`), as Pi's `_applyToolLoadout` runs them
//   {"id", "type": "model.route", "question": {"provider", "modelId", "thinkingLevel", "reason",
//       "failed"?, "state"?, "messages"}, "state", "unset"?} -> {model, thinkingLevel, state?,
//       actions} or {error, actions}: the router of the virtual model named run as Pi's
//       `resolveModel` runs it, its context over the session's state (`host-routing.mjs`)
//   {"id", "type": "event", "extension", "payload", "state"} -> that extension's handlers of the
//       payload's event, run by Pi's ExtensionRunner (`events.mjs`): the composed result, the
//       actions they took and the errors they threw
//       (a `user_bash` exec's raw chunks as it runs: {"id", "type": "exec.chunk", "data"})
//   {"id", "type": "compact_end", "callback", "result"?, "error"?, "state", ...} -> the
//       `onComplete`/`onError` of the `ctx.compact()` whose action named `callback` called
//       with the compaction's result or error: the actions they took and the errors they threw
//   {"id", "type": "abort", "target"}               -> aborts request `target` (a tool call, or
//       an event, whose `signal` it fires)
// Answers (host -> harness):
//   {"id", "type": "response", "success": true, "data"} or {"id", "type": "response", "success": false, "error"}
//   {"id", "type": "tool.update", "partial"}       (a tool's onUpdate)
//   {"id", "type": "tool.action", "action"}        (what a tool's execute asked of the session,
//       applied at once: an action as a handler's answer lists them)
// and the extension UI's (`extension-ui.mjs`).
//
// The host is this module and those it imports (`host-scope.mjs`: its shared state;
// `session-view.mjs`: the state mirror and what the getters read; `host-loading.mjs`: loading
// the extensions; `host-providers.mjs`: the providers they register once loaded;
// `extension-ui.mjs`: their UI), each joined to its importer as a data: URL. The harness writes
// it to a file of the host's stand-in folder, which it removes as it starts.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { ExtensionUi, UiPrompts } from "./extension-ui.mjs";
import { abortEvent, current, loaded, plain, running, scope, tools, unsupported, write } from "./host-scope.mjs";
import { extend, init, projectTrust } from "./host-loading.mjs";
import { prepareLoadout, toolObject } from "./host-loadout.mjs";
import { route } from "./host-routing.mjs";
import { forgetProviderChanges, providerActions, registryProviderActions } from "./host-providers.mjs";
import {
  boundary, catalog, clampThinkingLevel, entries, entry, hasAuth, leafId, MODEL_FIELDS, modelRegistry,
  outcomeOf, persistedEntryId, sessionManager, snapshot, switchedThinkingLevel,
} from "./session-view.mjs";

if (import.meta.url.startsWith("file:")) fs.rmSync(fileURLToPath(import.meta.url), { force: true });

const ui = new ExtensionUi(write);
const prompts = new UiPrompts(
  ui,
  () => current.getStore(),
  (type) => loaded.extensions.flatMap((extension, index) => (extension.handlers.get(type)?.length ? [runnerFor(index)] : [])),
);

// ---- Events: an extension's handlers run by Pi's own ExtensionRunner -------------------------
//
// One runner per extension (the harness composes extensions in load order, as Pi's runner
// does), all over the loader's one runtime. The runner's actions and getters are bound once;
// they read the event being handled from `current`, so events in flight at once (parallel tool
// calls) keep their state mirrors and actions apart.

function runnerFor(index) {
  let runner = loaded.runners.get(index);
  if (runner) return runner;
  const extension = loaded.extensions[index];
  if (!extension) throw new Error(`no extension ${index} is loaded`);
  runner = bound(new loaded.Runner([extension], loaded.runtime, loaded.cwd, sessionManager, modelRegistry));
  loaded.runners.set(index, runner);
  return runner;
}

/** Whether nothing connects the MCP servers extensions register (`--no-mcp`, the harness says
 * so with `mcp.unconnected`), and the servers reported as such: Pi's runner then reports each
 * server registered after loading once, within the handler that registered it. */
const unconnectedMcp = { on: false, reported: new Set() };

/** A runner over every extension, which resolves command names as Pi's session does. */
function commandRunner() {
  let runner = loaded.runners.get("commands");
  if (runner) return runner;
  runner = bound(new loaded.Runner(loaded.extensions, loaded.runtime, loaded.cwd, sessionManager, modelRegistry));
  runner.bindCommandContext({
    // A command runs while nothing else of the session does, and what it asks for is applied
    // once it has returned: there is nothing to wait for.
    waitForIdle: async () => {},
    newSession: (options) =>
      replaceSession(options, {
        kind: "newSession",
        parentSession: typeof options?.parentSession === "string" ? options.parentSession : undefined,
      }),
    fork: (entryId, options) =>
      replaceSession(options, {
        kind: "fork",
        entryId: String(entryId),
        position: typeof options?.position === "string" ? options.position : undefined,
      }),
    navigateTree: async (targetId, options) =>
      askSession({
        kind: "navigateTree",
        targetId: String(targetId),
        summarize: options?.summarize === undefined ? undefined : !!options.summarize,
        customInstructions: typeof options?.customInstructions === "string" ? options.customInstructions : undefined,
        replaceInstructions: options?.replaceInstructions === undefined ? undefined : !!options.replaceInstructions,
        label: typeof options?.label === "string" ? options.label : undefined,
      }),
    switchSession: (sessionPath, options) =>
      replaceSession(options, { kind: "switchSession", sessionPath: String(sessionPath) }),
    // The session tells the old load its shutdown, loads the extensions again (this
    // handler's context is then stale, as Pi's) and tells the new load its start.
    reload: () => askSession({ kind: "reload" }),
  });
  loaded.runners.set("commands", runner);
  return runner;
}

/** `runner` with the extension API's actions and getters bound to the event in `scope()`. */
function bound(runner) {
  const act = (action) => {
    const store = scope();
    if (store.toolCall === undefined) {
      store.actions.push(plain(action));
      return;
    }
    // A tool's `execute`: the session applies the action at once, as Pi's does; an entry
    // appended shows in the tool's own reads right after (its id is the session's to draw).
    write({ id: store.toolCall, type: "tool.action", action: plain(action) });
    if (action.action === "appendEntry") provisionalEntry(store.state, action);
  };
  runner.bindCore(
    {
      sendMessage: (message, options) =>
        act({
          action: "sendMessage",
          message: { customType: message.customType, content: message.content, display: !!message.display, details: message.details },
          deliverAs: options?.deliverAs,
          triggerTurn: options?.triggerTurn,
        }),
      sendUserMessage: (content, options) =>
        act({
          action: "sendUserMessage",
          content,
          deliverAs: options?.deliverAs,
          expandPromptTemplates: options?.expandPromptTemplates,
        }),
      appendEntry: (customType, data) => act({ action: "appendEntry", customType, data }),
      setSessionName: (name) => {
        // What the handlers after this one read, as in Pi.
        scope().state.session = { ...scope().state.session, name };
        act({ action: "setSessionName", name });
      },
      getSessionName: () => scope().state.session?.name,
      setLabel: (entryId, label) => act({ action: "setLabel", entryId, label }),
      getActiveTools: () => [...scope().state.activeTools],
      getAllTools: () => (scope().state.allTools ?? scope().state.activeTools.map((name) => ({ name }))).map(withReach),
      // Pi's settings manager answers a copy of the merged settings.
      getSettings: () => plain(scope().state.settings ?? loaded.settings ?? {}),
      setActiveTools: (names) => {
        // What the handlers after this one read, as in Pi: the active tools asked for keep their
        // place, the others follow, and names not registered (or hidden) are left out (when the
        // session says which are).
        const state = scope().state;
        const asked = [...new Set(names)];
        const kept = state.activeTools.filter((name) => asked.includes(name));
        const wanted = [...new Set([...kept, ...asked])];
        const all = state.allTools?.filter((tool) => tool.exposure !== "hidden").map((tool) => tool.name);
        state.activeTools = all ? wanted.filter((name) => all.includes(name)) : wanted;
        act({ action: "setActiveTools", tools: [...names] });
      },
      refreshTools: () => {},
      getCommands: () => [],
      // Pi's: `false` (nothing changed) when the model's provider has no auth, else the model
      // is set, as the handlers after this one read it.
      setModel: async (model) => {
        const state = scope().state;
        if (!hasAuth(model?.provider)) return false;
        const missing = MODEL_FIELDS.filter((field) => model[field] === undefined);
        if (missing.length > 0) throw new Error(`pi.setModel needs a whole model (as the model registry gives it); this one lacks ${missing.join(", ")}`);
        state.thinkingLevel = clampThinkingLevel(model, switchedThinkingLevel(state, model));
        state.model = model;
        act({ action: "setModel", model });
        return true;
      },
      getThinkingLevel: () => scope().state.thinkingLevel,
      setThinkingLevel: (level) => {
        scope().state.thinkingLevel = level;
        act({ action: "setThinkingLevel", level });
      },
    },
    {
      getModel: () => scope().state.model,
      getScopedModels: () => [],
      isIdle: () => !!scope().state.isIdle,
      isProjectTrusted: () => !!scope().state.projectTrusted,
      getSignal: () => undefined,
      abort: () => {
        act({ action: "abort" });
        abortEvent();
      },
      hasPendingMessages: () => !!scope().state.hasPendingMessages,
      shutdown: () => act({ action: "shutdown" }),
      getContextUsage: () => scope().state.contextUsage,
      compact: (options) => {
        // The callbacks wait here under a number the action names; the compaction's end calls
        // them (`compact_end`).
        let callback;
        if (options?.onComplete || options?.onError) {
          callback = compactCallbacks.next++;
          compactCallbacks.waiting.set(callback, options);
        }
        act({ action: "compact", customInstructions: options?.customInstructions, callback });
        abortEvent();
      },
      getSystemPrompt: () => scope().state.systemPrompt ?? "",
      // A tool's `ctx.executeTool` (Pi 1.5): the session runs the call through its tool
      // pipeline and answers with its outcome; `ctx.tools` are the callable tools.
      executeTool: (_callerId, name, args) => nestedCall(name, args),
      getCallableTools: () => callableTools(scope().state),
    },
    modelRegistry,
  );
  // Pi's runner makes the provider changes of loaded extensions direct calls of the session's
  // model runtime; here they are actions of the handler making them, the extension's path kept.
  Object.assign(runner.runtime, providerActions(act));
  // `ctx.modelRegistry` changes the same registry, without refreshing the session's model.
  Object.assign(modelRegistry, registryProviderActions(act));
  runner.onError((error) =>
    current.getStore()?.errors.push({ error: error.error, event: error.event, extensionPath: error.extensionPath }),
  );
  // Pi's runner tells its extensions of every change of the registered MCP servers once bound;
  // the session hears of it too, as an action of the handler that changed them, and tells the
  // built-in MCP extension, which connects them. Outside a handler nothing can change them.
  runner.runtime.mcpServers.setChangeListener(() => {
    const servers = runner.runtime.mcpServers.list();
    if (current.getStore()) {
      act({ action: "mcpServersChange", servers: servers.map((s) => ({ name: s.name, extensionPath: s.extensionPath, config: s.config })) });
    }
    void runner.emit({ type: "mcp_servers_change", servers });
    if (unconnectedMcp.on) {
      // One set for every runner, so that each server is reported once.
      runner.reportedMcpServers = unconnectedMcp.reported;
      runner.reportUnhandledMcpServers();
    }
  });
  prompts.share(runner);
  return runner;
}

/** A tool's `pi.getAllTools()` entry with its definition's `reachesTools` (a function, which
 * the session's description cannot carry), where Pi puts it: before its source. */
function withReach(info) {
  // The output schema the session gives an MCP tool is for `toolObject`, not Pi's getter.
  const { outputSchema: _declared, ...described } = info;
  const reaches = tools.get(info.name)?.definition.reachesTools;
  if (typeof reaches !== "function") return described;
  const { sourceInfo, ...rest } = described;
  return { ...rest, reachesTools: reaches, ...(sourceInfo ? { sourceInfo } : {}) };
}

/** The nested calls waiting for the session's answer, by `<tool.execute request id>:<n>`. */
const nestedWaiting = new Map();
let nestedAsked = 0;

/** Asks the session to run `name` with `args` for the tool call of the current scope (as Pi's
 * `executeTool`, it never rejects for the tool's failure: that is the outcome's `isError`). */
function nestedCall(name, args) {
  const store = scope();
  if (store?.toolCall === undefined) throw new Error("ctx.executeTool is only available while a tool runs");
  const n = ++nestedAsked;
  return new Promise((resolve, reject) => {
    nestedWaiting.set(n, { resolve, reject });
    write({ id: store.toolCall, type: "tool.nested", n, name, args: plain(args ?? {}) });
  });
}

function nestedAnswer(request) {
  const waiting = nestedWaiting.get(request.n);
  if (!waiting) return;
  nestedWaiting.delete(request.n);
  if (request.error !== undefined) waiting.reject(new Error(request.error));
  else waiting.resolve(request.outcome);
}

/** Pi's `_getCallableTools`: the active `direct` tools and every `codemode` or `deferred` one,
 * in registration order (as `pi.getAllTools()` describes them), each with its output schema
 * (what a codemode script's call resolves to). */
function callableTools(state) {
  if (!state.allTools) return state.activeTools.map((name) => ({ name }));
  const active = new Set(state.activeTools);
  return state.allTools
    .filter((tool) => {
      const exposure = tool.exposure ?? "direct";
      return exposure === "codemode" || exposure === "deferred" || (exposure === "direct" && active.has(tool.name));
    })
    .map((info) => {
      const { outputSchema: _declared, ...described } = info;
      return { ...described, ...toolObject(info) };
    });
}

/** Adds to a tool call's view of the session the custom entry its `pi.appendEntry` asked for, on
 * its leaf, as the session is about to append it. */
function provisionalEntry(state, action) {
  const session = state.session;
  if (!session) return;
  const parentId = session.leafId ?? null;
  const known = new Set(session.entries.map((e) => e.id));
  let id;
  do id = Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, "0");
  while (known.has(id));
  const entry = { type: "custom", customType: action.customType, data: action.data, id, parentId, timestamp: new Date().toISOString() };
  state.session = { ...session, leafId: id, entryCount: session.entries.length + 1, entries: [...session.entries, entry] };
}

/** `ctx.compact()`'s callbacks, by the number their `compact` action names (counted from 0). */
const compactCallbacks = { next: 0, waiting: new Map() };

/** A compaction `ctx.compact()` asked for ended: its `onComplete` gets the result, its
 * `onError` the error, as Pi's context calls them (one `onComplete` throws goes to `onError`);
 * what they ask for is the answer's actions. */
async function compactEnd(request) {
  const options = compactCallbacks.waiting.get(request.callback);
  compactCallbacks.waiting.delete(request.callback);
  const state = snapshot(request);
  const store = { state, actions: [], errors: [], owner: request.id, told: [] };
  const failed = (error) => store.errors.push({ error: error instanceof Error ? error.message : String(error), event: "compact_end" });
  await current.run(store, async () => {
    let pending;
    try {
      if (request.error !== undefined && request.error !== null) throw new Error(request.error);
      pending = options?.onComplete?.(request.result);
    } catch (error) {
      try {
        pending = options?.onError?.(error instanceof Error ? error : new Error(String(error)));
      } catch (thrown) {
        failed(thrown);
      }
    }
    try {
      await pending;
    } catch (error) {
      failed(error);
    }
    await UiPrompts.told(store);
  });
  return plain({ result: null, actions: store.actions, errors: store.errors });
}

/** The extension's `context` or `context_with_system` handlers over `messages`, as Pi's
 * `emitContext` runs each kind (the harness asks for the two in turn, every extension's
 * `context` first): a `context` handler sees the messages its own way and what it returns
 * replaces them; a `context_with_system` handler that drops the leading system message is
 * reported. A thrown handler is reported and the next one goes on. */
async function contextHandlers(runner, type, messages) {
  const ctx = runner.createContext();
  let current = structuredClone(messages);
  for (const ext of runner.extensions) {
    for (const handler of ext.handlers.get(type)?.slice() ?? []) {
      try {
        if (type === "context") {
          const visible = current.slice();
          const returned = (await handler({ type, messages: visible }, ctx))?.messages;
          if (returned) current = returned;
          else if (!same(visible, current)) current = visible;
        } else {
          const hadLeadingSystem = current[0]?.role === "system";
          current = (await handler({ type, messages: current }, ctx))?.messages ?? current;
          if (hadLeadingSystem && current[0]?.role !== "system") {
            runner.emitError({ extensionPath: ext.path, event: type, error: LEADING_SYSTEM_REMOVED });
          }
        }
      } catch (error) {
        runner.emitError({ extensionPath: ext.path, event: type, error: error instanceof Error ? error.message : String(error), stack: error instanceof Error ? error.stack : undefined });
      }
    }
  }
  return current;
}

/** Pi 1.5.2's report of a `context_with_system` handler that dropped the leading system message. */
const LEADING_SYSTEM_REMOVED =
  "Handler removed the leading system message; the request has no prompt or initial tool declarations. Keep it at index 0 or replace a dropped prefix with getCurrentSystemMessage().";

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Runs a user command through an extension's `operations.exec` (Pi's
 * `executeBashWithOperations` hands it the command after the `shellCommandPrefix` setting's
 * lines, the cwd, `onData` and the signal): the raw chunks (base64, cleaned by the harness as Pi
 * cleans them; each also sent as it comes, `exec.chunk`, for the harness to show at once, where
 * the handlers asked for nothing), the
 * exit code, whether the signal fired, or what `exec` threw. */
async function execThrough(operations, payload, prefix, signal) {
  const chunks = [];
  // What the handlers asked for or threw goes out with the answer, before its chunks, as in Pi;
  // only where there is none can the chunks go out as they come.
  const store = current.getStore();
  const streams = store && store.actions.length === 0 && store.errors.length === 0;
  const onData = (data) => {
    const chunk = Buffer.from(data).toString("base64");
    chunks.push(chunk);
    if (streams) write({ id: store.owner, type: "exec.chunk", data: chunk });
  };
  try {
    const command = prefix ? `${prefix}\n${payload.command}` : payload.command;
    const { exitCode } = await operations.exec(command, payload.cwd, { onData, signal });
    return { chunks, exitCode: typeof exitCode === "number" ? exitCode : undefined, cancelled: !!signal?.aborted };
  } catch (error) {
    if (signal?.aborted) return { chunks, cancelled: true };
    return { chunks, error: error instanceof Error ? error.message : String(error) };
  }
}

/** Runs the payload's event through the extension's runner: Pi's result, as the harness's. */
async function dispatch(runner, payload, state, signal) {
  switch (payload.type) {
    case "tool_call": {
      const event = { ...payload, input: structuredClone(payload.input) };
      const result = await runner.emitToolCall(event);
      const changed = !same(event.input, payload.input);
      if (!result && !changed) return null;
      return {
        type: "tool_call", block: !!result?.block, reason: result?.reason,
        terminate: result?.terminate, input: changed ? event.input : undefined,
      };
    }
    case "tool_result": {
      const result = await runner.emitToolResult({ ...payload });
      if (!result) return null;
      return { type: "tool_result", content: result.content, details: result.details, isError: result.isError };
    }
    case "input": {
      const result = await runner.emitInput(payload.text, payload.images, payload.source, payload.streamingBehavior);
      return { type: "input", ...result };
    }
    case "before_agent_start": {
      const { type: _type, systemPrompt, ...trigger } = payload;
      const { messages, systemPromptOptions } = await runner.emitBeforeAgentStart(trigger, { cwd: state.cwd, forceSystemPrompt: systemPrompt });
      const forced = systemPromptOptions.forceSystemPrompt;
      return {
        type: "before_agent_start",
        messages: messages.length > 0 ? messages : undefined,
        systemPrompt: forced !== systemPrompt ? forced : undefined,
      };
    }
    case "turn_end": {
      // Pi 1.5.2 dispatches turn_end as a boundary, with the persisted entries of the turn's
      // messages (the mirror holds them: the session wrote them before asking).
      const messageEntryId = persistedEntryId(payload.message);
      if (!messageEntryId) {
        runner.emitError({ extensionPath: "<boundary>", event: "turn_end", error: "turn_end could not resolve the persisted assistant entry ID" });
        return null;
      }
      const toolResultEntryIds = payload.toolResults.flatMap((result) => {
        const id = persistedEntryId(result);
        return id ? [id] : [];
      });
      const event = { ...payload, messageEntryId, toolResultEntryIds, outcome: outcomeOf(payload.message) };
      return await boundary(runner, event, "turn_end", state);
    }
    case "agent_before_settle":
      return await boundary(runner, payload, "agent_before_settle", state);
    case "context":
    case "context_with_system": {
      const messages = await contextHandlers(runner, payload.type, payload.messages);
      return same(messages, payload.messages) ? null : { type: "context", messages };
    }
    case "cache_warming_decision": {
      // Pi's runner folds the extension's handlers (the last action returned wins) starting
      // from the event's action, which it reads once before any handler runs; the handlers then
      // read Pi's. Starting from no action tells "returned Pi's action" from "returned none",
      // which the harness needs to compose this extension after the others.
      let first = true;
      const event = { ...payload };
      Object.defineProperty(event, "action", {
        enumerable: true,
        get() {
          if (!first) return payload.action;
          first = false;
          return undefined;
        },
      });
      const action = await runner.emitCacheWarmingDecision(event);
      return action === "warm" || action === "stop" ? { type: "cache_warming_decision", action } : null;
    }
    case "session_before_compact": {
      // Pi's preparation holds its file operations as sets, and its event an abort signal; the
      // last object a handler returned is the answer (a cancel ends the round).
      const { fileOps } = payload.preparation;
      const preparation = {
        ...payload.preparation,
        fileOps: { read: new Set(fileOps.read), written: new Set(fileOps.written), edited: new Set(fileOps.edited) },
      };
      const result = await runner.emit({ ...payload, preparation, signal });
      if (!result) return null;
      return { type: "session_before_compact", cancel: result.cancel ? true : undefined, compaction: result.compaction || undefined };
    }
    case "session_before_switch":
    case "session_before_fork": {
      // The last object a handler returned is the answer (a cancel ends the round); Pi reads
      // its `cancel` only.
      const result = await runner.emit({ ...payload });
      if (!result) return null;
      return { type: "session_before_replace", cancel: result.cancel ? true : undefined };
    }
    case "session_before_tree": {
      // The last object a handler returned is the answer (a cancel ends the round), with the
      // fields Pi reads of it.
      const result = await runner.emit({ ...payload, signal });
      if (!result) return null;
      return {
        type: "session_before_tree",
        cancel: result.cancel ? true : undefined,
        summary: result.summary ? { summary: result.summary.summary, details: result.summary.details, usage: result.summary.usage } : undefined,
        customInstructions: result.customInstructions,
        replaceInstructions: result.replaceInstructions,
        label: result.label,
      };
    }
    case "before_provider_headers": {
      // Pi's handlers change the headers object in place; the changed object is the answer.
      const headers = structuredClone(payload.headers);
      await runner.emitBeforeProviderHeaders(headers);
      return same(headers, payload.headers) ? null : { type: "before_provider_headers", headers };
    }
    case "before_provider_request": {
      // Each handler's returned value replaces the body for the next; the last is sent.
      const body = await runner.emitBeforeProviderRequest(payload.payload);
      return body === payload.payload ? null : { type: "before_provider_request", payload: body };
    }
    case "session_tree":
    case "session_compact":
    case "session_compact_failed":
    case "agent_start":
    case "agent_end":
    case "turn_start":
    case "message_start":
    case "tool_execution_start":
    case "tool_execution_update":
    case "tool_execution_end":
    case "session_start":
    case "session_shutdown":
    case "model_select":
    case "thinking_level_select":
    case "agent_settled":
    case "session_info_changed": {
      await runner.emit({ ...payload });
      return null;
    }
    case "after_provider_response": {
      await runner.emit({ type: payload.type, status: payload.status, headers: payload.headers });
      return null;
    }
    case "provider_stream_event": {
      // Pi's event object, its fields in Pi's order.
      const { data, type, provider, api, model } = payload;
      await runner.emit({ data, type, provider, api, model });
      return null;
    }
    case "user_bash": {
      // Pi's runner reports a handler's throw or invalid answer (an error of this event) and
      // throws it on; here the answer is then none, and the harness fails the command with it.
      let answer;
      try {
        answer = await runner.emitUserBash({ ...payload });
      } catch {
        return null;
      }
      if (!answer) return null;
      if (answer.result) return { type: "user_bash", result: answer.result };
      return { type: "user_bash", exec: await execThrough(answer.operations, payload, state.shellCommandPrefix, signal) };
    }
    case "resources_discover": {
      // Pi's runner tags each path with its extension; this runner has one, whose path the
      // harness knows, so the paths go back as lists.
      const found = await runner.emitResourcesDiscover(payload.cwd, payload.reason);
      const paths = (list) => (list.length > 0 ? list.map((entry) => entry.path) : undefined);
      const [skillPaths, promptPaths, themePaths] = [found.skillPaths, found.promptPaths, found.themePaths].map(paths);
      if (!skillPaths && !promptPaths && !themePaths) return null;
      return { type: "resources_discover", skillPaths, promptPaths, themePaths };
    }
    case "message_update": {
      // Pi's provider event carries the message so far as its `partial`.
      const message = payload.message;
      await runner.emit({ ...payload, assistantMessageEvent: { ...payload.assistantMessageEvent, partial: message } });
      return null;
    }
    case "message_end": {
      // Pi's runner chains the handlers' replacements (of the same role); Pi then gives one
      // without content an empty one.
      const replacement = await runner.emitMessageEnd({ ...payload });
      if (!replacement) return null;
      const message = replacement.content == null ? { ...replacement, content: [] } : replacement;
      return { type: "message_end", message };
    }
    default:
      throw new Error(`unknown event ${JSON.stringify(payload.type)}`);
  }
}

async function event(request) {
  const runner = runnerFor(request.extension);
  // Handlers ask through the run's UI once it has one, as Pi's RPC mode binds its runner.
  if (ui.enabled && !runner.hasUI()) runner.setUIContext(ui.context(request.id), "rpc");
  const state = snapshot(request);
  // The event's abort signal (Pi's `session_before_compact` has one): an `abort` request for
  // the event fires it, and so do its handlers' `ctx.abort()` and `ctx.compact()`.
  const controller = new AbortController();
  const store = { state, actions: [], errors: [], controller, owner: request.id, told: [] };
  running.set(request.id, controller);
  try {
    const result = await current.run(store, async () => {
      const result = await dispatch(runner, request.payload, state, controller.signal);
      await UiPrompts.told(store);
      return result;
    });
    return plain({ result, actions: store.actions, errors: store.errors });
  } finally {
    running.delete(request.id);
  }
}

/** The command runs whose handler waits for the session, by their number. */
const waitingCommands = new Map();
let nextCommandRun = 0;

async function command(request) {
  const runner = commandRunner();
  if (ui.enabled && !runner.hasUI()) runner.setUIContext(ui.context(request.id), "rpc");
  const found = runner.getCommand(request.name);
  if (!found) throw new Error(`no extension registered the command ${JSON.stringify(request.name)}`);
  // The session's state as at a hook point, but idle as the machine saw it when the command came.
  const state = snapshot(request);
  if (request.idle !== undefined) state.isIdle = request.idle;
  // `answer` answers the request in flight: the command's own, then each `command.resume`.
  const run = { number: nextCommandRun++, idle: request.idle, answer: null, resume: null, requestId: request.id };
  const store = { state, actions: [], errors: [], command: run, owner: request.id, told: [] };
  run.store = store;
  return new Promise((answer) => {
    run.answer = answer;
    void current.run(store, async () => {
      try {
        await found.handler(request.args, runner.createCommandContext());
      } catch (error) {
        store.errors.push({ error: error instanceof Error ? error.message : String(error), event: "command" });
      }
      await UiPrompts.told(store);
      waitingCommands.delete(run.number);
      run.answer(plain({ result: null, actions: store.actions, errors: store.errors }));
    });
  });
}

/** A command's context asks the session for `ask` (RPC mode's command context actions): the
 * run's request is answered with the ask and what was asked before it, and the handler waits
 * for the `command.resume` that brings the session's answer: its result, or the error thrown. */
async function askSession(ask) {
  return (await askSessionFor(ask)).result;
}

/** A command's context asks the session to be replaced (`ask`): `{cancelled: true}` where a
 * `session_before_*` handler cancelled; else the command goes on in the new session, where
 * `options.withSession` runs with its context before the call returns. */
async function replaceSession(options, ask) {
  const withSession = typeof options?.withSession === "function" ? options.withSession : undefined;
  const answer = await askSessionFor({ ...ask, withSession: !!withSession });
  if (!("replaced" in answer)) return answer.result;
  if (typeof options?.setup === "function") await setUpSession(options.setup);
  if (withSession) await withSession(replacedContext());
  return answer.replaced;
}

/** `newSession({setup})`: the callback gets the new session's manager; what it writes is
 * asked of the session, which appends it as written and rebuilds the agent's context before
 * `withSession` runs (Pi's `setup`, then `refreshContext`). Its reads see the session as it
 * was when the callback started; an append returns no entry id (the session draws ids). */
async function setUpSession(setup) {
  const appends = [];
  const written = (method, fields) => {
    appends.push({ method, ...fields });
    return undefined;
  };
  const manager = Object.create(sessionManager, {
    appendMessage: { value: (message) => written("appendMessage", { message }) },
    appendCustomEntry: { value: (customType, data) => written("appendCustomEntry", { customType, data }) },
    appendCustomMessageEntry: {
      value: (customType, content, display, details) =>
        written("appendCustomMessageEntry", { customType, content, display: !!display, details }),
    },
    appendSessionInfo: { value: (name) => written("appendSessionInfo", { name: String(name) }) },
    appendLabelChange: {
      value: (targetId, label) => written("appendLabelChange", { targetId: String(targetId), label }),
    },
  });
  await setup(manager);
  await askSession({ kind: "setupSession", appends: plain(appends) });
}

/** The context `withSession` is given once the session was replaced (Pi's
 * `createReplacedSessionContext`): the new session's command context, whose `sendUserMessage`
 * and `sendMessage` go to the new session and return once a run they start has settled. */
function replacedContext() {
  const runner = commandRunner();
  if (ui.enabled && !runner.hasUI()) runner.setUIContext(ui.context(scope().command.requestId), "rpc");
  const context = Object.defineProperties({}, Object.getOwnPropertyDescriptors(runner.createCommandContext()));
  context.sendUserMessage = (content, options) =>
    askSession({
      kind: "sendUserMessage",
      content,
      deliverAs: options?.deliverAs,
      expandPromptTemplates: options?.expandPromptTemplates,
    });
  // Pi's `sendCustomMessage`: returns once a run it starts has settled.
  context.sendMessage = (message, options) =>
    askSession({
      kind: "sendMessage",
      message: { customType: message.customType, content: message.content, display: !!message.display, details: message.details },
      deliverAs: options?.deliverAs,
      triggerTurn: options?.triggerTurn,
    });
  return context;
}

/** `askSession`, answered with the session's whole answer (`{result}`, or `{replaced}`: the
 * session was replaced). */
async function askSessionFor(ask) {
  const store = scope();
  const run = store.command;
  if (!run) throw new Error(`ctx.${ask.kind} is only available to a command's handler`);
  await UiPrompts.told(store);
  return new Promise((resolve, reject) => {
    run.resume = { resolve, reject };
    waitingCommands.set(run.number, run);
    const actions = store.actions.splice(0);
    const errors = store.errors.splice(0);
    run.answer(plain({ result: null, actions, errors, asked: { run: run.number, ask } }));
  });
}

async function commandResume(request) {
  const run = waitingCommands.get(request.run);
  if (!run?.resume) throw new Error(`no command's handler waits as run ${request.run}`);
  const state = snapshot(request);
  if (run.idle !== undefined) state.isIdle = run.idle;
  const { resolve, reject } = run.resume;
  run.resume = null;
  waitingCommands.delete(run.number);
  return new Promise((answer) => {
    run.answer = answer;
    // The store the handler's async context holds reads the session as it is now.
    run.store.state = state;
    run.requestId = request.id;
    if (request.answer && "error" in request.answer) reject(new Error(request.answer.error));
    else resolve(request.answer ?? {});
  });
}

/** A registered tool's call: `execute` runs as a handler does, in an action scope over the
 * session's state at the call (the request carries its changes, as an event's), with the
 * owning extension's runner's tool context (Pi's `createToolContext`: `createContext()` and
 * `tools`/`executeTool`, whose nested calls the session runs: `tool.nested`, answered by
 * `tool.nested.answer`); its `cwd`, UI and signal are the call's. */
async function execute(request) {
  const tool = tools.get(request.name);
  if (!tool) throw new Error(`Tool ${request.name} is not registered by any extension`);
  const runner = runnerFor(tool.owner);
  const state = snapshot(request);
  const controller = new AbortController();
  const store = { state, actions: [], errors: [], controller, owner: request.id, told: [], toolCall: request.id };
  running.set(request.id, controller);
  try {
    const onUpdate = (partial) => write({ id: request.id, type: "tool.update", partial: plain(partial) });
    // The runner's UI, as Pi's tool context has it: its dialogs tell every extension.
    if (ui.enabled && !runner.hasUI()) runner.setUIContext(ui.context(request.id), "rpc");
    const ctx = Object.defineProperties(runner.createToolContext(request.toolCallId, controller.signal), {
      cwd: { value: request.cwd, enumerable: true },
      signal: { value: controller.signal, enumerable: true },
    });
    return await current.run(store, async () => {
      const result = plain(await tool.definition.execute(request.toolCallId, request.args, controller.signal, onUpdate, ctx));
      // What the dialogs' listeners asked for reaches the session before the result.
      await UiPrompts.told(store);
      return result;
    });
  } finally {
    running.delete(request.id);
  }
}

/** What a shim sees as `this`: pi-agent-core calls it on the tool the agent holds, Pi's wrapper
 * of the definition (`wrapToolDefinition`), which has these fields and no other of the
 * definition's; one per registered definition, as Pi builds one per runtime. */
const shimThis = new WeakMap();

function wrappedTool(definition) {
  let wrapped = shimThis.get(definition);
  if (!wrapped) {
    wrapped = {
      name: definition.name,
      label: definition.label,
      description: definition.description,
      parameters: definition.parameters,
      outputSchema: definition.outputSchema,
      constrainedSampling: definition.constrainedSampling,
      prepareArguments: definition.prepareArguments,
      executionMode: definition.executionMode,
      execute: (...args) => definition.execute(...args),
    };
    shimThis.set(definition, wrapped);
  }
  return wrapped;
}

/** A call's arguments as the tool's `prepareArguments` shim makes them: what it returned, or
 * the message it threw, as pi-agent-core's `prepareToolCall` turns a throw into the call's error
 * result. Pi's call holds the object the shim was given: one it changed in place is the call's
 * now (`modelArguments`), whether the shim then returned or threw. */
function prepareArguments(request) {
  const tool = tools.get(request.name);
  const definition = tool?.definition;
  if (typeof definition?.prepareArguments !== "function") return { arguments: request.arguments };
  const before = JSON.stringify(request.arguments);
  const changed = () => {
    const after = JSON.stringify(request.arguments);
    return after === before ? {} : { modelArguments: plain(request.arguments) };
  };
  let prepared;
  try {
    prepared = definition.prepareArguments.call(wrappedTool(definition), request.arguments);
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error), ...changed() };
  }
  // `undefined` has no JSON: the answer leaves `arguments` out.
  return prepared === undefined ? changed() : { arguments: plain(prepared), ...changed() };
}

/** The `prepareLoadout` hooks over the loadout `request` describes (`host-loadout.mjs`). They
 * read the session through their extension's API (codemode its mode setting): the extensions
 * holding them are bound, and the hooks run with the registered tools as the session's. */
function loadoutHooks(request) {
  for (const tool of tools.values()) if (typeof tool.definition.prepareLoadout === "function") runnerFor(tool.owner);
  const state = { activeTools: request.declared ?? [], allTools: request.registered ?? [] };
  const store = { state, actions: [], errors: [], told: [] };
  return current.run(store, () => prepareLoadout(request));
}

async function handle(request) {
  try {
    let data;
    if (request.type === "init") data = await init(request);
    else if (request.type === "catalog") {
      catalog.models = request.models ?? [];
      catalog.authProviders = new Set(request.authProviders ?? []);
      catalog.oauthProviders = new Set(request.oauthProviders ?? []);
      forgetProviderChanges();
      data = null;
    }
    else if (request.type === "settings") {
      loaded.settings = request.settings ?? {};
      data = null;
    }
    else if (request.type === "mcp.unconnected") {
      // Those registered while loading are reported by the harness, at the session's start.
      unconnectedMcp.on = true;
      for (const server of loaded.runtime.mcpServers.list()) unconnectedMcp.reported.add(server.name);
      data = null;
    }
    else if (request.type === "tool.execute") data = await execute(request);
    else if (request.type === "tool.nested.answer") return nestedAnswer(request);
    else if (request.type === "tool.prepare_arguments") data = prepareArguments(request);
    else if (request.type === "tool.prepare_loadout") data = loadoutHooks(request);
    else if (request.type === "model.route") data = await route(request, runnerFor);
    else if (ui.accepts(request)) return;
    else if (request.type === "event") data = await event(request);
    else if (request.type === "command") data = await command(request);
    else if (request.type === "command.resume") data = await commandResume(request);
    else if (request.type === "compact_end") data = await compactEnd(request);
    else if (request.type === "reload") data = await loaded.reload(request.paths);
    else if (request.type === "project_trust") data = await projectTrust(request);
    else if (request.type === "extend") data = await extend(request);
    else if (request.type === "abort") {
      running.get(request.target)?.abort();
      return;
    } else throw new Error(`unknown request type ${JSON.stringify(request.type)}`);
    write({ id: request.id, type: "response", success: true, data });
  } catch (error) {
    write({ id: request.id, type: "response", success: false, error: error instanceof Error ? error.message : String(error) });
  }
}

let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) !== -1) {
    const line = buffer.slice(0, end).replace(/\r$/, "");
    buffer = buffer.slice(end + 1);
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      write({ type: "response", success: false, error: `Failed to parse request: ${error.message}` });
      continue;
    }
    void handle(request);
  }
});
process.stdin.on("end", () => process.exit(0));
