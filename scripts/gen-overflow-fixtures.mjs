// Writes what the original's isContextOverflow (pi-ai) says about a set of assistant messages
// (core/tests/fixtures/overflow_cases.json).
//
//   node scripts/gen-overflow-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { isContextOverflow } = await original(piDir).bundled("isContextOverflow");

const errors = [
  "prompt is too long: 213462 tokens > 200000 maximum",
  '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
  "Your input exceeds the context window of this model",
  "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
  "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
  "Please reduce the length of the messages or completion",
  "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens",
  "the request exceeds the available context size, try increasing it",
  "tokens to keep from the initial prompt is greater than the context length",
  "prompt token count of 130000 exceeds the limit of 128000",
  "invalid params, context window exceeds limit",
  "Your request exceeded model token limit: 262144 (requested: 300000)",
  "400 status code (no body)",
  "413 (no body)",
  "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
  "model_context_window_exceeded",
  "prompt too long; exceeded max context length by 12 tokens",
  "prompt too long; exceeded context length by 12 tokens",
  "context_length_exceeded",
  "Context Length Exceeded",
  "Too many tokens in request",
  "token limit exceeded",
  "Input is too long for requested model.",
  "ThrottlingException: Too many tokens, please wait before trying again.",
  "Throttling error: too many tokens",
  "Service unavailable: prompt is too long",
  "Rate limit reached: too many tokens per minute",
  "429 Too Many Requests: context_length_exceeded",
  "maximum prompt length is about big",
  "maximum context length is\n8192 tokens",
  "input token count 5\nexceeds the maximum",
  "prompt is too long",
  "PROMPT IS TOO LONG",
  " 400 status code (no body)",
  "401 status code (no body)",
  "400status code(no body)",
  "500 Internal server error",
  "",
  "prompt too long: 250000 tokens",
  "The prompt exceeds max length of the model",
  "This request exceeds the model's maximum context length of 131,072 tokens",
  "input exceeds maximum context length (128000)",
  "Request failed: context window exceeded",
  "the input exceeds the maximum allowed input length of 32,768 tokens",
  "Your input (140000 tokens) is longer than the model's context length (131072 tokens)",
  "prompt has 9,000 tokens, but the configured context size is 8,192 tokens",
  "Range of input length should be [1, 30720]",
  "Anthropic API error (413): request entity too large",
  "413",
  "413: payload too large",
  "4130 things",
];
// Bodyless 400/413 answers are an overflow only from Cerebras.
const providers = { "400 status code (no body)": ["p", "cerebras"], "413 (no body)": ["p", "cerebras"], "400status code(no body)": ["p", "cerebras"] };
const usage = (input, output, cacheRead) => ({
  input, output, cacheRead, cacheWrite: 0, totalTokens: input + output + cacheRead,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});
const cases = [];
for (const errorMessage of errors) {
  for (const stopReason of ["error", "aborted"]) {
    for (const provider of providers[errorMessage] ?? ["p"]) {
      cases.push({ stopReason, errorMessage, ...(provider !== "p" ? { provider } : {}), usage: usage(10, 0, 0) });
    }
  }
}
for (const [stopReason, input, output, cacheRead, contextWindow] of [
  ["stop", 1000, 5, 0, 1000],
  ["stop", 1000, 5, 1, 1000],
  ["stop", 900, 5, 200, 1000],
  ["stop", 2000, 5, 0, 0],
  ["stop", 2000, 5, 0, undefined],
  ["toolUse", 2000, 5, 0, 1000],
  ["length", 990, 0, 0, 1000],
  ["length", 989, 0, 0, 1000],
  ["length", 500, 0, 490, 1000],
  ["length", 1000, 1, 0, 1000],
  ["length", 99, 0, 0, 100],
  ["length", 98, 0, 0, 100],
  ["error", 5000, 0, 0, 1000],
]) {
  cases.push({ stopReason, usage: usage(input, output, cacheRead), contextWindow });
}
for (const c of cases) {
  const message = {
    role: "assistant", content: [], api: "openai-completions", provider: c.provider ?? "p", model: "m",
    usage: c.usage, stopReason: c.stopReason, timestamp: 0,
    ...(c.errorMessage !== undefined ? { errorMessage: c.errorMessage } : {}),
  };
  c.overflow = isContextOverflow(message, c.contextWindow);
}
fs.writeFileSync(out, JSON.stringify(cases, null, 1) + "\n");
console.log(`${cases.length} cases, ${cases.filter((c) => c.overflow).length} overflow -> ${out}`);
