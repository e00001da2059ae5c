// Writes what the original's own edit functions (core/tools/edit-diff.js) make of a
// set of contents and edits (core/tests/fixtures/edit_cases.json): the fuzzy normalisation, line
// endings, applying edits with every error, and the text the edit tool writes back (the
// replacements spliced into the file as read, so untouched lines keep their line endings).
//
//   node scripts/gen-edit-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const e = await original(piDir).agentModule("core/tools/edit-diff.js");

const texts = [
  "plain", "trailing   \nspaces\t\t\nend", "“smart” ‘quotes’ ‚low‛", "en–dash em—dash minus−", "nbsp\u00a0here\u2003em\u3000ideo",
  "ﬁ ligature ① circled ｆｕｌｌ", "e\u0301 combining", "line\u2028sep", "bom\ufefftrail\ufeff", "nel\u0085end", "", "\r\nwin\r\nlines\r\n", "mac\rlines",
];
const normalize = texts.map((text) => ({ text, normalized: e.normalizeForFuzzyMatch(text), lf: e.normalizeToLF(text) }));

const file = "function hello() {\n  console.log(“hi”);   \n  return 1;\n}\n\nfunction bye() {\n  return 2;\n}\n";
const edits = [
  ["exact", file, [["return 1;", "return 10;"]]],
  ["multi", file, [["return 2;", "return 20;"], ["return 1;", "return 10;"]]],
  ["fuzzy-quotes-and-trailing", file, [["console.log(\"hi\");\n", "console.log('hey');\n"]]],
  ["fuzzy-forces-normalised-base", file, [["console.log(\"hi\");", "x"], ["return 2;", "y"]]],
  ["not-found-one", file, [["nope", "x"]]],
  ["not-found-many", file, [["return 1;", "x"], ["nope", "y"]]],
  ["duplicate-one", file, [["return", "x"]]],
  ["duplicate-many", file, [["hello", "x"], ["function", "y"]]],
  ["empty-one", file, [["", "x"]]],
  ["empty-many", file, [["return 1;", "x"], ["", "y"]]],
  ["overlap", file, [["return 1;\n}", "x"], ["1;\n}\n\nfunction", "y"]]],
  ["no-change-one", file, [["return 1;", "return 1;"]]],
  ["no-change-many", file, [["return 1;", "return 1;"], ["return 2;", "return 2;"]]],
  ["crlf-in-edit", file, [["return 1;\r\n}", "return 11;\r\n}"]]],
  ["unicode", "α β γ\nδ ε\n😀 end\n", [["δ ε", "ζ"], ["😀", "🎉"]]],
  ["whitespace-only-old", "a  \nb\n", [["  \n", "X\n"]]],
  ["nfkc", "ﬁle ①\n", [["file 1", "doc"]]],
  ["crlf-file", "one\r\ntwo\r\nthree\r\n", [["two\n", "2\nand a half\n"]]],
  ["mixed-endings", "a\r\nb\nc\r\nd", [["b\nc", "B\nC"], ["d", "D\nE"]]],
  ["crlf-last-line", "x\r\ny", [["y", "y1\ny2"]]],
  ["lone-cr", "mac\rlines\rhere", [["lines", "rows\nmore"]]],
  ["lone-cr-in-lf-file", "a\rb\nc\n", [["c", "c1\nc2"]]],
  ["crlf-delete", "keep\r\ndrop\r\nkeep too\r\n", [["drop\n", ""]]],
  ["cr-seam", "a\r\rb\n", [["\nb", "\nB"]]],
  ["fuzzy-keeps-other-lines", "if (x)   \n  say(“hi”);  \nend   \n", [["say(\"hi\");", "say('bye');"]]],
  ["fuzzy-two-groups", "a “1”  \nb\nc ‘2’  \n", [["a \"1\"", "A"], ["c '2'", "C"]]],
  ["fuzzy-crlf", "p “q”  \r\nr\r\n", [["p \"q\"", "P"]]],
];
const applied = edits.map(([name, content, list]) => {
  const input = list.map(([oldText, newText]) => ({ oldText, newText }));
  try {
    // As the edit tool does: match in the LF text, then splice into the text as read.
    const lf = e.normalizeToLF(content);
    const { baseContent, newContent, replacements } = e.applyEditsToNormalizedContent(lf, input, "src/a.ts");
    const written = content === lf ? newContent : e.applyReplacementsToOriginal(content, replacements);
    return { name, content, edits: input, base: baseContent, result: newContent, written };
  } catch (error) {
    return { name, content, edits: input, error: error.message };
  }
});
fs.writeFileSync(out, JSON.stringify({ normalize, applied }, null, 1) + "\n");
console.log(`${normalize.length} normalisations, ${applied.length} edit cases -> ${out}`);
