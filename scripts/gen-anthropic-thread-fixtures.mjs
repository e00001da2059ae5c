// Writes the Messages API requests the original's pi-ai sends over multi-request conversations,
// where message threads (a session's requests continuing the previous answer's thread) apply
// (providers/tests/fixtures/anthropic-threads.json). Each case is one session: its steps run in
// order through the original's own `streamSimple` with a fetch that answers from the case's
// script (a streamed answer with an id, or an error status), and the next step's context is the
// previous one's with the original's own answer appended. Nothing leaves the process.
//
//   node scripts/gen-anthropic-thread-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { streamSimple } = await pi.bundled("streamSimple", "getModels");
const { cleanupSessionResources } = await pi.bundled("cleanupSessionResources");

const model = (over = {}) => ({
  id: "claude-sonnet-4-5", name: "Claude", api: "anthropic-messages", provider: "anthropic",
  baseUrl: "https://api.anthropic.com", reasoning: false, input: ["text", "image"],
  cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, contextWindow: 200000,
  maxTokens: 64000, ...over,
});
const user = (content, timestamp = 1) => ({ role: "user", content, timestamp });
const result = (toolCallId, text) => ({ role: "toolResult", toolCallId, toolName: "read",
  content: [{ type: "text", text }], isError: false, timestamp: 5 });
const tools = [
  { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
];
// The same tool preferring constrained sampling, and Anthropic's error for too many strict tools.
const strictTools = [{ ...tools[0], constrainedSampling: { type: "json_schema", strict: "prefer" } }];
const strictCompat = { compat: { supportsStrictTools: true } };
// The catalog's newer Claude models: adaptive thinking whose effort can change mid-conversation.
const effortCompat = { forceAdaptiveThinking: true, supportsMidConvoEffort: true };
// Pi 1.5's system messages, and the compat that keeps later ones in the transcript.
const system = (over, timestamp = 1) => ({ role: "system", content: "", ...over, timestamp });
const midCompat = { supportsMidConvoSystemMessages: true };
const lsTool = { name: "ls", description: "List a directory", parameters: { type: "object", properties: { path: { type: "string" } } } };
const writeTool = { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } };
const readTool2 = { ...tools[0], description: "Read a file, or part of it" };
// An answer already in the session, as a 1.5.2 session keeps it.
const recorded = (t, over = {}) => ({ role: "assistant", content: t ? [{ type: "text", text: t }] : [],
  api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: "stop", timestamp: 2, ...over });

// An answer the fake server streams: text and tool calls, a stop reason, the model it names.
const text = (id, t, over = {}) => ({ id, blocks: [{ type: "text", text: t }], stop: "end_turn", ...over });
const toolUse = (id, callId, path) => ({ id, blocks: [{ type: "tool_use", id: callId, name: "read", input: { path } }], stop: "tool_use" });
const failure = (status, error) => ({ status, error });
const strictLimit = (message) => failure(400, { type: "error", error: { type: "invalid_request_error", message } });
const threadError = (code) => failure(400, { type: "error", error: { type: "invalid_request_error",
  message: `thread request refused: ${code}`, details: { error_code: code } } });

function sse(answer, modelId) {
  const events = [["message_start", { type: "message_start", message: { id: answer.id, type: "message", role: "assistant",
    model: answer.model ?? modelId, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1 },
    ...(answer.startTransformations ? { input_transformations: answer.startTransformations } : {}) } }]];
  // A server-side fallback announced before any content (Pi skips the block).
  if (answer.fallbackBlock) {
    events.push(["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "fallback" } }]);
    events.push(["content_block_stop", { type: "content_block_stop", index: 0 }]);
  }
  const first = answer.fallbackBlock ? 1 : 0;
  answer.blocks.forEach((block, k) => {
    const index = k + first;
    if (block.type === "text") {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }]);
      events.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: block.text } }]);
    } else {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }]);
      events.push(["content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } }]);
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }]);
  });
  events.push(["message_delta", { type: "message_delta", delta: { stop_reason: answer.stop }, usage: { output_tokens: 5 },
    ...(answer.deltaTransformations ? { input_transformations: answer.deltaTransformations } : {}) }]);
  events.push(["message_stop", { type: "message_stop" }]);
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join("");
}

// Each step: what the context gains before the request (messages, or a new system prompt or
// tools, or the model of this one call), the server's answers to the requests it sends (in order; more than one when the
// original sends the call again), and whether its answer joins the context. Each request is
// kept with the streamed answer it got (`response`), so the decoder can be checked too.
const cases = [
  { name: "text-then-question", model: model(), options: { sessionId: "s1" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("and then?", 6)], answers: [text("msg_2", "Then this")] },
    { add: [user("last", 7)], answers: [text("msg_3", "Done")] },
  ] },
  { name: "tool-loop", model: model(), tools, options: { sessionId: "s2" }, steps: [
    { add: [user("read a")], answers: [toolUse("msg_1", "toolu_1", "a")] },
    { add: [result("toolu_1", "A")], answers: [toolUse("msg_2", "toolu_2", "b")] },
    { add: [result("toolu_2", "B")], answers: [text("msg_3", "Both read")] },
  ] },
  { name: "system-prompt-changed", model: model(), options: { sessionId: "s3" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { system: "Be brief now.", add: [user("more", 6)], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  { name: "error-starts-a-new-thread", model: model(), options: { sessionId: "s4", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { add: [], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  { name: "thread-not-found-starts-a-new-one", model: model(), options: { sessionId: "s15" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [threadError("thread_not_found"), text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  { name: "threads-unsupported-turns-them-off", model: model(), options: { sessionId: "s16" }, steps: [
    { add: [user("hi")], answers: [threadError("thread_unsupported_request"), text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "threads-refused-without-a-code-turn-them-off", model: model(), options: { sessionId: "s23" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [failure(400, { type: "error", error: { type: "invalid_request_error", message: "thread continuation is not available" } }), text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
    { add: [user("last", 8)], answers: [text("msg_4", "Last")] },
  ] },
  { name: "create-refused-as-continued-creates-again", model: model(), options: { sessionId: "s24" }, steps: [
    { add: [user("hi")], answers: [threadError("thread_already_continued"), text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "other-error-during-continue-fails", model: model(), options: { sessionId: "s25", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { add: [], answers: [text("msg_2", "More")] },
  ] },
  { name: "server-error-naming-threads-fails", model: model(), options: { sessionId: "s26", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [failure(500, { type: "error", error: { type: "api_error", message: "thread store unavailable" } })], keep: false },
    { add: [], answers: [text("msg_2", "More")] },
  ] },
  { name: "refused-then-resend-fails", model: model(), options: { sessionId: "s27", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [threadError("thread_not_found"), failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { add: [], answers: [text("msg_2", "More")] },
  ] },
  // A failed create leaves the session's thread as it was: a later request extending the
  // older reply continues it.
  { name: "failed-create-keeps-the-older-thread", model: model(), options: { sessionId: "s31", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { system: "Be brief now.", add: [user("more", 6)], answers: [failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { system: "Be brief.", add: [], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  // A call that goes without a thread (another model) leaves the session's thread as it was.
  { name: "another-model-in-between-continues-the-earlier-reply", model: model(), options: { sessionId: "s32" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { model: model({ id: "claude-haiku-4-5", baseUrl: "https://proxy.example.com" }), add: [user("more", 6)], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
    { add: [user("last", 8)], answers: [text("msg_4", "Last")] },
  ] },
  // Threads refused as unsupported, and the resend without a thread fails: the session's
  // threads stay on (the continue had used up its state, so the next request creates).
  { name: "unsupported-then-resend-fails-keeps-threads-on", model: model(), options: { sessionId: "s33", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [threadError("thread_unsupported_request"), failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { add: [], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  // The same after a create: the older thread is still there to continue.
  { name: "unsupported-create-then-resend-fails-keeps-the-older-thread", model: model(), options: { sessionId: "s34", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { system: "Be brief now.", add: [user("more", 6)], answers: [threadError("thread_unsupported_request"), failure(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long" } })], keep: false },
    { system: "Be brief.", add: [], answers: [text("msg_2", "More")] },
  ] },
  // A refusal stop ends the call as an error (its raw stop reason kept); nothing is recorded.
  { name: "refusal-stop-records-nothing", model: model(), options: { sessionId: "s35" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Sorry", { stop: "refusal" })], keep: false },
    { add: [], answers: [text("msg_2", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_3", "More")] },
  ] },
  { name: "strict-tool-limits-send-again-without-strict", model: model(strictCompat), tools: strictTools, options: { sessionId: "s28" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [strictLimit("Too many strict tools (25 > 20)"), text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  { name: "strict-tool-limits-without-a-session", model: model(strictCompat), tools: strictTools, options: {}, steps: [
    { add: [user("hi")], answers: [strictLimit("The compiled grammar is too large"), text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "strict-tool-limits-after-a-refused-thread", model: model(strictCompat), tools: strictTools, options: { sessionId: "s29", maxRetries: 0 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [threadError("thread_not_found"), strictLimit("Schemas contains too many parameters with union types (3)"), text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [strictLimit("Too many strict tools (2)")], keep: false },
  ] },
  { name: "input-transformations", model: model(), options: { sessionId: "s30" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello", { startTransformations: [{ type: "image_resized", path: "messages.0.content.1", reason: "too large" }] })] },
    { add: [user("more", 6)], answers: [text("msg_2", "More", { startTransformations: [{ type: "a" }], deltaTransformations: [{ type: "truncated", path: null, reason: "long", extra: 1 }, {}] })] },
    { add: [user("again", 7)], answers: [threadError("thread_not_found"), text("msg_3", "Again", { deltaTransformations: [{ type: "image_resized" }] })] },
    { add: [user("last", 8)], answers: [text("msg_4", "Last", { deltaTransformations: [] })] },
  ] },
  { name: "allowed-fallback-served", model: model({ id: "claude-fable-5", compat: { allowedFallbackModels: [
      { provider: "anthropic", model: "claude-opus-5", cost: { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 } },
      { provider: "other", model: "claude-haiku-4-5", cost: { input: 100, output: 100, cacheRead: 0, cacheWrite: 0 } }] } }),
    tools, options: { sessionId: "s17" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello", { model: "claude-opus-5" })] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again", { model: "claude-haiku-4-5" })] },
    { add: [user("last", 8)], answers: [text("msg_4", "Last", { fallbackBlock: true })] },
  ] },
  { name: "session-affinity-header", model: model({ provider: "fireworks", baseUrl: "https://api.fireworks.ai/inference", compat: { sendSessionAffinityHeaders: true } }), options: { sessionId: "s18" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "session-affinity-openrouter", model: model({ provider: "openrouter", baseUrl: "https://openrouter.ai/api" }), options: { sessionId: "s19" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "session-affinity-named-format", model: model({ provider: "gateway", baseUrl: "https://gateway.example.com", compat: { sendSessionAffinityHeaders: true, sessionAffinityFormat: "openrouter" } }), options: { sessionId: "s20" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "session-affinity-not-for-subscriptions", model: model({ provider: "fireworks", baseUrl: "https://api.fireworks.ai/inference", compat: { sendSessionAffinityHeaders: true } }), options: { sessionId: "s21", apiKey: "sk-ant-oat01-abc" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "session-affinity-not-without-caching", model: model({ provider: "fireworks", baseUrl: "https://api.fireworks.ai/inference", compat: { sendSessionAffinityHeaders: true } }), options: { sessionId: "s22", cacheRetention: "none" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "fallback-model-answer-is-not-continued", model: model(), options: { sessionId: "s5" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello", { model: "claude-haiku-4-5" })] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "length-answer-continues", model: model(), options: { sessionId: "s6" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hel", { stop: "max_tokens" })] },
    { add: [user("go on", 6)], answers: [text("msg_2", "lo")] },
  ] },
  { name: "history-rewritten", model: model(), options: { sessionId: "s7" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { replace: [user("summary of before"), user("new start", 6)], answers: [text("msg_2", "Fine")] },
  ] },
  { name: "thinking-and-oauth", model: model({ reasoning: true }), tools, options: { sessionId: "s8", reasoning: "low", apiKey: "sk-ant-oat01-abc", cacheRetention: "long" }, steps: [
    { add: [user("read a")], answers: [toolUse("msg_1", "toolu_1", "a")] },
    { add: [result("toolu_1", "A")], answers: [text("msg_2", "Read")] },
  ] },
  { name: "other-host", model: model({ baseUrl: "https://proxy.example.com" }), options: { sessionId: "s9" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "other-host-with-compat", model: model({ baseUrl: "https://proxy.example.com", compat: { supportsMessageThreads: true } }), options: { sessionId: "s10" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "compat-off", model: model({ compat: { supportsMessageThreads: false } }), options: { sessionId: "s11" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "no-cache-retention", model: model(), options: { sessionId: "s12", cacheRetention: "none" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "no-session", model: model(), options: {}, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  // Mid-conversation effort (`compat.supportsMidConvoEffort`): the level goes as a trailing
  // `system` message with `output_config`, each earlier answer that recorded one is preceded by
  // its own, and the thread continues across a change of level; a step's `options` change the
  // level between requests of the one session.
  { name: "mid-convo-effort-changes", model: model({ id: "claude-opus-5", reasoning: true, compat: effortCompat, thinkingLevelMap: { xhigh: "xhigh", max: "max" } }),
    tools, options: { sessionId: "s40", reasoning: "low" }, steps: [
    { add: [user("hi")], answers: [toolUse("msg_1", "toolu_1", "a")] },
    { add: [result("toolu_1", "A")], answers: [text("msg_2", "Read")] },
    { options: { reasoning: "high" }, add: [user("more", 6)], answers: [text("msg_3", "More")] },
    { options: { reasoning: "xhigh" }, add: [user("again", 7)], answers: [text("msg_4", "Again")] },
    { options: { reasoning: undefined }, add: [user("no thinking", 8)], answers: [text("msg_5", "Plain")] },
    { options: { reasoning: "minimal" }, add: [user("back", 9)], answers: [text("msg_6", "Back")] },
  ] },
  { name: "mid-convo-effort-budget-model", model: model({ reasoning: true, compat: { supportsMidConvoEffort: true } }),
    options: { sessionId: "s41", reasoning: "medium", temperature: 0.5 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { options: { reasoning: undefined }, add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "mid-convo-effort-off-unsupported", model: model({ reasoning: true, compat: effortCompat, thinkingLevelMap: { off: null, high: "max" } }),
    options: { sessionId: "s42" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { options: { reasoning: "high" }, add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "mid-convo-effort-non-reasoning-model", model: model({ compat: { supportsMidConvoEffort: true } }),
    options: { temperature: 0.2 }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
  ] },
  { name: "mid-convo-effort-recorded-levels", model: model({ reasoning: true, compat: effortCompat }),
    options: { reasoning: "medium" }, steps: [
    { add: [user("hi"),
      recorded("One", { providerThinkingLevel: "max" }),
      user("two", 2), recorded("Two", { providerThinkingLevel: "minimal" }),
      user("three", 2), recorded("Three", { providerThinkingLevel: "low", provider: "other" }),
      user("four", 2), recorded("Four", { providerThinkingLevel: "low", api: "openai-responses" }),
      user("five", 2), recorded("Five", { providerThinkingLevel: "high", model: "claude-older" }),
      user("six", 2), recorded("", { providerThinkingLevel: "low" }),
      user("seven", 2), recorded("Seven", { providerThinkingLevel: "low", stopReason: "error", errorMessage: "x" }),
      user("last", 3)], answers: [text("msg_1", "Hello")] },
  ] },
  // Mid-conversation system messages (`compat.supportsMidConvoSystemMessages`): the case's
  // transcript carries its own system messages (no `systemPrompt`/`tools`); a later one goes as
  // a `system` message before the next answer (or last), the first as `system` and `tools`.
  // With `supportsMidConvoToolChanges` and initial tools, the changes go as
  // `tool_removal`/`tool_addition` blocks beside the initial tools and a deferred placeholder.
  { name: "mid-convo-system-message", transcript: true, model: model({ compat: midCompat }), options: { sessionId: "s50" }, steps: [
    { add: [system({ sections: { preamble: "Be brief.", rules: "No lies.", cwd: "cwd: /a" }, toolsAdded: tools }), user("hi")], answers: [toolUse("msg_1", "toolu_1", "a")] },
    { add: [result("toolu_1", "A"), system({ content: "Note.", sections: { cwd: "cwd: /b", rules: null } }, 6)], answers: [text("msg_2", "Read")] },
    { add: [user("more", 7)], answers: [text("msg_3", "More")] },
    { add: [system({ sections: { preamble: "Be briefer." } }, 8), user("again", 8)], answers: [text("msg_4", "Again")] },
  ] },
  { name: "mid-convo-system-message-folded-without-compat", transcript: true, model: model(), options: { sessionId: "s51" }, steps: [
    { add: [system({ sections: { preamble: "Be brief.", cwd: "cwd: /a" }, toolsAdded: tools }), user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [system({ sections: { cwd: "cwd: /b" }, toolsAdded: [lsTool] }, 6), user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "mid-convo-tool-changes", transcript: true, model: model({ compat: { ...midCompat, supportsMidConvoToolChanges: true } }), options: { sessionId: "s52" }, steps: [
    { add: [system({ sections: { preamble: "Be brief." }, toolsAdded: [...tools, lsTool] }), user("hi")], answers: [toolUse("msg_1", "toolu_1", "a")] },
    { add: [result("toolu_1", "A"), system({ toolsAdded: [writeTool, readTool2], toolsRemoved: [{ name: "ls" }, { name: "read" }] }, 6)], answers: [text("msg_2", "Read")] },
    { add: [user("more", 7), system({ sections: { preamble: "Be briefer." }, toolsRemoved: [{ name: "write" }] }, 7)], answers: [text("msg_3", "More")] },
  ] },
  { name: "mid-convo-tool-changes-without-initial-tools", transcript: true, model: model({ compat: { ...midCompat, supportsMidConvoToolChanges: true } }), options: { sessionId: "s53", apiKey: "sk-ant-oat01-abc" }, steps: [
    { add: [system({ sections: { preamble: "Be brief." } }), user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [system({ toolsAdded: tools }, 6), user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
  { name: "mid-convo-system-message-with-effort", transcript: true, model: model({ id: "claude-opus-5", reasoning: true, compat: { ...effortCompat, ...midCompat } }),
    options: { sessionId: "s54", reasoning: "low" }, steps: [
    { add: [system({ sections: { preamble: "Be brief." } }), user("hi")], answers: [text("msg_1", "Hello")] },
    { options: { reasoning: "high" }, add: [user("more", 6), system({ sections: { cwd: "cwd: /b" } }, 6)], answers: [text("msg_2", "More")] },
    { add: [user("again", 7)], answers: [text("msg_3", "Again")] },
  ] },
  { name: "configured-beta-header", model: model({ headers: { "anthropic-beta": "custom-1" } }), options: { sessionId: "s14" }, steps: [
    { add: [user("hi")], answers: [text("msg_1", "Hello")] },
    { add: [user("more", 6)], answers: [text("msg_2", "More")] },
  ] },
];

const fixtures = [];
for (const c of cases) {
  let prompt = "Be brief.";
  let messages = [];
  const steps = [];
  for (const step of c.steps) {
    if (step.system !== undefined) prompt = step.system;
    messages = step.replace ? [...step.replace] : [...messages, ...step.add];
    const answers = [...step.answers];
    const sent = [];
    const fetch = async (url, init) => {
      const headers = new Headers(init.headers);
      sent.push({ url: String(url), beta: headers.get("anthropic-beta"),
        affinity: { "x-session-affinity": headers.get("x-session-affinity"), "x-session-id": headers.get("x-session-id") },
        body: JSON.parse(init.body) });
      const answer = answers.shift();
      if (!answer) throw new Error(`${c.name}: no answer left`);
      if (answer.status) {
        sent[sent.length - 1].status = answer.status;
        sent[sent.length - 1].response = JSON.stringify(answer.error);
        return new Response(JSON.stringify(answer.error), { status: answer.status, headers: { "content-type": "application/json" } });
      }
      const body = sse(answer, (step.model ?? c.model).id);
      sent[sent.length - 1].response = body;
      return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
    };
    const context = c.transcript ? { messages: [...messages] }
      : { systemPrompt: prompt, messages: [...messages], ...(c.tools ? { tools: c.tools } : {}) };
    const stepModel = step.model ?? c.model;
    const stepOptions = { ...c.options, ...step.options };
    const reply = await streamSimple(stepModel, context, { apiKey: "key", ...stepOptions, fetch }).result();
    if (answers.length > 0) throw new Error(`${c.name}: ${answers.length} answers unused`);
    // The answer as the session keeps it (the loop adds no field the encoder reads).
    // The answer's times vary between runs and no request carries them: the timestamp is fixed
    // and the duration left out. Diagnostics carry the time of the fallback; 0 stands for it.
    const kept = { ...reply, timestamp: 4 };
    delete kept.durationMs;
    if (kept.diagnostics) kept.diagnostics = kept.diagnostics.map((d) => ({ ...d, timestamp: 0 }));
    steps.push({ ...(step.model ? { model: step.model } : {}), ...(step.options ? { options: stepOptions } : {}), context: structuredClone(context),
      requests: sent, reply: kept });
    if (step.keep !== false) messages = [...messages, kept];
  }
  cleanupSessionResources(c.options.sessionId);
  fixtures.push({ name: c.name, model: c.model, options: c.options, steps });
}
fs.writeFileSync(out, JSON.stringify(fixtures, null, 1) + "\n");
console.log(`${fixtures.length} conversations -> ${out}`);
