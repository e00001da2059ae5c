// Writes what the original's edit diff (generateDiffString in core/tools/edit-diff.js,
// over the `diff` package's diffLines, and the package's unified patch) makes of pairs of texts (core/tests/fixtures/
// diff_cases.json): hand-picked pairs, then a randomized set from a fixed seed whose lines come
// from a small alphabet, so that repeated lines make many equally short diffs and the
// tie-breaking shows.
//
//   node scripts/gen-diff-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import path from "path";
import { createRequire } from "module";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { dist, agentModule } = original(piDir);
const { generateDiffString } = await agentModule("core/tools/edit-diff.js");
const require = createRequire(path.join(dist, "core/tools/edit-diff.js"));
const { diffLines, structuredPatch, formatPatch, FILE_HEADERS_ONLY } = require("diff");

const lines = (n, f) => Array.from({ length: n }, (_, i) => f(i + 1)).join("\n");
const numbered = lines(30, (i) => `line ${i}`) + "\n";
const pairs = [
  ["identical", "a\nb\nc\n", "a\nb\nc\n"],
  ["both-empty", "", ""],
  ["from-empty", "", "a\nb\n"],
  ["to-empty", "a\nb\n", ""],
  ["one-line", "x", "y"],
  ["append", "a\nb\n", "a\nb\nc\n"],
  ["prepend", "a\nb\n", "z\na\nb\n"],
  ["trailing-newline-added", "a\nb", "a\nb\n"],
  ["trailing-newline-removed", "a\nb\n", "a\nb"],
  ["middle", numbered, numbered.replace("line 15\n", "line fifteen\n")],
  ["two-far-apart", numbered, numbered.replace("line 3\n", "three\n").replace("line 27\n", "twenty-seven\n")],
  ["two-close", numbered, numbered.replace("line 10\n", "ten\n").replace("line 16\n", "sixteen\n")],
  ["exactly-eight-between", numbered, numbered.replace("line 10\n", "ten\n").replace("line 19\n", "nineteen\n")],
  ["nine-between", numbered, numbered.replace("line 10\n", "ten\n").replace("line 20\n", "twenty\n")],
  ["first-line", numbered, numbered.replace("line 1\n", "first\n")],
  ["last-line", numbered, numbered.replace("line 30\n", "last\n")],
  ["insert-block", numbered, numbered.replace("line 12\n", "line 12\nnew a\nnew b\nnew c\n")],
  ["delete-block", numbered, numbered.replace("line 12\nline 13\nline 14\n", "")],
  ["widths", lines(9, (i) => `${i}`), lines(12, (i) => `${i}`)],
  ["wide-numbers", lines(120, (i) => `row ${i}`), lines(120, (i) => (i === 100 ? "changed" : `row ${i}`))],
  ["crlf", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"],
  ["mixed-endings", "a\nb\r\nc", "a\r\nb\nc"],
  ["repeated", "x\nx\nx\ny\nx\nx\n", "x\ny\nx\nx\nx\nx\n"],
  ["blank-lines", "\n\n\na\n\n\n", "\n\na\n\n\n\n"],
  ["unicode", "α\nβ 😀\nγ\n", "α\nβ 🎉\nγ\n"],
  ["swap", "a\nb\n", "b\na\n"],
  ["whitespace", "  a\n\tb\n", "a\n\tb \n"],
];

// mulberry32: a small PRNG with a fixed seed, so the set is the same on every run.
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(0x5eed);
const pick = (list) => list[Math.floor(random() * list.length)];
const alphabet = ["a", "b", "c", "", "  d", "e e", "}", "{", "x", "😀"];
for (let n = 0; n < 400; n++) {
  const size = Math.floor(random() * (n < 300 ? 12 : 60));
  const old = Array.from({ length: size }, () => pick(alphabet));
  const next = [...old];
  const edits = 1 + Math.floor(random() * 5);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(random() * (next.length + 1));
    const kind = random();
    if (kind < 0.35) next.splice(at, 0, pick(alphabet));
    else if (kind < 0.7) next.splice(at, 1);
    else next.splice(at, 1, pick(alphabet));
  }
  const join = (list) => {
    const ending = random() < 0.1 ? "\r\n" : "\n";
    return list.join(ending) + (random() < 0.5 ? ending : "");
  };
  pairs.push([`random-${n}`, join(old), join(next)]);
}

const cases = pairs.map(([name, oldText, newText]) => {
  const { diff, firstChangedLine } = generateDiffString(oldText, newText);
  const parts = diffLines(oldText, newText).map(({ value, count, added, removed }) => ({ value, count, added, removed }));
  // 1.5.2's edit details carry this patch (generateEditDiff, over windows of 32 lines or more
  // around each change; the whole texts give the same hunks).
  const patch = formatPatch(structuredPatch("f.txt", "f.txt", oldText, newText, undefined, undefined, { context: 4 }), FILE_HEADERS_ONLY);
  return { name, old: oldText, new: newText, parts, diff, firstChangedLine: firstChangedLine ?? null, patch };
});
fs.writeFileSync(out, JSON.stringify(cases) + "\n");
console.log(`${cases.length} diffs -> ${out}`);
