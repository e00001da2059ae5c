// Writes the `tools` that Pi 1.5.2's pi-ai sends for the seven built-in tools and two made-up
// ones (JSON-schema keywords Anthropic's strict mode does and does not take) over the Chat
// Completions and Responses APIs, with and without the model's `compat.supportsStrictMode`;
// over Anthropic's Messages API with and without `compat.supportsStrictTools`; and over
// Google's API for a Gemini 2 and a Gemini 3 model, which alone gets strict declarations
// (providers/tests/fixtures/strict-tools.json). The bodies are taken from the payload hook,
// nothing is sent.
//
//   node scripts/gen-strict-tools-fixtures.mjs <pi 1.5.2 install dir> <out file>
//
// Run it with the Node of the install (<dir>/node/bin/node). pi-ai is only inlined in the
// bundle: each API's chunk exports its streamSimple.
import fs from "fs";
import path from "path";
import { pathToFileURL } from "url";

const [piDir, out] = process.argv.slice(2);
const dist = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const chunks = path.join(dist, "bundle/chunks");
const chunk = (prefix) => {
  const name = fs.readdirSync(chunks).find((n) => n.startsWith(prefix) && n.endsWith(".js"));
  if (!name) throw new Error(`no bundle chunk ${prefix}*`);
  return import(pathToFileURL(path.join(chunks, name)).href);
};
const bundle = await import(path.join(dist, "bundle/index.js"));
const names = { read: "Read", bash: "Bash", edit: "Edit", write: "Write", grep: "Grep", find: "Find", ls: "Ls" };
const tools = Object.entries(names).map(([, typeName]) => {
  const d = bundle[`create${typeName}ToolDefinition`]("/cwd");
  return { name: d.name, description: d.description, parameters: d.parameters, constrainedSampling: d.constrainedSampling };
});
const prefer = { type: "json_schema", strict: "prefer" };
tools.push(
  { name: "schedule", description: "Keywords Anthropic's strict mode takes", constrainedSampling: prefer,
    parameters: { type: "object", properties: { when: { type: "string", format: "date-time" },
      tags: { type: "array", items: { type: "string" }, minItems: 1 } }, required: ["when"] } },
  { name: "bounded", description: "Keywords Anthropic's strict mode refuses", constrainedSampling: prefer,
    parameters: { type: "object", properties: { count: { type: "integer", minimum: 1 },
      pattern: { type: "string", format: "regex" } }, required: ["count"] } },
);
const model = (api, compat) => ({
  id: "mock-model", name: "Mock", api, provider: "mock", baseUrl: "http://127.0.0.1:9/v1",
  reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000, maxTokens: 16384, ...(compat ? { compat } : {}),
});
// 1.5.2 sends the tools the transcript's system message declares.
const system = { role: "system", content: "", sections: { preamble: "You help." }, toolsAdded: tools, timestamp: 0 };
const context = { messages: [system, { role: "user", content: "hi", timestamp: 0 }] };
const cases = [];
for (const [api, prefix] of [["openai-completions", "openai-completions-"], ["openai-responses", "openai-responses-"]]) {
  const { streamSimple } = await chunk(prefix);
  for (const compat of [undefined, { supportsStrictMode: true }, { supportsStrictMode: false }]) {
    let body;
    const stream = streamSimple(model(api, compat), context, { apiKey: "key",
      onPayload: (params) => { body = params; throw new Error("captured"); } });
    await stream.result();
    if (!body) throw new Error(`${api}: no payload`);
    cases.push({ api, compat: compat ?? null, sent: body.tools });
  }
}
{
  const { streamSimple } = await chunk("anthropic-messages-");
  for (const compat of [undefined, { supportsStrictTools: true }, { supportsStrictTools: false }]) {
    let body;
    const stream = streamSimple(model("anthropic-messages", compat), context, { apiKey: "key",
      onPayload: (params) => { body = params; throw new Error("captured"); } });
    await stream.result();
    if (!body) throw new Error("anthropic-messages: no payload");
    cases.push({ api: "anthropic-messages", compat: compat ?? null, sent: body.tools });
  }
}
{
  const { streamSimple } = await chunk("google-generative-ai-");
  for (const id of ["gemini-2.5-flash", "gemini-3-pro-preview"]) {
    let body;
    const stream = streamSimple({ ...model("google-generative-ai"), id }, context, { apiKey: "key",
      onPayload: (params) => { body = params; throw new Error("captured"); } });
    await stream.result();
    if (!body) throw new Error("google-generative-ai: no payload");
    cases.push({ api: "google-generative-ai", model: id, compat: null,
      sent: body.config.tools, toolConfig: body.config.toolConfig ?? null });
  }
}
fs.writeFileSync(out, JSON.stringify({ tools, cases }, null, 1) + "\n");
console.log(`${cases.length} cases`);
