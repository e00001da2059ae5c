// Writes what the original's parseStreamingJson (pi-ai) returns for every prefix of a set of JSON texts
// (core/tests/fixtures/partial_json_cases.json), as streamed tool-call arguments arrive: the texts
// below are tool arguments with escapes, nesting and numbers, a raw control character and an
// invalid escape (which pi-ai repairs), a cut-off literal, top-level scalars and surrounding blanks.
// Each text contributes its prefixes of 0 to its full length, in order. Each case also records what
// parseToolCallArguments (Pi 1.5.2) makes of the prefix as the complete arguments of a call (`final`:
// the arguments, and the argumentsError with Node's JSON.parse message when they do not parse).
//
//   node scripts/gen-partial-json-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const { parseStreamingJson } = await original(piDir).bundled("parseStreamingJson");
const { parseToolCallArguments } = await original(piDir).bundled("parseToolCallArguments");

const texts = [
  String.raw`{"path": "hello.txt"}`,
  String.raw`{"command": "echo \"hi\" && ls -la\n", "timeout": 30}`,
  String.raw`{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\u00e9"}}`,
  String.raw`{"edits": [{"oldText": "a\tb", "newText": "c\\d"}], "path": "/x/y"}`,
  String.raw`[{"x": 1}, "s", 12]`,
  // A raw newline inside a string and an invalid escape.
  '{"raw": "line1\nline2", "bad": "\\q"}',
  // Never completed: the last literal is cut off.
  String.raw`{"n": -0.5e-3, "s": "Infinity", "t": tru`,
  "null",
  "true",
  "12",
  '"str"',
  '  {"a" : 1 }  ',
  // Spread over lines, with CRLF and a lone CR: Node's messages name the line and column.
  '{\n  "a": 1,\r\n  "b": [1 2],\r  "c": x\n}',
];

const cases = [];
for (const text of texts) {
  for (let end = 0; end <= text.length; end++) {
    const input = text.slice(0, end);
    cases.push({ input, output: parseStreamingJson(input), final: parseToolCallArguments(input) });
  }
}
fs.writeFileSync(out, JSON.stringify(cases) + "\n");
console.log(`${cases.length} cases -> ${out}`);
