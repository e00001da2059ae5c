// Writes what the original's OutputAccumulator (the bash tool's output buffer) makes
// of a set of byte streams (core/tests/fixtures/output_cases.json): chunks are fed as given, then
// the snapshot's text, truncation and last-line size are recorded, and whether the full output
// went to a temporary file (which is then removed).
//
//   node scripts/gen-output-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { OutputAccumulator } = await original(piDir).agentModule("core/tools/output-accumulator.js");

// Streams are recipes both sides build: explicit chunks (base64), or text parts (literal,
// repeated, numbered lines with `{i}`) cut into chunks of a size.
const build = (recipe) => {
  if (recipe.chunks) return recipe.chunks.map((c) => Buffer.from(c, "base64"));
  const text = recipe.parts.map((p) => p.literal ?? (p.repeat !== undefined ? p.repeat.repeat(p.times)
    : Array.from({ length: p.lines }, (_, i) => p.template.replace("{i}", String(i + 1)) + "\n").join(""))).join("");
  const buf = Buffer.from(text, "utf-8");
  const out = [];
  for (let i = 0; i < buf.length; i += recipe.chunk) out.push(buf.subarray(i, i + recipe.chunk));
  return out;
};
const b64 = (bytes) => Buffer.from(bytes).toString("base64");
const streams = {
  empty: { chunks: [] },
  short: { chunks: [b64(Buffer.from("hello\nworld\n"))] },
  "no-trailing-newline": { chunks: [b64(Buffer.from("a\nb"))] },
  "split-utf8": { chunks: [b64([0x68, 0xc3]), b64([0xa9, 0x0a, 0xf0, 0x9f]), b64([0x98, 0x80, 0x21])] },
  "invalid-bytes": { chunks: [b64([0x61, 0xff, 0xfe, 0x62, 0xc3, 0x28, 0x0a, 0xe2, 0x82])] },
  "many-lines": { parts: [{ lines: 3000, template: "line {i}" }], chunk: 1000 },
  "wide-lines": { parts: [{ lines: 800, template: "{i} " + "x".repeat(150) }], chunk: 4096 },
  "huge-single-line": { parts: [{ repeat: "y", times: 300000 }], chunk: 65536 },
  "huge-then-lines": { parts: [{ repeat: "z", times: 250000 }, { literal: "\n" }, { lines: 10, template: "tail {i}" }], chunk: 30000 },
  "long-emoji-line": { parts: [{ repeat: "😀", times: 60000 }], chunk: 7777 },
  crlf: { chunks: [b64(Buffer.from("one\r\ntwo\r\n"))] },
  // The same long last line read at once and in two reads: the rolling tail is trimmed at a
  // different place, so what is shown depends on the reads (nothing at once, its end in two).
  "long-last-line-one-read": { parts: [{ repeat: "y", times: 120000 }, { literal: "\n" }, { repeat: "x", times: 150000 }, { literal: "\n" }], chunk: 300000 },
  "long-last-line-two-reads": { parts: [{ repeat: "y", times: 120000 }, { literal: "\n" }, { repeat: "x", times: 150000 }, { literal: "\n" }], chunk: 210001 },
};
const cases = [];
for (const [name, recipe] of Object.entries(streams)) {
  const chunks = build(recipe);
  const acc = new OutputAccumulator({ tempFilePrefix: "pi-fixture" });
  for (const c of chunks) acc.append(c);
  acc.finish();
  const snap = acc.snapshot();
  const persisted = snap.fullOutputPath !== undefined;
  await acc.closeTempFile();
  if (persisted) fs.rmSync(snap.fullOutputPath, { force: true });
  const { content, ...truncation } = snap.truncation;
  const compact = content.length <= 600 ? { content } : { length: content.length, head: content.slice(0, 200), tail: content.slice(-200) };
  cases.push({ name, recipe, ...compact, truncation, lastLineBytes: acc.getLastLineBytes(), persisted });
}
fs.writeFileSync(out, JSON.stringify({ cases }) + "\n");
console.log(`${cases.length} streams -> ${out}`);
