// Writes the Messages API request bodies the original's pi-ai builds for a set of contexts and options
// (providers/tests/fixtures/anthropic-bodies.json). Nothing is sent: the body is taken from the
// payload hook, which then stops the call.
//
//   node scripts/gen-anthropic-body-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { streamSimple } = await original(piDir).bundled("streamSimple", "getModels");

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const model = (over = {}) => ({
  id: "claude-sonnet-4-5", name: "Claude", api: "anthropic-messages", provider: "anthropic",
  baseUrl: "http://127.0.0.1:1", reasoning: true, input: ["text", "image"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000,
  maxTokens: 64000, ...over,
});
const assistant = (content, over = {}) => ({ role: "assistant", content, api: "anthropic-messages",
  provider: "anthropic", model: "claude-sonnet-4-5", usage, stopReason: "toolUse", timestamp: 2, ...over });
const user = (content) => ({ role: "user", content, timestamp: 1 });
const result = (toolCallId, content, isError = false) => ({ role: "toolResult", toolCallId,
  toolName: "read", content, isError, timestamp: 3 });
const img = { type: "image", data: "aGk=", mimeType: "image/png" };
const tools = [
  { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
  { name: "bash", description: "Run", parameters: { type: "object", properties: { command: { type: "string" } } } },
  { name: "custom_tool", description: "Mine", parameters: { type: "object" } },
];
const history = [
  user("Look at these"),
  assistant([
    { type: "thinking", thinking: "signed thought", thinkingSignature: "sig-1" },
    { type: "thinking", thinking: "unsigned thought" },
    { type: "thinking", thinking: "   ", thinkingSignature: "sig-2" },
    { type: "thinking", thinking: "", thinkingSignature: "opaque", redacted: true },
    { type: "text", text: "  " },
    { type: "text", text: "Reading." },
    { type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a.txt" } },
    { type: "toolCall", id: "toolu_2", name: "bash", arguments: { command: "ls" } },
    { type: "toolCall", id: "toolu_3", name: "custom_tool", arguments: {} },
  ]),
  result("toolu_1", [{ type: "text", text: "line 1" }, { type: "text", text: "line 2" }]),
  result("toolu_2", [img, { type: "text", text: "with image" }], true),
  result("toolu_3", [img]),
  user([{ type: "text", text: "and" }, { type: "text", text: " " }, img]),
];
const cases = [
  { name: "history-budget-thinking", model: model(), context: { systemPrompt: "Be brief.", messages: history, tools }, options: { reasoning: "high" } },
  { name: "adaptive-effort-mapped", model: model({ id: "claude-opus-4-6", thinkingLevelMap: { xhigh: "max" } }), context: { systemPrompt: "S", messages: [user("hi")], tools }, options: { reasoning: "xhigh", temperature: 0.5 } },
  { name: "adaptive-effort-default", model: model({ id: "claude-sonnet-4-6" }), context: { systemPrompt: "S", messages: [user("hi")] }, options: { reasoning: "minimal" } },
  { name: "thinking-off", model: model(), context: { systemPrompt: "S", messages: [user("hi")], tools }, options: { temperature: 0.2, cacheRetention: "none" } },
  { name: "oauth-identity-and-tool-names", model: model(), context: { systemPrompt: "S", messages: history, tools }, options: { apiKey: "sk-ant-oat01-abc", cacheRetention: "long" } },
  { name: "oauth-no-system-prompt", model: model(), context: { messages: [user("hi")] }, options: { apiKey: "sk-ant-oat01-abc" } },
  { name: "compat-no-eager-no-long-cache", model: model({ reasoning: false, compat: { supportsEagerToolInputStreaming: false, supportsLongCacheRetention: false } }), context: { systemPrompt: "S", messages: [user("hi")], tools }, options: { cacheRetention: "long" } },
  { name: "long-cache", model: model({ reasoning: false }), context: { systemPrompt: "S", messages: [user("hi")], tools }, options: { cacheRetention: "long" } },
  { name: "explicit-max-tokens-low", model: model({ maxTokens: 4096 }), context: { systemPrompt: "S", messages: [user("hi")] }, options: { reasoning: "low", maxTokens: 1000 } },
  { name: "custom-budget", model: model({ maxTokens: 64000 }), context: { systemPrompt: "S", messages: [user("hi")] }, options: { reasoning: "xhigh", thinkingBudgets: { high: 3000, low: 5 } } },
  { name: "small-model-budget-shrinks", model: model({ maxTokens: 1500 }), context: { systemPrompt: "S", messages: [user("hi")] }, options: { reasoning: "medium" } },
  { name: "non-reasoning-model", model: model({ reasoning: false, input: ["text"] }), context: { systemPrompt: "", messages: [
      user("   "),
      user("first"),
      assistant([{ type: "thinking", thinking: "other model thought", thinkingSignature: "x" }, { type: "toolCall", id: "call|abc/def+ghi", name: "read", arguments: { path: "b" } }], { provider: "openai", api: "openai-responses", model: "gpt-5" }),
      result("call|abc/def+ghi", [img, { type: "text", text: "txt" }]),
      user([img]),
      user("last as string"),
    ] }, options: { temperature: 0 } },
  { name: "orphan-tool-call", model: model({ reasoning: false }), context: { systemPrompt: "S", messages: [
      user("go"), assistant([{ type: "toolCall", id: "toolu_9", name: "read", arguments: { path: "x" } }]), user("never mind"),
    ] }, options: {} },
];
const fixtures = [];
for (const c of cases) {
  let body;
  const stream = streamSimple(c.model, c.context, {
    apiKey: "key", ...c.options,
    onPayload: (params) => { body = params; throw new Error("captured"); },
  });
  await stream.result();
  if (!body) throw new Error(`${c.name}: no payload`);
  fixtures.push({ ...c, body });
}
fs.writeFileSync(out, JSON.stringify(fixtures, null, 1) + "\n");
console.log(`${fixtures.length} bodies -> ${out}`);
