// What Pi 1.5.2 computes on the compaction fixtures (core/tests/fixtures/compaction, made by
// gen-compaction-fixtures.mjs with 0.73.1): each message's token estimate, the cut points,
// prepareCompaction and the branch-summary preparations.
//
//   <1.5.2's node> scripts/gen-compaction-fixtures-152.mjs <1.5.2 install dir> <fixtures dir>
//
// Writes <fixtures dir>/expected-1.5.2.json. The install dir is the one
// conformance/install-pi-1.5.2.sh creates. 1.5.2 ships its coding agent as an esbuild bundle
// whose chunk does not export prepareCompaction and the file-list helpers, so the bundle is
// copied to a temporary folder and that chunk's export list is extended there; the install is
// left as it is.
import fs from "fs";
import os from "os";
import path from "path";

const [piDir, dir] = process.argv.slice(2);
const bundle = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/bundle");
const copy = fs.mkdtempSync(path.join(os.tmpdir(), "pi-152-bundle-"));
fs.cpSync(bundle, copy, { recursive: true });
const chunks = path.join(copy, "chunks");
const exporting = fs
  .readdirSync(chunks)
  .filter((f) => f.endsWith(".js"))
  .find((f) => /export\{[^}]*\bfindCutPoint\b/.test(fs.readFileSync(path.join(chunks, f), "utf8")));
if (!exporting) throw new Error(`no chunk in ${chunks} exports findCutPoint`);
const chunk = path.join(chunks, exporting);
const source = fs.readFileSync(chunk, "utf8");
const at = source.lastIndexOf("export{");
fs.writeFileSync(
  chunk,
  source.slice(0, at) +
    "export{prepareCompaction as __prepareCompaction,computeFileLists as __computeFileLists,formatFileOperations as __formatFileOperations};" +
    source.slice(at),
);
const pi = await import(chunk);

const cases = JSON.parse(fs.readFileSync(path.join(dir, "expected.json"), "utf8"));
const expected = cases.map((c) => {
  const lines = fs.readFileSync(path.join(dir, c.file), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const entries = lines.slice(1);
  const tokens = entries.filter((e) => e.type === "message").map((e) => pi.estimateTokens(e.message));
  const cuts = c.keeps.map((k) => pi.findCutPoint(entries, 0, entries.length, k));
  const serialize = (messages) => pi.serializeConversation(pi.convertToLlm(messages));
  const preparations = c.keeps.map((keep) => {
    const p = pi.__prepareCompaction(entries, { enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
    if (!p) return null;
    const { readFiles, modifiedFiles } = pi.__computeFileLists(p.fileOps);
    return {
      firstKeptEntryId: p.firstKeptEntryId,
      isSplitTurn: p.isSplitTurn,
      tokensBefore: p.tokensBefore,
      previousSummary: p.previousSummary ?? null,
      summarize: serialize(p.messagesToSummarize),
      summarizeCount: p.messagesToSummarize.length,
      prefix: serialize(p.turnPrefixMessages),
      prefixCount: p.turnPrefixMessages.length,
      readFiles,
      modifiedFiles,
      fileLists: pi.__formatFileOperations(readFiles, modifiedFiles),
    };
  });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "pi-fixtures-"));
  const manager = pi.SessionManager.open(path.join(dir, c.file), scratch);
  const collected = pi.collectEntriesForBranchSummary(manager, entries[entries.length - 1].id, c.branch.target);
  const results = c.branch.budgets.map((budget) => {
    const p = pi.prepareBranchEntries(collected.entries, budget);
    const { readFiles, modifiedFiles } = pi.__computeFileLists(p.fileOps);
    return { count: p.messages.length, totalTokens: p.totalTokens, text: serialize(p.messages), readFiles, modifiedFiles };
  });
  fs.rmSync(scratch, { recursive: true, force: true });
  return { file: c.file, keeps: c.keeps, tokens, cuts, preparations, branch: { results } };
});
fs.rmSync(copy, { recursive: true, force: true });
fs.writeFileSync(path.join(dir, "expected-1.5.2.json"), JSON.stringify(expected, null, 1) + "\n");
