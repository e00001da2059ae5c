// Writes what the original's own truncation functions (core/tools/truncate.js) make
// of a set of texts and limits (core/tests/fixtures/truncate_cases.json).
//
//   node scripts/gen-truncate-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const t = await original(piDir).agentModule("core/tools/truncate.js");

const lines = (n, f) => Array.from({ length: n }, (_, i) => f(i)).join("\n");
const texts = {
  empty: "",
  newline: "\n",
  short: "one\ntwo\nthree",
  trailing: "one\ntwo\n",
  many: lines(2500, (i) => `line ${i}`),
  wide: lines(300, (i) => `${i} ${"x".repeat(300)}`),
  huge_first: "y".repeat(60000) + "\nsecond",
  huge_last: "first\n" + "z".repeat(60000),
  unicode: lines(200, (i) => `${i} héllo wörld ✓ 日本語 😀`.repeat(3)),
  emoji_tail: "a\n" + "😀".repeat(13000),
  crlf: lines(100, (i) => `row ${i}\r`),
};
const limits = [{}, { maxLines: 10 }, { maxBytes: 100 }, { maxLines: 3, maxBytes: 1000 }, { maxLines: 1, maxBytes: 7 }, { maxLines: 2000, maxBytes: 51200 }, { maxBytes: 5 }];
const cases = [];
for (const [name, text] of Object.entries(texts)) {
  for (const limit of limits) {
    for (const fn of ["head", "tail"]) {
      const result = fn === "head" ? t.truncateHead(text, limit) : t.truncateTail(text, limit);
      // The kept text is a prefix (head) or a suffix (tail) of the input, a cut tail without the
      // input's final newline: stored as its range of UTF-16 units, to keep the file small.
      const { content, ...rest } = result;
      const end = fn === "tail" && result.truncated && text.endsWith("\n") ? text.length - 1 : text.length;
      const ok = fn === "head" ? text.startsWith(content) : text.slice(0, end).endsWith(content);
      if (!ok) throw new Error(`${fn} ${name}: content is not a ${fn === "head" ? "prefix" : "suffix"}`);
      const range = fn === "head" ? [0, content.length] : [end - content.length, end];
      cases.push({ fn, name, limits: limit, range, result: rest });
    }
  }
}
const lineCases = [["short", 500], ["x".repeat(600), 500], ["😀".repeat(300), 501], ["😀".repeat(300), 500], ["é".repeat(10), 3], ["a😀b", 2], ["😀", 1]]
  .map(([line, max]) => {
    // The cut never splits a surrogate pair (the whole character is left out).
    const result = t.truncateLine(line, max);
    if (!result.text.isWellFormed()) throw new Error(`truncateLine split a character of ${line}`);
    return { line, max, result };
  });
const sizes = [0, 1, 1023, 1024, 1075, 1076, 1280, 1331, 1536, 10239, 10240, 1048575, 1048576, 1572864, 1625293, 1625292, 5 * 1048576 + 52429, 123456789]
  .map((bytes) => ({ bytes, text: t.formatSize(bytes) }));
fs.writeFileSync(out, JSON.stringify({ texts, cases, lines: lineCases, sizes }) + "\n");
console.log(`${cases.length} truncations, ${lineCases.length} lines, ${sizes.length} sizes -> ${out}`);
