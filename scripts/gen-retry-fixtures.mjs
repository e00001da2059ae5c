// Writes which failed assistant messages the original retries automatically
// (core/tests/fixtures/retry_cases.json): agent-session.js's `_isRetryableError`, that is pi-ai's
// context-overflow check (overflows are compacted, not retried) and then its
// isRetryableAssistantError (a non-retryable provider-limit pattern, then the retryable one).
//
//   node scripts/gen-retry-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { isContextOverflow } = await pi.bundled("isContextOverflow");
const { isRetryableAssistantError } = await pi.bundled("isRetryableAssistantError");
const retries = (message) => !isContextOverflow(message, 1000) && isRetryableAssistantError(message);

const usage = (input, output) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const errors = [
  "529 overloaded_error", "Provider returned error", "rate limit exceeded", "Rate-Limit", "429 Too Many Requests", "too many requests",
  "500 Internal Server Error", "502 Bad Gateway", "503 Service Unavailable", "504 Gateway Timeout", "service_unavailable",
  "server error", "internal error", "network error", "Connection error.", "connection refused", "connection lost",
  "WebSocket closed", "websocket error", "other side closed", "fetch failed", "upstream connect error", "reset before headers",
  "socket hang up", "stream ended without sending chunks", "http2 request did not get a response", "Request timed out.",
  "time out", "timeout", "terminated", "retry delay exceeded", "401 Unauthorized", "400 invalid_request_error", "Request was aborted",
  "prompt is too long: 213462 tokens > 200000 maximum", "500 prompt is too long", "Error 5000 happened", "ThrottlingException: Too many tokens",
  "", "Anthropic stream ended before message_stop", "An unknown error occurred",
  "Stream ended without finish_reason", '500: {"message":"mock error 500","type":"server_error","code":null}',
  '429: {"message":"You exceeded your current quota","type":"insufficient_quota"}', "Monthly usage limit reached",
  "billing hard limit reached", 'error {"code": 1308, "msg": "busy"}', 'error {"code": 13080} 503', "520 unknown error",
  "524 timeout occurred", "A5200B", "getaddrinfo ENOTFOUND api.example.com", "EAI_AGAIN", "server_busy",
  "The servers are currently busy", "Please retry your request", "ResourceExhausted", "stream was interrupted",
  "server_busy", "servers are currently busy", "520 <html>", "error 5200", "524", "getaddrinfo ENOTFOUND api.example.com",
  "Stream ended without finish_reason", "you can retry your request", "insufficient_quota: 429 rate limit",
  "Monthly usage limit reached", "503 billing hard limit", '429 {"code": 1308}', '429 {"code": 13080}',
];
const cases = [];
for (const errorMessage of errors) {
  for (const stopReason of ["error", "aborted"]) {
    const message = { role: "assistant", content: [], api: "a", provider: "p", model: "m", usage: usage(10, 0),
      stopReason, timestamp: 0, ...(errorMessage ? { errorMessage } : {}) };
    const retryable = retries(message);
    cases.push({ stopReason, errorMessage, contextWindow: 1000, retryable });
  }
}
// A silent overflow (usage above the window) is not retried even with a retryable text.
const big = { role: "assistant", content: [], api: "a", provider: "p", model: "m", usage: usage(5000, 0), stopReason: "error", errorMessage: "503", timestamp: 0 };
cases.push({ stopReason: "error", errorMessage: "503", usage: [5000, 0], contextWindow: 1000, retryable: retries(big) });
fs.writeFileSync(out, JSON.stringify({ cases }, null, 1) + "\n");
console.log(`${cases.length} cases -> ${out}`);
