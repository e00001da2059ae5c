// What the tools a session holds look like to a tool that reaches other tools (Pi 1.5.2's
// codemode): the tool objects of Pi's registry (the declaration with its `outputSchema`, which
// a script's call resolves by), and the `prepareLoadout` hooks run over the loadout the harness
// describes (`tool.prepare_loadout`).
import { loaded, plain, tools } from "./host-scope.mjs";

/** Pi's built-in tools' output schemas, by name (those that declare one), from the install's
 * own definitions: filled in by `init`. */
export const builtinOutputSchemas = new Map();

/** Fills `builtinOutputSchemas` from the install's tool definition factories (`definitions`:
 * name -> factory). */
export function learnBuiltinOutputSchemas(definitions, cwd) {
  builtinOutputSchemas.clear();
  for (const [name, create] of Object.entries(definitions)) {
    const schema = typeof create === "function" ? create(cwd)?.outputSchema : undefined;
    if (schema !== undefined) builtinOutputSchemas.set(name, plain(schema));
  }
}

/** The tool object Pi's registry holds for the tool `info` describes (`pi.getAllTools()`'s
 * entry, with the output schema the session declares for a tool of its own, such as Pi's MCP
 * tools'): its declaration, with the output schema of the definition that registered it (the
 * session's, a built-in's or an extension's). */
export function toolObject(info) {
  const builtin = info.sourceInfo?.source === "builtin" && builtinOutputSchemas.has(info.name);
  const outputSchema = info.outputSchema ?? (builtin ? builtinOutputSchemas.get(info.name) : tools.get(info.name)?.definition?.outputSchema);
  return {
    name: info.name,
    label: info.name,
    description: info.description,
    parameters: info.parameters,
    ...(outputSchema !== undefined ? { outputSchema } : {}),
  };
}

/** Pi's `_applyToolLoadout` hooks: each declared tool whose definition has `prepareLoadout`
 * (in declaration order) is given the loadout (`declared`: the names declared; `registered`:
 * every registered tool as `pi.getAllTools()` describes it, in registry order) and may change
 * declared descriptions and hide declarations. A hook that throws is reported under its
 * extension's path at `prepare_loadout`, as Pi's runner reports it, and changes nothing. */
export function prepareLoadout(request) {
  const registered = (request.registered ?? []).map((info) => ({ info, tool: toolObject(info) }));
  const byName = new Map(registered.map((entry) => [entry.info.name, entry]));
  const exposure = (name) => byName.get(name)?.info.exposure ?? "direct";
  const declaredNames = new Set(request.declared ?? []);
  const declared = (request.declared ?? []).flatMap((name) => (byName.has(name) ? [byName.get(name).tool] : []));
  const callable = registered
    .filter(({ info }) => {
      const e = exposure(info.name);
      return e === "codemode" || e === "deferred" || (e === "direct" && declaredNames.has(info.name));
    })
    .map(({ tool }) => tool);
  const loadout = {
    declared,
    callable,
    registered: registered.map(({ tool }) => tool),
    getExposure: exposure,
    getNamespace: (name) => byName.get(name)?.info.namespace,
    getPromptGuidelines: (name) => byName.get(name)?.info.promptGuidelines ?? [],
  };
  const descriptions = {};
  const hidden = [];
  const errors = [];
  for (const tool of declared) {
    const hook = tools.get(tool.name);
    if (typeof hook?.definition.prepareLoadout !== "function") continue;
    try {
      const changes = hook.definition.prepareLoadout(loadout);
      for (const [name, description] of Object.entries(changes?.descriptions ?? {})) descriptions[name] = description;
      for (const name of changes?.hiddenDeclarations ?? []) if (!hidden.includes(name)) hidden.push(name);
    } catch (error) {
      errors.push({
        error: error instanceof Error ? error.message : String(error),
        extensionPath: loaded.extensions[hook.owner]?.path,
      });
    }
  }
  return plain({ descriptions, hiddenDeclarations: hidden, errors });
}
