// Writes which failed assistant messages pi-coding-agent retries automatically
// (core/tests/fixtures/retry_cases.json): pi-ai's context-overflow check first (overflows are
// compacted, not retried), then the retryable-error decision of the installed Pi. For 1.5.x
// (`@earendil-works`) that is `isRetryableAssistantError` from the bundle (a never-retried
// pattern for spent quotas, then the retryable one); for 0.73.1 (`@mariozechner`) the pattern
// literal of agent-session.js.
//
//   node scripts/gen-retry-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import path from "path";

const [piDir, out] = process.argv.slice(2);
const edition152 = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/bundle/chunks");
let isContextOverflow, retryable, literal;
if (fs.existsSync(edition152)) {
  const chunks = fs.readdirSync(edition152).filter((f) => f.startsWith("chunk-"));
  for (const chunk of chunks) {
    const source = fs.readFileSync(path.join(edition152, chunk), "utf8");
    if (!/export\{[^}]*\b(isContextOverflow|isRetryableAssistantError)\b/.test(source)) continue;
    const module = await import(path.join(edition152, chunk));
    isContextOverflow ??= module.isContextOverflow;
    if (module.isRetryableAssistantError) {
      retryable = (message) => module.isRetryableAssistantError(message);
      literal = "isRetryableAssistantError (Pi 1.5.2)";
    }
  }
} else {
  const nm = path.join(piDir, "node_modules/@mariozechner");
  ({ isContextOverflow } = await import(path.join(nm, "pi-ai/dist/utils/overflow.js")));
  const source = fs.readFileSync(path.join(nm, "pi-coding-agent/dist/core/agent-session.js"), "utf8");
  const body = source.slice(source.indexOf("_isRetryableError(message) {"));
  literal = body.match(/return (\/.*\/i)\.test\(err\);/)[1];
  const pattern = new Function(`return ${literal};`)();
  retryable = (message) => message.stopReason === "error" && !!message.errorMessage && pattern.test(message.errorMessage);
}

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
];
const cases = [];
for (const errorMessage of errors) {
  for (const stopReason of ["error", "aborted"]) {
    const message = { role: "assistant", content: [], api: "a", provider: "p", model: "m", usage: usage(10, 0),
      stopReason, timestamp: 0, ...(errorMessage ? { errorMessage } : {}) };
    cases.push({ stopReason, errorMessage, contextWindow: 1000, retryable: !isContextOverflow(message, 1000) && retryable(message) });
  }
}
// A silent overflow (usage above the window) is not retried even with a retryable text.
const big = { role: "assistant", content: [], api: "a", provider: "p", model: "m", usage: usage(5000, 0), stopReason: "error", errorMessage: "503", timestamp: 0 };
cases.push({ stopReason: "error", errorMessage: "503", usage: [5000, 0], contextWindow: 1000, retryable: !isContextOverflow(big, 1000) && retryable(big) });
fs.writeFileSync(out, JSON.stringify({ pattern: literal, cases }, null, 1) + "\n");
console.log(`${cases.length} cases -> ${out}`);
