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

/** Schema keywords whose values are data (a `$ref` key there is no reference), and those whose
 * values map names to schemas (their keys are names, not keywords). */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);
const NAMED_SCHEMA_KEYWORDS = new Set(["properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"]);

/** `schema` placed at the JSON pointer `at` of another schema: each local `$ref` (`#`,
 * `#/$defs/x`) is rewritten to point below `at`, so that it names the same subschema there. */
function placedAt(schema, at) {
  if (Array.isArray(schema)) return schema.map((item) => placedAt(item, at));
  if (schema === null || typeof schema !== "object") return schema;
  const placed = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref" && typeof value === "string" && (value === "#" || value.startsWith("#/"))) {
      placed[key] = at + value.slice(1);
    } else if (DATA_KEYWORDS.has(key)) {
      placed[key] = value;
    } else if (NAMED_SCHEMA_KEYWORDS.has(key) && value !== null && typeof value === "object" && !Array.isArray(value)) {
      placed[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, placedAt(sub, at)]));
    } else {
      placed[key] = placedAt(value, at);
    }
  }
  return placed;
}

/** What a script's call of an MCP tool resolves to (Pi's MCP tools declare it): the server's
 * `CallToolResult` without `_meta`, with the tool's own output schema (`declared`, as the
 * session gives it) under `structuredContent`, where any value stands without one. */
function mcpResultSchema(declared) {
  return {
    type: "object",
    properties: {
      content: {
        type: "array",
        items: {
          type: "object",
          properties: {
            type: { enum: ["text", "image", "audio", "resource_link", "resource"] },
            text: { type: "string" },
            data: { type: "string" },
            mimeType: { type: "string" },
          },
          required: ["type"],
          additionalProperties: true,
        },
      },
      structuredContent: declared ? placedAt(declared, "#/properties/structuredContent") : {},
      isError: { type: "boolean" },
    },
    required: ["content"],
    additionalProperties: true,
  };
}

/** The tool object Pi's registry holds for the tool `info` describes (`pi.getAllTools()`'s
 * entry, with the output schema the session gives an MCP tool): its declaration, with the
 * output schema of the definition that registered it (a built-in's, an extension's, or Pi's
 * MCP tools' result). */
export function toolObject(info) {
  const builtin = info.sourceInfo?.source === "builtin" && builtinOutputSchemas.has(info.name);
  const definition = tools.get(info.name)?.definition;
  const mcp = !definition && info.sourceInfo?.path === "builtin:mcp";
  const outputSchema = builtin
    ? builtinOutputSchemas.get(info.name)
    : mcp
      ? mcpResultSchema(info.outputSchema)
      : definition?.outputSchema;
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
