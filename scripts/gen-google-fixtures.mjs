// Writes what the original's pi-ai does over the Google Generative AI API (providers/tests/fixtures/
// google.json): the HTTP requests (path, headers, body) the Google SDK sends for a set of contexts
// and options, and the events and final message pi-ai makes of a set of responses. A local HTTP
// server started here records each request and answers it with the case's response.
//
//   node scripts/gen-google-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import http from "http";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { streamSimple } = await original(piDir).bundled("streamSimple", "getModels");

let response = { status: 200, type: "text/event-stream", body: "" };
let recorded;
const server = http.createServer((req, res) => {
  let data = "";
  req.on("data", (c) => (data += c));
  req.on("end", () => {
    recorded = { method: req.method, url: req.url, headers: req.headers, body: JSON.parse(data || "null") };
    res.writeHead(response.status, { "content-type": response.type });
    res.end(response.body);
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const baseUrl = `http://127.0.0.1:${server.address().port}/v1beta`;

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const model = (over = {}) => ({
  id: "gemini-2.5-flash", name: "Gemini", api: "google-generative-ai", provider: "google", baseUrl,
  reasoning: true, input: ["text", "image"], cost: { input: 0.3, output: 2.5, cacheRead: 0.075, cacheWrite: 0 },
  contextWindow: 1048576, maxTokens: 65536, ...over,
});
const assistant = (content, over = {}) => ({ role: "assistant", content, api: "google-generative-ai",
  provider: "google", model: "gemini-2.5-flash", usage, stopReason: "toolUse", timestamp: 2, ...over });
const user = (content) => ({ role: "user", content, timestamp: 1 });
const result = (toolCallId, toolName, content, isError = false) => ({ role: "toolResult", toolCallId, toolName, content, isError, timestamp: 3 });
const img = { type: "image", data: "aGk=", mimeType: "image/png" };
const tools = [
  { name: "read", description: "Read a file", parameters: { $schema: "x", type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
  { name: "ls", description: "List", parameters: { type: "object", properties: {} } },
];
const history = [
  user("Look"),
  assistant([
    { type: "thinking", thinking: "Hmm.", thinkingSignature: "c2lnMQ==" },
    { type: "thinking", thinking: "bad sig", thinkingSignature: "not base64!" },
    { type: "thinking", thinking: "  " },
    { type: "text", text: "Reading.", textSignature: "dGV4dA==" },
    { type: "text", text: " " },
    { type: "toolCall", id: "read_1", name: "read", arguments: { path: "a" }, thoughtSignature: "Zm4=" },
    { type: "toolCall", id: "ls_2", name: "ls", arguments: {} },
  ]),
  result("read_1", "read", [{ type: "text", text: "one" }, { type: "text", text: "two" }]),
  result("ls_2", "ls", [img], true),
  user([{ type: "text", text: "also" }, img]),
  assistant([{ type: "thinking", thinking: "foreign", thinkingSignature: "c2ln" }, { type: "text", text: "hi", textSignature: "c2ln" },
    { type: "toolCall", id: "call/1", name: "read", arguments: { path: "b" }, thoughtSignature: "c2ln" }], { provider: "openai", api: "openai-completions", model: "gpt" }),
  result("call/1", "read", [{ type: "text", text: "" }]),
  user([]),
];
const bodyCases = [
  { name: "history-budget-thinking", model: model(), context: { systemPrompt: "Be brief.", messages: history, tools }, options: { reasoning: "medium", temperature: 0.5 } },
  { name: "thinking-off", model: model(), context: { messages: [user("hi")] }, options: {} },
  { name: "gemini-3-pro-levels", model: model({ id: "gemini-3-pro-preview" }), context: { messages: [user("hi")] }, options: { reasoning: "minimal" } },
  { name: "gemini-3-pro-off", model: model({ id: "gemini-3-pro-preview" }), context: { messages: [user("hi")] }, options: {} },
  { name: "gemini-3-flash-high", model: model({ id: "gemini-3-flash-preview" }), context: { messages: [user("hi")] }, options: { reasoning: "high" } },
  { name: "gemini-3-flash-off", model: model({ id: "gemini-3-flash-preview" }), context: { messages: [user("hi")] }, options: {} },
  { name: "gemma-4-low", model: model({ id: "gemma-4-27b-it" }), context: { messages: [user("hi")] }, options: { reasoning: "low" } },
  { name: "pro-budget", model: model({ id: "gemini-2.5-pro" }), context: { messages: [user("hi")] }, options: { reasoning: "high", maxTokens: 1000 } },
  { name: "custom-budget", model: model(), context: { messages: [user("hi")] }, options: { reasoning: "high", thinkingBudgets: { high: 777 } } },
  { name: "flash-lite-budget", model: model({ id: "gemini-2.5-flash-lite" }), context: { messages: [user("hi")] }, options: { reasoning: "minimal" } },
  { name: "unknown-model-budget", model: model({ id: "my-gemini" }), context: { messages: [user("hi")] }, options: { reasoning: "xhigh" } },
  { name: "non-reasoning", model: model({ reasoning: false, input: ["text"], headers: { "X-Model": "m" } }), context: { systemPrompt: "S", messages: history, tools }, options: { reasoning: "high" } },
  { name: "gemini-2-images-separate", model: model({ id: "gemini-2.0-flash", reasoning: false }), context: { messages: history }, options: {} },
  { name: "claude-on-google-ids", model: model({ id: "claude-sonnet-4", reasoning: false }), context: { messages: history }, options: {} },
];
const sse = (chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("");
const cand = (parts, finishReason, extra = {}) => ({ candidates: [{ content: { role: "model", parts }, ...(finishReason ? { finishReason } : {}), index: 0 }], ...extra });
const meta = { usageMetadata: { promptTokenCount: 100, cachedContentTokenCount: 10, candidatesTokenCount: 20, thoughtsTokenCount: 5, totalTokenCount: 125 } };
const streams = [
  { name: "thinking-text", body: sse([
    { ...cand([{ text: "Let me ", thought: true }]), responseId: "r1" },
    cand([{ text: "see.", thought: true, thoughtSignature: "c2ln" }]),
    cand([{ text: "Hello" }]),
    cand([{ text: " world", thoughtSignature: "dA==" }, { text: "", thoughtSignature: "" }]),
    { ...cand([], "STOP"), ...meta, responseId: "r2" },
  ]) },
  { name: "tool-calls", body: sse([
    cand([{ text: "Reading." }]),
    cand([{ functionCall: { name: "read", args: { path: "a" }, id: "fc1" }, thoughtSignature: "Zm4=" }, { functionCall: { name: "ls", args: {}, id: "fc1" } }, { functionCall: { name: "read" } }], "STOP"),
    meta,
  ]) },
  { name: "max-tokens", body: sse([cand([{ text: "cut" }], "MAX_TOKENS"), meta]) },
  { name: "safety", body: sse([cand([{ text: "no" }], "SAFETY")]) },
  { name: "unknown-finish", body: sse([cand([{ text: "x" }], "NEW_REASON")]) },
  { name: "no-candidates", body: sse([meta]) },
  { name: "incomplete-tail", body: sse([cand([{ text: "a" }])]) + "data: {\"candidates\": [" },
  { name: "bad-json", body: "data: {nope}\n\n" },
  { name: "lf-delimiters", body: `data: ${JSON.stringify(cand([{ text: "lf" }], "STOP"))}\n\n` },
  { name: "error-object-in-ok-stream", body: JSON.stringify({ error: { code: 429, message: "Quota exceeded", status: "RESOURCE_EXHAUSTED" } }) },
  { name: "http-error-json", status: 400, type: "application/json", body: JSON.stringify({ error: { code: 400, message: "API key not valid.", status: "INVALID_ARGUMENT" } }) },
  { name: "http-error-text", status: 503, type: "text/plain", body: "overloaded" },
];

const bodies = [];
for (const c of bodyCases) {
  response = { status: 200, type: "text/event-stream", body: sse([cand([{ text: "ok" }], "STOP")]) };
  recorded = undefined;
  await streamSimple(c.model, c.context, { apiKey: "gkey", ...c.options }).result();
  const headers = Object.fromEntries(Object.entries(recorded.headers).filter(([k]) => ["x-goog-api-key", "content-type", "x-model"].includes(k)));
  bodies.push({ ...c, model: { ...c.model, baseUrl: "http://127.0.0.1:1/v1beta" }, request: { method: recorded.method, url: recorded.url, headers, body: recorded.body } });
}
const decoded = [];
for (const s of streams) {
  response = { status: s.status ?? 200, type: s.type ?? "text/event-stream", body: s.body };
  const events = [];
  let final;
  for await (const e of streamSimple(model(), { messages: [user("hi")] }, { apiKey: "gkey" })) {
    if (e.type === "done") final = e.message;
    else if (e.type === "error") final = e.error;
    else if (e.type !== "start") events.push({ type: e.type, contentIndex: e.contentIndex, delta: e.delta, content: e.content, toolCall: e.toolCall });
  }
  const message = JSON.parse(JSON.stringify(final));
  delete message.timestamp;
  delete message.role;
  // Pi 1.5's time from the request to the end of the stream: the agent loop's figure, not the
  // decoder's, and different on every run.
  delete message.durationMs;
  decoded.push({ ...s, events: JSON.parse(JSON.stringify(events)), message });
}
server.close();
fs.writeFileSync(out, JSON.stringify({ bodies, streams: decoded }, null, 1) + "\n");
console.log(`${bodies.length} requests, ${decoded.length} streams -> ${out}`);
