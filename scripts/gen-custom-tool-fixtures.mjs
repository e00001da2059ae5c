// Writes what Pi 1.5.2's SDK makes of custom tools (`createAgentSession({ customTools })`): the
// active tools in order with what the agent loop declares of each, and the system prompt's
// `tools` and `rules` sections, for custom tools beside the default built-ins, one named as a
// built-in (which replaces it), one without a snippet, and snippets and guidelines that need
// normalizing, under each tool selection (`tools`, `noTools`, `excludeTools`)
// (core/tests/fixtures/custom_tool_cases.json). Nothing is sent to a model.
//
//   node scripts/gen-custom-tool-fixtures.mjs <pi 1.5.2 install dir> <out file>
//
// Run it with the Node of the install (<dir>/node/bin/node).
import fs from "fs";
import os from "os";
import path from "path";

const [piDir, out] = process.argv.slice(2);
const dist = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const pi = await import(path.join(dist, "bundle/index.js"));

const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-custom-tools-"));
const object = (properties, required) => ({ type: "object", properties, required });
const execute = async () => ({ content: [{ type: "text", text: "unused" }], details: {} });
const customTools = [
  { name: "lookup", label: "Look up", description: "Looks a word up in the dictionary.",
    promptSnippet: "  Look a word\n up \t in the dictionary ",
    promptGuidelines: [" Use lookup for words you do not know. ", "", "Use lookup for words you do not know."],
    parameters: object({ word: { type: "string" } }, ["word"]),
    constrainedSampling: { type: "json_schema", strict: "prefer" }, executionMode: "sequential", execute },
  { name: "read", label: "Read (sandboxed)", description: "Reads a file of the workspace.",
    promptSnippet: "Read workspace files", promptGuidelines: ["Read only inside the workspace."],
    parameters: object({ path: { type: "string" } }, ["path"]), execute },
  { name: "silent", label: "silent", description: "A tool with no snippet.",
    parameters: object({}, []), constrainedSampling: false, execute },
];
const modelRuntime = await pi.ModelRuntime.create({
  authPath: path.join(agentDir, "auth.json"), modelsPath: path.join(agentDir, "models.json"),
});
const resourceLoader = {
  getExtensions: () => ({ extensions: [], errors: [], runtime: pi.createExtensionRuntime() }),
  getSkills: () => ({ skills: [], diagnostics: [] }),
  getPrompts: () => ({ prompts: [], diagnostics: [] }),
  getThemes: () => ({ themes: [], diagnostics: [] }),
  getAgentsFiles: () => ({ agentsFiles: [] }),
  getSystemPrompt: () => undefined,
  getSystemPromptSource: () => undefined,
  getAppendSystemPrompt: () => [],
  getAppendSystemPromptSources: () => [],
  extendResources: () => {},
  reload: async () => {},
};
const cases = [];
// The SDK's tool options (`tools` as names, patterns or +/- modifiers, `noTools`, `excludeTools`)
// apply to the custom tools as to the built-ins.
const selections = [
  ["default tools", {}],
  ["read and bash", { tools: ["read", "bash", ...customTools.map((t) => t.name)] }],
  ["an allow-list without the custom tools", { tools: ["read", "bash"] }],
  ["an allow-list naming one custom tool first", { tools: ["lookup", "grep"] }],
  ["an allow-list pattern", { tools: ["l*", "s*", "b*"] }],
  ["modifiers", { tools: ["+grep", "-bash"] }],
  ["a custom tool excluded", { excludeTools: ["lookup"] }],
  ["the built-in a custom tool replaces excluded", { excludeTools: ["read"] }],
  ["an exclusion pattern", { tools: ["read", "lookup", "silent"], excludeTools: ["s*"] }],
  ["no built-in tools", { noTools: "builtin" }],
  ["no tools at all", { noTools: "all" }],
  ["no tools at all but an allow-list", { noTools: "all", tools: ["silent", "ls"] }],
  ["no tools at all with modifiers", { noTools: "all", tools: ["+lookup", "+find"] }],
];
for (const [label, selection] of selections) {
  const { session } = await pi.createAgentSession({
    cwd: "/work", agentDir, modelRuntime, resourceLoader, customTools, ...selection,
    sessionManager: pi.SessionManager.inMemory("/work"),
    settingsManager: pi.SettingsManager.inMemory({}),
  });
  const section = (name) => session.systemPrompt.match(new RegExp(`<${name}>\\n[^]*?\\n</${name}>`))?.[0];
  cases.push({
    label,
    selection,
    active: session.getActiveToolNames(),
    declared: session.agent.state.tools.map((t) => ({
      name: t.name, description: t.description, parameters: t.parameters,
      constrainedSampling: t.constrainedSampling ?? null, executionMode: t.executionMode ?? null,
    })),
    tools: section("tools"), rules: section("rules"),
  });
  session.dispose();
}
fs.writeFileSync(out, JSON.stringify({ customTools: customTools.map(({ execute: _, ...t }) => t), cases }, null, 2) + "\n");
fs.rmSync(agentDir, { recursive: true, force: true });
