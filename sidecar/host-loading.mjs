// Loading the extensions with Pi's own loader (`init`, `extend`), what they registered as
// `init` answers it, and Pi's `project_trust` event asked of those loaded first.
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { loaded, plain, tools } from "./host-scope.mjs";
import { catalog, modelRegistry, projections, sessionManager } from "./session-view.mjs";
import { learnBuiltinOutputSchemas } from "./host-loadout.mjs";
import { keepRouters, virtualModelData } from "./host-routing.mjs";
import { keepTypedAsLoaded, registerTypedProvider, setBuiltinTypedModels } from "./host-typed-models.mjs";

const PACKAGE = "@earendil-works/pi-coding-agent";
const MIN_NODE = [22, 19];

/** The bundle chunk of the install that exports all `names` (the package's public API). */
async function bundled(piDir, ...names) {
  const chunks = path.join(piDir, "node_modules", PACKAGE, "dist", "bundle", "chunks");
  for (const name of fs.readdirSync(chunks).filter((n) => n.endsWith(".js"))) {
    const file = path.join(chunks, name);
    const text = fs.readFileSync(file, "utf8");
    const exported = new Set();
    for (const [, list] of text.matchAll(/export\s*\{([^}]*)\}/g)) {
      for (const item of list.split(",")) exported.add(item.trim().split(/\s+as\s+/).pop());
    }
    if (names.every((n) => exported.has(n))) return import(pathToFileURL(file).href);
  }
  throw new Error(`no module of ${chunks} exports ${names.join(", ")}`);
}

/** `init`: loads the extensions `request.paths` names with Pi's loader (Node's version checked
 * first) and answers what they registered. */
export async function init(request) {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) {
    throw new Error(`Node.js >= ${MIN_NODE.join(".")} is required to run extensions, found ${process.versions.node}`);
  }
  const piDir = process.env.PI_EXTENSION_HOST_PI_DIR;
  if (!piDir) throw new Error("PI_EXTENSION_HOST_PI_DIR does not name a Pi 1.5.2 install");
  const { discoverAndLoadExtensions, ExtensionRunner, buildContextEntries, buildSessionProjection, SessionManager, convertToLlm } =
    await bundled(
      piDir,
      "discoverAndLoadExtensions",
      "ExtensionRunner",
      "buildContextEntries",
      "buildSessionProjection",
      "SessionManager",
      "convertToLlm",
    );
  Object.assign(projections, { buildContextEntries, buildSessionProjection, SessionManager, convertToLlm });
  learnBuiltinOutputSchemas(await bundled(piDir, ...BUILTIN_DEFINITIONS).then(definitionFactories), request.cwd);
  // The harness discovered the paths (trust decided there): an empty folder stands for the
  // agent directory, and the project's `.pi/extensions` is hidden from the loader while the
  // harness leaves it out (an untrusted project's), so that the loader discovers nothing more.
  // The project is the extensions' cwd (`pi.exec`'s default folder).
  // The harness made that folder (`standIn`) and removes it once the host has ended, however
  // it ended (a host killed while loading cannot leave it behind); the host removes it too when
  // it exits, for a harness that was killed itself.
  const empty = request.standIn;
  if (!empty) throw new Error("init names no empty stand-in folder");
  process.on("exit", () => fs.rmSync(empty, { recursive: true, force: true }));
  Object.assign(loaded, {
    paths: request.paths, projectTrusted: request.projectTrusted, standIn: empty, cwd: request.cwd,
    builtinsFolder: request.builtinsFolder ?? undefined,
    flagValues: request.flagValues ?? {}, discoverAndLoadExtensions,
  });
  const load = async () => {
    const result = await loadWithBuiltins(loaded.paths);
    loaded.loadErrors = [...result.errors];
    result.errors.push(...conflicts(result.extensions));
    Object.assign(loaded, { extensions: result.extensions, runtime: result.runtime, Runner: ExtensionRunner, cwd: request.cwd });
    loaded.runners.clear();
    indexTools();
    return result;
  };
  const result = await load();
  // A replaced session loads the extensions again, as Pi's runtime builds a new one (their
  // factories run again; their modules, already imported, keep their state), and so does a
  // command's `ctx.reload()`: what the new load registered is answered as `init` answers it.
  // The harness may name the paths found again (the settings read again, Pi's resource loader
  // resolving them again); without them, those of the previous load.
  loaded.reload = async (paths) => {
    // The replaced session's contexts are stale, as Pi invalidates a disposed session's runner:
    // a command's handler still holding one throws Pi's message when it uses it.
    for (const runner of loaded.runners.values()) runner.invalidate();
    if (Array.isArray(paths)) loaded.paths = paths;
    const again = await load();
    // The providers stay those registered at the start.
    again.runtime.pendingProviderRegistrations = [];
    again.runtime.pendingNativeProviderRegistrations = [];
    return registrations(again, request.flagValues);
  };
  catalog.models = request.models ?? [];
  catalog.authProviders = new Set(request.authProviders ?? []);
  catalog.oauthProviders = new Set(request.oauthProviders ?? []);
  setBuiltinTypedModels(request.typedModels);
  loaded.providers = [];
  return registrations(result, request.flagValues);
}

/** Pi's built-in tool definition factories, whose output schemas a script's calls resolve by. */
const BUILTIN_DEFINITIONS = ["Read", "Bash", "PowerShell", "Edit", "Write", "Grep", "Find", "Ls"].map(
  (name) => `create${name}ToolDefinition`,
);

function definitionFactories(module) {
  return Object.fromEntries(BUILTIN_DEFINITIONS.map((factory) => [factory.slice(6, -14).toLowerCase(), module[factory]]));
}

/** The built-in extensions of Pi 1.5.2 the host runs, by the path Pi names them with: its
 * `codemode` tool (`createCodemodeExtension()`), loaded after the others as Pi loads its
 * built-ins, and left out when another extension registers a tool of the same name (Pi's
 * replaceable built-ins). The loader loads files: each is a module of the stand-in folder,
 * outside what the loader discovers, that exports the install's factory. */
const BUILTINS = new Map([
  ["builtin:codemode", 'import { createCodemodeExtension } from "@earendil-works/pi-coding-agent";\nexport default createCodemodeExtension();\n'],
]);

/** Whether the built-in extension `builtin` is replaced by one of `extensions` (one registering
 * a tool it registers). */
function replaced(builtin, extensions) {
  return extensions.some((e) => e !== builtin && !BUILTINS.has(e.path) && [...builtin.tools.keys()].some((name) => e.tools.has(name)));
}

/** The built-in extensions' module files: `[file, name]`. They are kept in the user's private
 * folder the harness names (at one path across runs, so that the loader's transpile cache finds
 * them), written only when missing or changed, through a rename so that a host starting at the
 * same time never reads half a file; in the stand-in folder when the harness names none. */
function builtinFiles() {
  const folder = loaded.builtinsFolder ?? path.join(loaded.standIn, "builtin");
  fs.mkdirSync(folder, { recursive: true });
  return [...BUILTINS].map(([name, source]) => {
    const file = path.join(folder, `${name.slice("builtin:".length)}.mjs`);
    let current;
    try {
      current = fs.readFileSync(file, "utf8");
    } catch {
      current = undefined;
    }
    if (current !== source) {
      const partial = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(partial, source);
      fs.renameSync(partial, file);
    }
    return [file, name];
  });
}

/** Loads `paths` and the built-in extensions in one load (the loader's set-up is paid once):
 * the built-ins named as Pi names them, after the others, those another extension replaces left
 * out. */
async function loadWithBuiltins(paths) {
  const files = builtinFiles();
  const result = await loadPaths([...paths, ...files.map(([file]) => file)]);
  const builtinOf = (extension) => files.find(([file]) => path.resolve(file) === path.resolve(extension.path))?.[1];
  const builtins = result.extensions.filter((extension) => builtinOf(extension) !== undefined);
  result.extensions = result.extensions.filter((extension) => builtinOf(extension) === undefined);
  for (const extension of builtins) {
    const name = builtinOf(extension);
    // Pi's resource loader names a built-in extension's source so.
    const sourceInfo = { path: name, source: "builtin", scope: "temporary", origin: "top-level" };
    Object.assign(extension, { path: name, sourceInfo });
    for (const tool of extension.tools.values()) tool.sourceInfo = sourceInfo;
    if (!replaced(extension, result.extensions)) result.extensions.push(extension);
  }
  return result;
}

/** Loads `paths` with Pi's loader in the project's folder, the stand-in as the agent
 * directory. The loader also discovers the project's `.pi/extensions` on its own: while the
 * project is untrusted, that folder is hidden from it (`existsSync` says it is not there during
 * the loader's synchronous discovery, which runs before the load's first await). */
function loadPaths(paths) {
  const load = () => loaded.discoverAndLoadExtensions(paths, loaded.cwd, loaded.standIn);
  if (loaded.projectTrusted) return load();
  const hidden = path.resolve(loaded.cwd, ".pi", "extensions");
  const exists = fs.existsSync;
  fs.existsSync = (p) => (typeof p === "string" && path.resolve(p) === hidden ? false : exists(p));
  syncBuiltinESMExports();
  try {
    return load();
  } finally {
    fs.existsSync = exists;
    syncBuiltinESMExports();
  }
}

/** The tools of the extensions loaded now, by name: each definition with the index of the
 * extension that registered it (whose runner's context its `execute` gets). */
function indexTools() {
  tools.clear();
  loaded.extensions.forEach((extension, owner) => {
    for (const [name, tool] of extension.tools) tools.set(name, { definition: tool.definition, owner });
  });
}

/** What a load registered (`result`: its extensions in load order and its errors), as `init`
 * answers: the providers registered since the last answer are taken (a runner bound later must
 * not register them again), after those taken before. */
function registrations(result, flagValues) {
  const registered = [];
  for (const extension of result.extensions) {
    for (const tool of extension.tools.values()) {
      const d = tool.definition;
      registered.push(plain({
        name: d.name, label: d.label ?? d.name, description: d.description, promptSnippet: d.promptSnippet,
        promptGuidelines: d.promptGuidelines, parameters: d.parameters, executionMode: d.executionMode,
        ...reach(d),
        // Where it came from, as the loader saw it (the harness words it as Pi's resource
        // loader does, as for commands).
        sourceInfo: tool.sourceInfo,
        // Its calls ask the host to run it (`tool.prepare_arguments`) before they are validated.
        ...(typeof d.prepareArguments === "function" ? { prepareArguments: true } : {}),
        // Declaring it asks the host how the loadout changes (`tool.prepare_loadout`).
        ...(typeof d.prepareLoadout === "function" ? { prepareLoadout: true } : {}),
      }));
    }
  }
  // Their commands as Pi's runner resolves them (a name two extensions register is told apart
  // by its invocation name), in the fields RPC `get_commands` lists.
  const commands = new loaded.Runner(result.extensions, result.runtime, loaded.cwd, sessionManager, modelRegistry)
    .getRegisteredCommands()
    .map((c) => plain({ name: c.invocationName, description: c.description, source: "extension", sourceInfo: c.sourceInfo }));
  const flags = flagList(result);
  setFlagValues(result, flags, flagValues ?? {});
  // The classifier and image providers loading registered, which a new session starts from (a
  // load again for a replacing session registers none: its providers stay those of the start).
  const pending = result.runtime.pendingProviderRegistrations;
  for (const { name, config } of pending) registerTypedProvider(name, config);
  if (pending.length > 0) keepTypedAsLoaded();
  // Pi registers the providers given by name, then those given as provider objects.
  const providers = [
    ...loaded.providers,
    ...result.runtime.pendingProviderRegistrations.map(providerRegistration),
    ...result.runtime.pendingNativeProviderRegistrations.map(nativeRegistration),
  ];
  // Taken: a runner bound later must not register them again (Pi's flush of the pending lists).
  result.runtime.pendingProviderRegistrations = [];
  result.runtime.pendingNativeProviderRegistrations = [];
  loaded.providers = providers;
  const extensions = result.extensions.map((e) => ({
    path: e.path,
    events: [...e.handlers].filter(([, handlers]) => handlers.length > 0).map(([event]) => event),
  }));
  // The MCP servers registered while loading (Pi's loader validated them, and threw its errors in
  // the registering extension), in registration order: the harness connects them next to
  // `mcp.json`'s, as Pi's built-in MCP extension does at session start.
  const mcpServers = result.runtime.mcpServers.list().map((s) => plain({ name: s.name, config: s.config, extensionPath: s.extensionPath }));
  const virtualModels = (result.runtime.pendingVirtualModelRegistrations ?? []).map(({ definition, extensionPath }) =>
    virtualModelData(definition, extensionPath),
  );
  // Their routers stay here: the harness asks them for each request (`model.route`).
  keepRouters(result.runtime.pendingVirtualModelRegistrations ?? [], result.extensions);
  return { tools: registered, commands, flags, providers, mcpServers, virtualModels, extensions, errors: result.errors };
}

const EXPOSURES = ["direct", "model-only", "codemode", "deferred", "hidden"];

/** How the session reaches a tool, from its definition: its exposure (one Pi knows), namespace
 * (the fields Pi's `ToolNamespace` has), annotations, `defaultActive` and `constrainedSampling`
 * (`false` is as absent). */
function reach(d) {
  const ns = d.namespace;
  const namespace = ns && typeof ns === "object" && typeof ns.name === "string"
    ? { name: ns.name, aliases: Array.isArray(ns.aliases) ? ns.aliases.map(String) : undefined,
        description: typeof ns.description === "string" ? ns.description : undefined,
        instructions: typeof ns.instructions === "string" ? ns.instructions : undefined }
    : undefined;
  return {
    exposure: EXPOSURES.includes(d.exposure) ? d.exposure : undefined,
    namespace,
    annotations: d.annotations && typeof d.annotations === "object" ? d.annotations : undefined,
    defaultActive: typeof d.defaultActive === "boolean" ? d.defaultActive : undefined,
    constrainedSampling: d.constrainedSampling || undefined,
  };
}

/** Pi 1.5.2's `project_trust` event (`emitProjectTrustEvent`), asked of the extensions loaded
 * before trust is decided (the global and command line's): each handler in load order, then
 * registration order; the first whose `trusted` is not "undecided" decides; a handler that
 * throws (or answers nothing) is an error, collected, and the next one is asked. Its context is
 * Pi's without a terminal (`createProjectTrustContext` with `hasUI` false): its dialogs answer
 * at once, `notify` writes to stderr. */
export async function projectTrust(request) {
  const event = { type: "project_trust", cwd: request.cwd };
  const ctx = {
    cwd: request.cwd,
    mode: request.mode,
    hasUI: false,
    ui: {
      select: async () => undefined,
      confirm: async () => false,
      input: async () => undefined,
      notify: (message) => console.error(message),
    },
  };
  const errors = [];
  for (const extension of loaded.extensions) {
    for (const handler of [...(extension.handlers.get("project_trust") ?? [])]) {
      try {
        const result = await handler(event, ctx);
        if (result.trusted === "undecided") continue;
        return { decision: { trusted: result.trusted === "yes", remember: result.remember === true }, errors };
      } catch (error) {
        errors.push({ path: extension.path, error: error instanceof Error ? error.message : String(error) });
      }
    }
  }
  return { decision: null, errors };
}

/** Pi's final load once the project is trusted (`loadFinalExtensionSet`): the extensions
 * already loaded are kept (their factories do not run again), those of `paths` not loaded yet
 * (nor failed) are loaded over the same runtime, and the whole set is ordered as `paths`. */
export async function extend(request) {
  const key = (p) => path.resolve(p);
  const before = new Map(loaded.extensions.map((e) => [key(e.path), e]));
  const failed = new Set(loaded.loadErrors.map((e) => key(e.path)));
  const remaining = request.paths.filter((p) => !before.has(key(p)) && !failed.has(key(p)));
  Object.assign(loaded, { paths: request.paths, projectTrusted: request.projectTrusted });
  let more = { extensions: [], errors: [] };
  if (remaining.length > 0) {
    more = await loadPaths(remaining);
    adopt(more.runtime, loaded.runtime);
  }
  const all = new Map([...before, ...more.extensions.map((e) => [key(e.path), e])]);
  const extensions = request.paths.map((p) => all.get(key(p))).filter((e) => e !== undefined);
  // The built-in extensions stay after the others, unless one of the new ones replaces them.
  const builtins = loaded.extensions.filter((e) => BUILTINS.has(e.path));
  extensions.push(...builtins.filter((b) => !replaced(b, extensions)));
  loaded.loadErrors = [...loaded.loadErrors, ...more.errors];
  const result = { extensions, runtime: loaded.runtime, errors: [...loaded.loadErrors, ...conflicts(extensions)] };
  loaded.extensions = extensions;
  loaded.runners.clear();
  indexTools();
  return registrations(result, loaded.flagValues);
}

/** Makes the runtime a later load gave its extensions (`extra`) read and write the shared one,
 * as Pi's final load hands its first runtime to the loader: what the load put in it (flag
 * defaults, provider registrations) moves over first. */
function adopt(extra, shared) {
  for (const [name, value] of extra.flagValues) if (!shared.flagValues.has(name)) shared.flagValues.set(name, value);
  shared.pendingProviderRegistrations.push(...extra.pendingProviderRegistrations);
  shared.pendingNativeProviderRegistrations.push(...extra.pendingNativeProviderRegistrations);
  shared.pendingVirtualModelRegistrations?.push(...(extra.pendingVirtualModelRegistrations ?? []));
  for (const name of Object.keys(extra)) delete extra[name];
  Object.setPrototypeOf(extra, shared);
}

/** The flags the extensions of a load registered, as `init` lists them. */
function flagList(result) {
  const flags = [];
  for (const extension of result.extensions) {
    for (const flag of extension.flags.values()) {
      flags.push(plain({ name: flag.name, type: flag.type, default: flag.default, description: flag.description, extensionPath: flag.extensionPath }));
    }
  }
  return flags;
}

/** A `pi.registerProvider(name, config)` (what is left once the loader applied the
 * unregistrations) as plain data: the config's functions are not data, so whether it gave a
 * `streamSimple` or `oauth` is said instead. A key written literally crosses as it is, to the
 * harness's memory only (which adds it to the credentials every recording scrubs); one named
 * by a variable or a `!command` crosses as that reference, resolved by the harness. */
export function providerRegistration({ name, config, extensionPath }) {
  return plain({
    name,
    extensionPath,
    config,
    streamSimple: typeof config?.streamSimple === "function",
    oauth: config?.oauth !== undefined && config?.oauth !== null,
  });
}

/** A `pi.registerProvider(provider)` with a provider object (its own auth and stream
 * functions): its id, and the models it lists now as its config's models, marked `native`
 * (nothing of it can run outside JavaScript). */
export function nativeRegistration({ provider, extensionPath }) {
  let models = [];
  try {
    models = provider.getModels?.() ?? [];
  } catch {
    models = [];
  }
  return plain({ name: provider.id, extensionPath, config: { baseUrl: provider.baseUrl, models }, native: true });
}

/** Pi's resource loader's conflicts: a tool or a flag an earlier extension registered, reported
 * as the later one's load error (both stay loaded; the first registration wins). */
function conflicts(extensions) {
  const found = [];
  const owners = { tool: new Map(), flag: new Map() };
  for (const extension of extensions) {
    for (const [kind, names, word] of [["tool", extension.tools.keys(), (n) => `Tool "${n}"`], ["flag", extension.flags.keys(), (n) => `Flag "--${n}"`]]) {
      for (const name of names) {
        const owner = owners[kind].get(name);
        if (owner && owner !== extension.path) found.push({ path: extension.path, error: `${word(name)} conflicts with ${owner}` });
        else owners[kind].set(name, extension.path);
      }
    }
  }
  return found;
}

/** The command line's values of registered flags, as Pi's `applyExtensionFlagValues` sets them
 * (a boolean flag is true whatever follows it; a string flag takes a string); the harness
 * reports the others. */
function setFlagValues(result, flags, values) {
  for (const [name, value] of Object.entries(values)) {
    const flag = flags.find((f) => f.name === name);
    if (flag?.type === "boolean") result.runtime.flagValues.set(name, true);
    else if (flag && typeof value === "string") result.runtime.flagValues.set(name, value);
  }
}
