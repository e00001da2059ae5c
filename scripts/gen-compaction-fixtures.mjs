// Generates compaction fixtures by running the original Pi's own compaction code.
//
//   node scripts/gen-compaction-fixtures.mjs <pi install dir> <out dir>
//
// Writes seeded synthetic sessions (<out>/session-N.jsonl) and, for each, what Pi computes:
// token estimates, cut points, prepareCompaction, the serialized conversation, and the branch
// summary preparation (<out>/expected.json). The install dir is the one the oracle kit's
// install-pi.sh creates.
import fs from "fs";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, outDir] = process.argv.slice(2);
const pi = original(piDir);
const compaction = await pi.agentModule("core/compaction/compaction.js");
const utils = await pi.agentModule("core/compaction/utils.js");
const branch = await pi.agentModule("core/compaction/branch-summarization.js");
const messages = await pi.agentModule("core/messages.js");
const { SessionManager } = await pi.agentModule("core/session-manager.js");

let seed = 12345;
const rand = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = (list) => list[Math.floor(rand() * list.length)];
const words = ["alpha", "beta", "gamma", "ünïcödé", "日本語", "emoji😀", "path/to/file.rs", "x", "\"quoted\"", "tab\tsep"];
const text = (n) => Array.from({ length: n }, () => pick(words)).join(" ");
const files = ["src/a.rs", "src/b.rs", "README.md", "docs/ü.md", "Z.txt", "a.txt"];

function session(n, size) {
  let id = 0;
  const t0 = Date.UTC(2026, 0, 1);
  const ids = [];
  let parent = null;
  const lines = [{ type: "session", version: 3, id: `00000000-0000-7000-8000-${String(n).padStart(12, "0")}`, timestamp: new Date(t0).toISOString(), cwd: "/w" }];
  const add = (entry) => {
    const eid = (id++).toString(16).padStart(8, "0");
    const full = { ...entry, id: eid, parentId: parent, timestamp: new Date(t0 + id * 1000).toISOString() };
    lines.push(full);
    ids.push(eid);
    parent = eid;
    return eid;
  };
  const ts = () => t0 + id * 1000;
  add({ type: "model_change", provider: "mock", modelId: "mock-model" });
  for (let i = 0; i < size; i++) {
    const r = rand();
    if (r < 0.25) {
      const content = rand() < 0.3 ? text(3 + Math.floor(rand() * 40)) : [{ type: "text", text: text(5 + Math.floor(rand() * 60)) }, ...(rand() < 0.2 ? [{ type: "image", data: "aGk=", mimeType: "image/png" }] : [])];
      add({ type: "message", message: { role: "user", content, timestamp: ts() } });
    } else if (r < 0.55) {
      const content = [];
      if (rand() < 0.3) content.push({ type: "thinking", thinking: text(10), thinkingSignature: "sig" });
      if (rand() < 0.7) content.push({ type: "text", text: text(5 + Math.floor(rand() * 80)) });
      const calls = rand() < 0.5 ? 1 + Math.floor(rand() * 2) : 0;
      const callIds = [];
      for (let c = 0; c < calls; c++) {
        const name = pick(["read", "write", "edit", "bash", "grep"]);
        const cid = `call_${id}_${c}`;
        callIds.push([cid, name]);
        const args = name === "bash" ? { command: text(3) } : { path: pick(files), "10": "numeric key", offset: Math.floor(rand() * 50) };
        content.push({ type: "toolCall", id: cid, name, arguments: args });
      }
      const usage = { input: Math.floor(rand() * 5000), output: Math.floor(rand() * 500), cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
      usage.totalTokens = rand() < 0.8 ? usage.input + usage.output : 0;
      const stopReason = rand() < 0.1 ? pick(["error", "aborted"]) : calls ? "toolUse" : "stop";
      add({ type: "message", message: { role: "assistant", content, api: "openai-completions", provider: "mock", model: "mock-model", usage, stopReason, timestamp: ts() } });
      for (const [cid, name] of callIds) {
        const long = rand() < 0.3 ? text(600) : text(8);
        add({ type: "message", message: { role: "toolResult", toolCallId: cid, toolName: name, content: [{ type: "text", text: long }], isError: false, timestamp: ts() } });
      }
    } else if (r < 0.62) {
      add({ type: "message", message: { role: "bashExecution", command: text(2), output: text(20), exitCode: rand() < 0.5 ? 0 : 1, cancelled: false, truncated: false, timestamp: ts() } });
    } else if (r < 0.68) {
      add({ type: "custom_message", customType: "note", content: text(12), display: true });
    } else if (r < 0.72) {
      add({ type: "branch_summary", fromId: pick(ids) ?? "root", summary: text(30), details: { readFiles: [pick(files)], modifiedFiles: [pick(files)] }, ...(rand() < 0.3 ? { fromHook: true } : {}) });
    } else if (r < 0.76 && ids.length > 4) {
      const kept = ids[Math.floor(ids.length * (0.5 + rand() * 0.4))];
      add({ type: "compaction", summary: text(40), firstKeptEntryId: kept, tokensBefore: 1234, details: { readFiles: [pick(files)], modifiedFiles: [pick(files)] }, ...(rand() < 0.3 ? { fromHook: true } : {}) });
    } else if (r < 0.8) {
      add({ type: "thinking_level_change", thinkingLevel: pick(["off", "high", "low"]) });
    } else if (r < 0.83) {
      add({ type: "label", targetId: pick(ids), label: "mark" });
    } else {
      add({ type: "message", message: { role: "user", content: text(2), timestamp: ts() } });
    }
  }
  return lines;
}

const expected = [];
for (let n = 0; n < 12; n++) {
  const lines = session(n, 20 + n * 15);
  const file = path.join(outDir, `session-${n}.jsonl`);
  fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  const entries = lines.slice(1);
  const tokens = entries.filter((e) => e.type === "message").map((e) => compaction.estimateTokens(e.message));
  const keeps = [0, 50, 400, 2000, 8000, 1e9];
  const cuts = keeps.map((k) => compaction.findCutPoint(entries, 0, entries.length, k));
  const preparations = keeps.map((keep) => {
    const p = compaction.prepareCompaction(entries, { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
    if (!p) return null;
    const { readFiles, modifiedFiles } = utils.computeFileLists(p.fileOps);
    return {
      firstKeptEntryId: p.firstKeptEntryId,
      isSplitTurn: p.isSplitTurn,
      tokensBefore: p.tokensBefore,
      previousSummary: p.previousSummary ?? null,
      summarize: utils.serializeConversation(messages.convertToLlm(p.messagesToSummarize)),
      summarizeCount: p.messagesToSummarize.length,
      prefix: utils.serializeConversation(messages.convertToLlm(p.turnPrefixMessages)),
      prefixCount: p.turnPrefixMessages.length,
      readFiles,
      modifiedFiles,
      fileLists: utils.formatFileOperations(readFiles, modifiedFiles),
    };
  });
  const manager = SessionManager.open(file, outDir);
  const target = entries[Math.floor(entries.length / 3)].id;
  const collected = branch.collectEntriesForBranchSummary(manager, entries[entries.length - 1].id, target);
  const budgets = [0, 300, 3000];
  const branches = budgets.map((budget) => {
    const p = branch.prepareBranchEntries(collected.entries, budget);
    const { readFiles, modifiedFiles } = utils.computeFileLists(p.fileOps);
    return { count: p.messages.length, totalTokens: p.totalTokens, text: utils.serializeConversation(messages.convertToLlm(p.messages)), readFiles, modifiedFiles };
  });
  expected.push({
    file: `session-${n}.jsonl`,
    tokens,
    keeps,
    cuts,
    preparations,
    branch: { target, commonAncestorId: collected.commonAncestorId, entryIds: collected.entries.map((e) => e.id), budgets, results: branches },
  });
}
fs.writeFileSync(path.join(outDir, "expected.json"), JSON.stringify(expected, null, 1) + "\n");
console.log(`wrote ${expected.length} sessions to ${outDir}`);
