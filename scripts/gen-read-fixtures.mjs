// Writes what the original's read tool returns for text files (core/tests/fixtures/
// read_cases.json): the same files are written to a temporary directory and read by the
// original tool with a set of offset/limit arguments.
//
//   node scripts/gen-read-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { createReadToolDefinition } = await original(piDir).agentModule("core/tools/read.js");
const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "read-"));
const tool = createReadToolDefinition(cwd);

const lines = (n, f) => Array.from({ length: n }, (_, i) => f(i + 1)).join("\n");
const files = {
  "short.txt": "alpha\nbeta\ngamma\n",
  "no-newline.txt": "one\ntwo",
  "empty.txt": "",
  "long.txt": lines(2600, (i) => `line ${i}`),
  "wide.txt": lines(400, (i) => `${i}: ${"w".repeat(200)}`),
  "huge-line.txt": "start\n" + "h".repeat(70000) + "\nend",
  "unicode.txt": lines(50, (i) => `${i} ünïcødé ✓ 😀`),
  "crlf.txt": "a\r\nb\r\nc\r\n",
};
const args = [
  {}, { offset: 2 }, { limit: 2 }, { offset: 2, limit: 1 }, { offset: 0 }, { offset: 1, limit: 0 },
  { offset: 100000 }, { offset: 2500 }, { offset: 2001, limit: 10 }, { limit: 3000 }, { offset: -5, limit: 2 },
];
// Every text is kept whole (the test compares it in full); the truncation details keep their
// copy of the content only where it is not the start of the text.
const cases = [];
for (const [name, text] of Object.entries(files)) {
  fs.writeFileSync(path.join(cwd, name), text);
  for (const a of args) {
    try {
      const result = await tool.execute("call", { path: name, ...a }, undefined, undefined, {});
      const text = result.content[0].text;
      let details = null;
      if (result.details?.truncation) {
        const { content, ...truncation } = result.details.truncation;
        details = text.startsWith(content) ? { truncation, contentLength: content.length } : { truncation, content };
      }
      cases.push({ file: name, args: a, output: { text }, details });
    } catch (error) {
      cases.push({ file: name, args: a, error: error.message });
    }
  }
}
fs.rmSync(cwd, { recursive: true, force: true });
fs.writeFileSync(out, JSON.stringify({ files, cases }) + "\n");
console.log(`${cases.length} reads -> ${out}`);
