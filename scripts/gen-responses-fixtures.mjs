// Writes what the original's pi-ai does over the OpenAI Responses API (providers/tests/fixtures/
// responses.json): the request bodies it builds for a set of contexts and options (taken from the
// payload hook, nothing sent), and the events and final message it makes of a set of response
// streams, which a local HTTP server started here serves to it byte for byte.
//
//   node scripts/gen-responses-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import http from "http";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { streamSimple } = await original(piDir).bundled("streamSimple", "getModels");

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const model = (over = {}) => ({
  id: "gpt-5-mini", name: "GPT", api: "openai-responses", provider: "openai",
  baseUrl: "http://127.0.0.1:1/v1", reasoning: true, input: ["text", "image"],
  cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 }, contextWindow: 400000,
  maxTokens: 128000, ...over,
});
const assistant = (content, over = {}) => ({ role: "assistant", content, api: "openai-responses",
  provider: "openai", model: "gpt-5-mini", usage, stopReason: "toolUse", timestamp: 2, ...over });
const user = (content) => ({ role: "user", content, timestamp: 1 });
const result = (toolCallId, content, isError = false) => ({ role: "toolResult", toolCallId,
  toolName: "read", content, isError, timestamp: 3 });
const img = { type: "image", data: "aGk=", mimeType: "image/png" };
const tools = [
  { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
];
const reasoningItem = { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Thinking." }], encrypted_content: "enc" };
const longId = "x".repeat(70);
const history = [
  user("Look"),
  assistant([
    { type: "thinking", thinking: "Thinking.", thinkingSignature: JSON.stringify(reasoningItem) },
    { type: "thinking", thinking: "no signature" },
    { type: "text", text: "Sure.", textSignature: JSON.stringify({ v: 1, id: "msg_abc", phase: "commentary" }) },
    { type: "text", text: "Legacy.", textSignature: "msg_legacy" },
    { type: "text", text: "Long.", textSignature: longId },
    { type: "text", text: "Unsigned." },
    { type: "toolCall", id: "call_1|fc_1", name: "read", arguments: { path: "a.txt", n: 1 } },
  ]),
  result("call_1|fc_1", [{ type: "text", text: "one" }, { type: "text", text: "two" }]),
  user([{ type: "text", text: "and this" }, img]),
  assistant([{ type: "toolCall", id: "call_2|fc_2", name: "read", arguments: { path: "b" } }], { model: "gpt-5" }),
  result("call_2|fc_2", [img, { type: "text", text: "pic" }]),
  assistant([{ type: "toolCall", id: "toolu_01ABC/x", name: "read", arguments: {} }], { provider: "anthropic", api: "anthropic-messages", model: "claude" }),
  result("toolu_01ABC/x", [img]),
  assistant([{ type: "toolCall", id: "call_9|item/with+chars_", name: "read", arguments: {} }], { provider: "openrouter", api: "openai-completions", model: "x" }),
  result("call_9|item/with+chars_", [{ type: "text", text: "ok" }]),
  user([]),
];
const grammarTools = [
  tools[0],
  { name: "apply_patch", description: "Apply a patch", parameters: { type: "object", properties: { patch: { type: "string" } }, required: ["patch"] },
    constrainedSampling: { type: "grammar", variants: { openai_lark: "start: /.+/s", openai_regex: "ignored" } } },
  { name: "stamp", description: "Stamp", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    constrainedSampling: { type: "grammar", variants: { openai_regex: "[a-z]+" } } },
];
const grammarHistory = [
  user("patch it"),
  assistant([{ type: "toolCall", id: "call_7|ctc_7", name: "apply_patch", arguments: { patch: "*** Begin\n\"x\"" } },
    { type: "toolCall", id: "call_8|fc_8", name: "read", arguments: { path: "a" } }]),
  { ...result("call_7|ctc_7", [{ type: "text", text: "patched" }]), toolName: "apply_patch" },
  result("call_8|fc_8", [{ type: "text", text: "read" }]),
  assistant([{ type: "toolCall", id: "call_9|ctc_9", name: "stamp", arguments: { text: "ok" } }], { model: "gpt-5" }),
  { ...result("call_9|ctc_9", [{ type: "text", text: "stamped" }]), toolName: "stamp" },
];
const effortCompat = { supportsMidConvoEffort: true };
const effortHistory = [
  user("one"),
  assistant([{ type: "text", text: "One" }], { stopReason: "stop", providerThinkingLevel: "low" }),
  user("two"),
  assistant([{ type: "text", text: "Two" }], { stopReason: "stop", providerThinkingLevel: "whatever" }),
  user("three"),
  assistant([{ type: "text", text: "Three" }], { stopReason: "stop", model: "gpt-5", providerThinkingLevel: "high" }),
  user("four"),
  assistant([], { stopReason: "stop", providerThinkingLevel: "high" }),
  user("five"),
  assistant([{ type: "text", text: "Five" }], { stopReason: "stop" }),
  user("six"),
];
// Pi 1.5's system messages in the transcript (no `systemPrompt`/`tools`): a changed prompt, a
// tool added, one removed and one added again. Without `compat.supportsMidConvoSystemMessages`
// they are folded into one leading message; with it each stays in place, its tool changes going
// as `additional_tools` (`supportsAdditionalTools`), as client tool-search items
// (`supportsToolSearch`), or into the request's tools.
const system = (over) => ({ role: "system", content: "", timestamp: 1, ...over });
const lsTool = { name: "ls", description: "List", parameters: { type: "object", properties: { path: { type: "string" } } } };
const writeTool = { name: "write", description: "Write", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
const midHistory = [
  system({ sections: { preamble: "Be brief.", cwd: "cwd: /a" }, toolsAdded: tools }),
  user("one"),
  assistant([{ type: "text", text: "One" }], { stopReason: "stop" }),
  system({ content: "Note.", sections: { cwd: "cwd: /b", rules: null }, toolsAdded: [lsTool] }),
  user("two"),
  assistant([{ type: "toolCall", id: "call_1|fc_1", name: "ls", arguments: {} }]),
  result("call_1|fc_1", [{ type: "text", text: "x" }]),
  system({ toolsRemoved: [{ name: "ls" }, { name: "read" }], toolsAdded: [writeTool, { ...tools[0], description: "Read it" }] }),
  system({ toolsAdded: [lsTool] }),
  user("three"),
];
const additiveHistory = [
  system({ sections: { preamble: "Be brief." }, toolsAdded: tools }),
  user("one"),
  assistant([{ type: "text", text: "One" }], { stopReason: "stop" }),
  system({ toolsAdded: [lsTool] }),
  system({ sections: { preamble: "Be briefer." }, toolsAdded: [writeTool] }),
  user("two"),
];
const mid = { supportsMidConvoSystemMessages: true };
const bodyCases = [
  { name: "history-reasoning-high", model: model(), context: { systemPrompt: "Be brief.", messages: history, tools }, options: { reasoning: "high", sessionId: "sess-1" } },
  { name: "reasoning-off-default", model: model(), context: { systemPrompt: "S", messages: [user("hi")] }, options: {} },
  { name: "reasoning-off-mapped", model: model({ thinkingLevelMap: { off: "minimal", xhigh: "xhigh" } }), context: { messages: [user("hi")] }, options: { reasoning: "xhigh" } },
  { name: "reasoning-off-unsupported", model: model({ thinkingLevelMap: { off: null } }), context: { messages: [user("hi")] }, options: { temperature: 0.3 } },
  { name: "reasoning-clamped", model: model({ thinkingLevelMap: { minimal: null, low: null } }), context: { messages: [user("hi")] }, options: { reasoning: "minimal" } },
  { name: "non-reasoning-long-cache", model: model({ reasoning: false, input: ["text"] }), context: { systemPrompt: "S", messages: history, tools }, options: { cacheRetention: "long", sessionId: "s", maxTokens: 500 } },
  { name: "no-cache-no-session-key", model: model({ reasoning: false, compat: { supportsLongCacheRetention: false } }), context: { messages: [user("hi")] }, options: { cacheRetention: "none", sessionId: "s" } },
  { name: "long-cache-unsupported", model: model({ reasoning: false, compat: { supportsLongCacheRetention: false } }), context: { messages: [user("hi")] }, options: { cacheRetention: "long", sessionId: "s" } },
  { name: "other-provider-ids", model: model({ provider: "azure-openai-responses", reasoning: false }), context: { messages: history }, options: {} },
  // Grammar (custom) tools: with `compat.supportsOpenAIGrammarTools` a tool constrained by a
  // grammar goes out as a `custom` tool, its calls and results as `custom_tool_call` items.
  { name: "grammar-tools", model: model({ compat: { supportsOpenAIGrammarTools: true } }), context: { messages: grammarHistory, tools: grammarTools }, options: {} },
  { name: "grammar-tools-unsupported", model: model(), context: { messages: grammarHistory, tools: grammarTools }, options: {} },
  // Mid-conversation effort (`compat.supportsMidConvoEffort`): the request asks for "medium" and
  // the level goes as a trailing `configuration_update` item, each earlier answer of the same
  // model that recorded a level preceded by one with it.
  { name: "system-messages-folded", model: model(), context: { messages: midHistory }, options: {} },
  { name: "system-messages-folded-tool-search", model: model({ compat: { supportsToolSearch: true, supportsAdditionalTools: true } }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-mid-convo", model: model({ compat: mid }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-additional-tools", model: model({ compat: { ...mid, supportsAdditionalTools: true } }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-additional-tools-system-role", model: model({ reasoning: false, compat: { ...mid, supportsAdditionalTools: true, supportsStrictMode: true } }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-developer-role-unsupported", model: model({ compat: { ...mid, supportsDeveloperRole: false } }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-tool-search", model: model({ compat: { ...mid, supportsToolSearch: true } }), context: { messages: midHistory }, options: {} },
  { name: "system-messages-tool-search-additive", model: model({ compat: { ...mid, supportsToolSearch: true } }), context: { messages: additiveHistory }, options: {} },
  { name: "system-messages-additional-tools-additive", model: model({ compat: { ...mid, supportsAdditionalTools: true } }), context: { messages: additiveHistory }, options: {} },
  { name: "mid-convo-effort", model: model({ compat: effortCompat, thinkingLevelMap: { xhigh: "xhigh", high: "max" } }),
    context: { systemPrompt: "S", messages: effortHistory, tools }, options: { reasoning: "high" } },
  { name: "mid-convo-effort-unmapped", model: model({ compat: effortCompat }), context: { messages: effortHistory }, options: { reasoning: "low" } },
  { name: "mid-convo-effort-off", model: model({ compat: effortCompat }), context: { messages: effortHistory }, options: {} },
  { name: "mid-convo-effort-non-reasoning", model: model({ reasoning: false, compat: effortCompat }), context: { messages: effortHistory }, options: { reasoning: "medium" } },
  { name: "mid-convo-effort-chatgpt-sign-in", model: model({ baseUrl: "https://api.openai.com/v1", compat: effortCompat }), context: { messages: effortHistory }, options: { reasoning: "high", apiKey: "eyJ.chatgpt" } },
  { name: "mid-convo-effort-api-key", model: model({ baseUrl: "https://api.openai.com/v1", compat: effortCompat }), context: { messages: effortHistory }, options: { reasoning: "high", apiKey: "sk-proj-1" } },
];

// Grammar tools 1.5.2 refuses (`resolveGrammarConstrainedSampling`, `getGrammarToolInput`): with
// `compat.supportsOpenAIGrammarTools` the stream fails with an error message and nothing is sent.
const grammarTool = (name, parameters, variants) => ({ name, description: name, parameters,
  constrainedSampling: { type: "grammar", variants } });
const patchSchema = { type: "object", properties: { patch: { type: "string" } }, required: ["patch"] };
const lark = { openai_lark: "start: /.+/s" };
const refusalCases = [
  { name: "no-variant", tools: [tools[0], grammarTool("g", patchSchema, { openai_lark: "  ", openai_regex: 7, other: "x" })] },
  { name: "no-variants-object", tools: [grammarTool("g", patchSchema, {})] },
  { name: "schema-not-object", tools: [grammarTool("g", { type: "string" }, lark)] },
  { name: "no-required", tools: [grammarTool("g", { type: "object", properties: { patch: { type: "string" } } }, lark)] },
  { name: "two-required", tools: [grammarTool("g", { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["a", "b"] }, lark)] },
  { name: "required-not-a-string", tools: [grammarTool("g", { type: "object", properties: { a: { type: "string" } }, required: [1] }, lark)] },
  { name: "required-undeclared", tools: [grammarTool("g", { type: "object", properties: { a: { type: "string" } }, required: ["b"] }, lark)] },
  { name: "required-without-properties", tools: [grammarTool("g", { type: "object", required: ["b"] }, lark)] },
  { name: "property-not-string", tools: [grammarTool("g", { type: "object", properties: { a: { type: "number" } }, required: ["a"] }, lark)] },
  { name: "property-without-type", tools: [grammarTool("g", { type: "object", properties: { a: {} }, required: ["a"] }, lark)] },
  { name: "first-refused-tool-named", tools: [grammarTool("first", { type: "string" }, lark), grammarTool("second", patchSchema, {})] },
  { name: "history-call-not-a-string", tools: grammarTools, messages: [user("patch it"),
    assistant([{ type: "toolCall", id: "call_7|ctc_7", name: "apply_patch", arguments: { patch: 5 } }]),
    { ...result("call_7|ctc_7", [{ type: "text", text: "patched" }]), toolName: "apply_patch" }] },
  { name: "history-call-missing-property", tools: grammarTools, messages: [user("patch it"),
    assistant([{ type: "toolCall", id: "call_7|ctc_7", name: "stamp", arguments: {} }], { model: "other" }),
    { ...result("call_7|ctc_7", [{ type: "text", text: "stamped" }]), toolName: "stamp" }] },
  // Not refused: a failed answer's calls are not sent; without the compat the tool is a function.
  { name: "history-failed-answer-not-checked", tools: grammarTools, messages: [user("patch it"),
    assistant([{ type: "toolCall", id: "call_7|ctc_7", name: "apply_patch", arguments: { patch: 5 } }], { stopReason: "error", errorMessage: "x" }),
    user("again")] },
  { name: "unsupported-not-refused", compat: {}, tools: [grammarTool("g", { type: "string" }, {})] },
];

const sse = (events) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
const created = { type: "response.created", response: { id: "resp_1", status: "in_progress" } };
const completed = (status, extra = {}) => ({ type: "response.completed", response: { id: "resp_1", status,
  usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 20 }, output_tokens: 30, total_tokens: 130 }, ...extra } });
const message = (id, parts, phase) => ({ type: "message", id, role: "assistant", status: "completed", content: parts, ...(phase ? { phase } : {}) });
const textStream = [
  created,
  { type: "response.output_text.delta", delta: "ignored, no item" },
  { type: "response.output_item.added", item: message("msg_1", []) },
  { type: "response.output_text.delta", delta: "ignored, no part" },
  { type: "response.content_part.added", part: { type: "output_text", text: "" } },
  { type: "response.output_text.delta", delta: "Hel" },
  { type: "response.output_text.delta", delta: "lo" },
  { type: "response.output_text.done", text: "Hello" },
  { type: "response.output_item.done", item: message("msg_1", [{ type: "output_text", text: "Hello!" }], "final_answer") },
  completed("completed"),
];
const toolStream = [
  created,
  { type: "response.output_item.added", item: { type: "reasoning", id: "rs_1", summary: [] } },
  { type: "response.reasoning_summary_part.added", part: { type: "summary_text", text: "" } },
  { type: "response.reasoning_summary_text.delta", delta: "Need " },
  { type: "response.reasoning_summary_text.delta", delta: "a file." },
  { type: "response.reasoning_summary_part.done", part: { type: "summary_text", text: "Need a file." } },
  { type: "response.reasoning_summary_part.added", part: { type: "summary_text", text: "" } },
  { type: "response.reasoning_summary_text.delta", delta: "Read it." },
  { type: "response.output_item.done", item: { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Need a file." }, { type: "summary_text", text: "Read it." }], encrypted_content: "ENC==" } },
  { type: "response.output_item.added", item: { type: "function_call", id: "fc_1", call_id: "call_1", name: "read", arguments: "" } },
  { type: "response.function_call_arguments.delta", delta: "{\"path\": \"a" },
  { type: "response.function_call_arguments.delta", delta: ".txt\"" },
  { type: "response.function_call_arguments.done", arguments: "{\"path\": \"a.txt\"}" },
  { type: "response.output_item.done", item: { type: "function_call", id: "fc_1", call_id: "call_1", name: "read", arguments: "{\"path\": \"a.txt\"}" } },
  completed("completed", { service_tier: "priority" }),
];
const streams = [
  { name: "text", events: textStream },
  { name: "reasoning-and-tool-call", events: toolStream },
  { name: "reasoning-text-content", events: [created,
    { type: "response.output_item.added", item: { type: "reasoning", id: "rs_2", summary: [] } },
    { type: "response.reasoning_summary_text.delta", delta: "dropped: no part" },
    { type: "response.reasoning_text.delta", delta: "raw " },
    { type: "response.reasoning_text.delta", delta: "thought" },
    { type: "response.output_item.done", item: { type: "reasoning", id: "rs_2", summary: [], content: [{ type: "reasoning_text", text: "raw thought" }, { type: "reasoning_text", text: "more" }] } },
    completed("completed", { service_tier: "flex" })] },
  { name: "refusal-incomplete", events: [created,
    { type: "response.output_item.added", item: message("msg_2", []) },
    { type: "response.content_part.added", part: { type: "refusal", refusal: "" } },
    { type: "response.refusal.delta", delta: "I can't" },
    { type: "response.output_text.delta", delta: "wrong part" },
    { type: "response.output_item.done", item: message("msg_2", [{ type: "refusal", refusal: "I can't help." }]) },
    completed("incomplete")] },
  { name: "error-event", events: [created, textStream[2], textStream[4], textStream[5], { type: "error", code: "server_error", message: "boom", param: null }] },
  { name: "error-event-without-code", events: [created, { type: "error", message: "boom" }] },
  { name: "error-event-without-message", events: [created, { type: "error", code: "server_error" }] },
  { name: "error-type-without-event-line", raw: sse([created]) + `data: ${JSON.stringify({ type: "error", code: "server_error", message: "boom" })}\n\n` },
  { name: "failed-with-error", events: [created, { type: "response.failed", response: { id: "resp_1", status: "failed", error: { code: "rate_limit_exceeded", message: "Slow down" } } }] },
  { name: "failed-incomplete", events: [created, { type: "response.failed", response: { id: "resp_1", status: "failed", error: null, incomplete_details: { reason: "max_output_tokens" } } }] },
  { name: "failed-no-details", events: [created, { type: "response.failed", response: { id: "resp_1", status: "failed" } }] },
  { name: "completed-failed-status", events: [created, completed("failed")] },
  { name: "completed-cancelled-status", events: [created, completed("cancelled")] },
  { name: "unknown-status", events: [created, completed("weird")] },
  { name: "cut-before-completed", events: textStream.slice(0, 7) },
  { name: "cut-inside-tool-call", events: toolStream.slice(0, 11) },
  { name: "top-level-error", raw: `data: ${JSON.stringify({ error: { message: "bad thing", type: "invalid_request_error" } })}\n\n` },
  { name: "top-level-error-no-message", raw: `data: ${JSON.stringify({ error: { type: "server_error", code: 500 } })}\n\n` },
  { name: "no-usage", events: [created, { type: "response.completed", response: { id: "resp_2", status: "completed" } }] },
  { name: "done-marker", raw: sse([created]) + "data: [DONE]\n\n" + sse([completed("completed")]) },
  { name: "function-call-arguments-only-in-done", events: [created,
    { type: "response.output_item.added", item: { type: "function_call", id: "fc_3", call_id: "call_3", name: "read", arguments: "" } },
    { type: "response.output_item.done", item: { type: "function_call", id: "fc_3", call_id: "call_3", name: "read", arguments: "{\"path\":\"z\"}" } },
    completed("completed")] },
  { name: "arguments-done-differs", events: [created,
    { type: "response.output_item.added", item: { type: "function_call", id: "fc_4", call_id: "call_4", name: "read", arguments: "{\"pa" } },
    { type: "response.function_call_arguments.delta", delta: "th\":" },
    { type: "response.function_call_arguments.done", arguments: "{\"other\": 1}" },
    { type: "response.output_item.done", item: { type: "function_call", id: "fc_4", call_id: "call_4", name: "read", arguments: "{\"other\": 1}" } },
    completed("completed")] },
  // Pi 1.5's usage: reasoning tokens, cache writes taken off the input.
  { name: "usage-reasoning-and-cache-write", events: [created, textStream[2], textStream[4], textStream[5],
    { type: "response.completed", response: { id: "resp_1", status: "completed", usage: { input_tokens: 100,
      input_tokens_details: { cached_tokens: 20, cache_write_tokens: 30 }, output_tokens: 40,
      output_tokens_details: { reasoning_tokens: 25 }, total_tokens: 140 } } }] },
  // Pi 1.5 finalises `response.incomplete` like `response.completed`.
  { name: "incomplete-max-output-tokens", events: [created, textStream[2], textStream[4], textStream[5],
    { type: "response.incomplete", response: { id: "resp_1", status: "incomplete", incomplete_details: { reason: "max_output_tokens" },
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 } } }] },
  { name: "incomplete-content-filter", events: [created, textStream[2], textStream[4], textStream[5],
    { type: "response.incomplete", response: { id: "resp_1", status: "incomplete", incomplete_details: { reason: "content_filter" } } }] },
  { name: "completed-with-unfinished-tool-call", events: toolStream.slice(0, 11).concat([completed("completed")]) },
  { name: "output-indexes", events: [created,
    { type: "response.output_item.added", output_index: 0, item: message("msg_5", []) },
    { type: "response.output_item.added", output_index: 1, item: { type: "function_call", id: "fc_5", call_id: "call_5", name: "read", arguments: "" } },
    { type: "response.output_text.delta", output_index: 0, delta: "Hi" },
    { type: "response.function_call_arguments.delta", output_index: 1, delta: "{}" },
    { type: "response.output_text.delta", output_index: 1, delta: "not a text slot" },
    { type: "response.output_item.done", output_index: 0, item: message("msg_5", [{ type: "output_text", text: "Hi" }]) },
    { type: "response.output_item.done", output_index: 1, item: { type: "function_call", id: "fc_5", call_id: "call_5", name: "read", arguments: "{}" } },
    completed("completed")] },
  // Grammar tool calls stream their free-form input; the block's arguments hold it under the
  // tool's one string property ("input" for a tool the request did not declare as grammar).
  { name: "custom-tool-call", grammar: true, events: [created,
    { type: "response.output_item.added", output_index: 0, item: { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "apply_patch", input: "" } },
    { type: "response.custom_tool_call_input.delta", output_index: 0, delta: "*** Begin" },
    { type: "response.custom_tool_call_input.delta", output_index: 0, delta: " \"quoted\"\n" },
    { type: "response.custom_tool_call_input.done", output_index: 0, input: "*** Begin \"quoted\"\n*** End" },
    { type: "response.output_item.done", output_index: 0, item: { type: "custom_tool_call", id: "ctc_1", call_id: "call_1", name: "apply_patch", input: "*** Begin \"quoted\"\n*** End" } },
    completed("completed")] },
  { name: "custom-tool-call-only-in-done", grammar: true, events: [created,
    { type: "response.output_item.added", output_index: 0, item: { type: "custom_tool_call", id: "ctc_2", call_id: "call_2", name: "stamp", input: "ab" } },
    { type: "response.output_item.done", output_index: 0, item: { type: "custom_tool_call", id: "ctc_2", call_id: "call_2", name: "stamp", input: "abc" } },
    { type: "response.output_item.done", output_index: 1, item: { type: "custom_tool_call", id: "ctc_3", call_id: "call_3", name: "unknown", input: "zz" } },
    completed("completed")] },
  { name: "custom-tool-call-input-not-monotonic", grammar: true, events: [created,
    { type: "response.output_item.added", output_index: 0, item: { type: "custom_tool_call", id: "ctc_4", call_id: "call_4", name: "apply_patch", input: "" } },
    { type: "response.custom_tool_call_input.delta", output_index: 0, delta: "abc" },
    { type: "response.custom_tool_call_input.done", output_index: 0, input: "xyz" },
    completed("completed")] },
  // The answer to a request with a mid-conversation effort records it (after `model`).
  { name: "mid-convo-effort-recorded", compat: { supportsMidConvoEffort: true }, options: { reasoning: "xhigh" }, events: textStream },
  { name: "custom-tool-call-without-grammar-tools", events: [created,
    { type: "response.output_item.added", output_index: 0, item: { type: "custom_tool_call", id: "ctc_5", call_id: "call_5", name: "apply_patch", input: "" } },
    { type: "response.custom_tool_call_input.delta", output_index: 0, delta: "p" },
    { type: "response.output_item.done", output_index: 0, item: { type: "custom_tool_call", id: "ctc_5", call_id: "call_5", name: "apply_patch", input: "p!" } },
    completed("completed")] },
];
for (const s of streams) s.body = s.raw ?? sse(s.events);

let current = "";
let requests = 0;
const server = http.createServer((req, res) => {
  requests += 1;
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(current);
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const port = server.address().port;

const bodies = [];
for (const c of bodyCases) {
  let body;
  const stream = streamSimple(c.model, c.context, { apiKey: "key", ...c.options,
    onPayload: (params) => { body = params; throw new Error("captured"); } });
  await stream.result();
  if (!body) throw new Error(`${c.name}: no payload`);
  bodies.push({ ...c, body });
}
const decoded = [];
for (const s of streams) {
  current = s.body;
  const events = [];
  let final;
  const over = s.grammar ? { compat: { supportsOpenAIGrammarTools: true } } : s.compat ? { compat: s.compat } : {};
  const context = s.grammar ? { messages: [user("hi")], tools: grammarTools } : { messages: [user("hi")] };
  const stream = streamSimple(model({ baseUrl: `http://127.0.0.1:${port}/v1`, ...over }), context, { apiKey: "key", maxRetries: 0, ...s.options });
  for await (const e of stream) {
    if (e.type === "done") final = e.message;
    else if (e.type === "error") final = e.error;
    else if (e.type !== "start") events.push({ type: e.type, contentIndex: e.contentIndex, delta: e.delta, content: e.content, toolCall: e.toolCall });
  }
  const message = JSON.parse(JSON.stringify(final));
  delete message.timestamp;
  delete message.role;
  delete message.durationMs; // the loop's measure, not the decoder's
  decoded.push({ name: s.name, ...(s.grammar ? { compat: over.compat, tools: grammarTools } : {}),
    ...(s.compat ? { compat: s.compat } : {}), ...(s.options ? { options: s.options } : {}), body: s.body, events: JSON.parse(JSON.stringify(events)), message });
}
const refusals = [];
for (const c of refusalCases) {
  requests = 0;
  current = sse([completed("completed")]);
  const compat = c.compat ?? { supportsOpenAIGrammarTools: true };
  const context = { messages: c.messages ?? [user("hi")], tools: c.tools };
  const stream = streamSimple(model({ baseUrl: `http://127.0.0.1:${port}/v1`, compat }), context, { apiKey: "key", maxRetries: 0 });
  const final = await stream.result();
  refusals.push({ name: c.name, compat, tools: c.tools, messages: context.messages, sent: requests,
    stopReason: final.stopReason, ...(final.errorMessage === undefined ? {} : { errorMessage: final.errorMessage }) });
}
server.close();
fs.writeFileSync(out, JSON.stringify({ bodies, streams: decoded, refusals }, null, 1) + "\n");
console.log(`${bodies.length} bodies, ${decoded.length} streams, ${refusals.length} refusals -> ${out}`);
