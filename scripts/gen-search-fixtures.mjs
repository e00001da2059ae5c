// Writes what the original's grep, find and ls tools return (effects/tests/fixtures/
// search_cases.json): a few trees are written to a temporary directory (a git-style repository
// with nested .gitignore files, hidden files, a binary file, CRLF and lone-CR lines, long lines,
// invalid UTF-8, symlinks, many files; a tree outside git; a directory of names that exercise
// the sort order) and the original tools run on them with many argument sets.
//
//   node scripts/gen-search-fixtures.mjs <pi install dir> <out file>
//
// The original runs `rg` and `fd`: both must be on PATH (e.g. `cargo install ripgrep fd-find`);
// downloads are switched off. The fixture was made with rg 15.1 and fd 10.5: 1.5.2 passes fd
// `--no-require-git` (fd 8.7 and later), and rg 14 and later start their error texts with `rg:`
// (rg 13 does not), as the rg Pi downloads does. rg and fd walk in parallel, so the order of lines from different
// files varies: each case says how to compare (`exact`, `sorted` lines, or only the `count`).
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, outArg] = process.argv.slice(2);
const out = path.resolve(outArg);
process.env.PI_OFFLINE = "1";
const pi = original(piDir);
const { createGrepToolDefinition } = await pi.agentModule("core/tools/grep.js");
const { createFindToolDefinition } = await pi.agentModule("core/tools/find.js");
const { createLsToolDefinition } = await pi.agentModule("core/tools/ls.js");

const text = (p, t) => ({ path: p, text: t });
const bytes = (p, b) => ({ path: p, bytes: [...b] });
const dir = (p) => ({ path: p, dir: true });
const link = (p, target) => ({ path: p, link: target });
// Kept short in the fixture: `{n}` in the template is 001, 002, ... (a file of numbered lines,
// or numbered empty files in a directory).
const numberedLines = (p, count, template) => ({ path: p, numberedLines: { count, template } });
const numberedFiles = (p, count, template) => ({ path: p, numberedFiles: { count, template } });
const expand = (template, i) => template.split("{n}").join(String(i).padStart(3, "0"));

const trees = {
  repo: [
    dir(".git"),
    text(".git/HEAD", "ref: refs/heads/main\n"),
    text(".gitignore", "ignored.txt\n*.log\nbuild/\n"),
    text("ignored.txt", "needle in an ignored file\n"),
    text("app.log", "needle in a log\n"),
    text("build/out.js", "needle in build output\n"),
    text("src/main.ts", "import { util } from './util';\n// TODO: needle one\nconst x = util();\n// todo lower\nexport default x;\n"),
    text("src/util.ts", "export function util() {\n  return 'Needle';\n}\n"),
    text("src/util.spec.ts", "test('needle', () => {});\n"),
    text("src/nested/.gitignore", "secret.ts\n"),
    text("src/nested/secret.ts", "needle secret\n"),
    text("src/nested/deep.ts", "line one\nneedle deep\nline three\nline four\nneedle again\nline six\n"),
    text(".hidden/config.json", "{ \"needle\": true }\n"),
    text(".env", "NEEDLE=1\n"),
    text(".rgignore", "rgonly.txt\n"),
    text(".fdignore", "fdonly.txt\n"),
    text("rgonly.txt", "needle hidden from rg\n"),
    text("fdonly.txt", "needle hidden from fd\n"),
    text("docs/README.md", "# Readme\nSee the needle.\n"),
    text("docs/Guide.MD", "guide needle\n"),
    text("docs/a b.txt", "spaced needle\n"),
    text("..weird/file.txt", "needle under a dotted dir\n"),
    bytes("bin.dat", Buffer.from("needle\0binary\nneedle\n")),
    bytes("bom.txt", Buffer.from("\uFEFFneedle after bom\nsecond\n")),
    text("crlf.txt", "first\r\nneedle crlf\r\nthird\r\n"),
    text("cr.txt", "alpha\rneedle cr\rgamma\nneedle after\n"),
    text("long.txt", `short needle\n${"x".repeat(300)}needle${"y".repeat(400)}\nend\n`),
    text("unicode.txt", "ünïcødé needle ✓ 😀\nNÄDEL\n"),
    bytes("latin1.txt", Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x20, 0xe9, 0x74, 0xe9, 0x0a])),
    numberedLines("many/one.txt", 250, `needle {n} ${"m".repeat(260)}`),
    link("link-to-src", "src"),
    link("broken-link", "missing-target"),
    text("dash.txt", "-v is a flag\n--long too\n"),
  ],
  plain: [
    text(".gitignore", "skip.txt\n"),
    text("skip.txt", "needle skipped only by fd\n"),
    text("keep.txt", "needle kept\n"),
    text("sub/.ignore", "dropped.txt\n"),
    text("sub/dropped.txt", "needle dropped\n"),
  ],
  wide: [numberedFiles("w", 700, `{n}_${"n".repeat(80)}.txt`)],
  names: [
    ...[
      "a-b", "ab", "a_b", "a.b", "a b", "ac", "a-c", "a.c", "a0", "a1b", "a10", "a2", ".a", "_a", "-a",
      "b", ".gitignore", "README.md", "readme-old", "résumé.txt", "resume.txt", "resumf.txt", "éa", "eb",
      "Zeta", "alpha", "Beta", "gamma.rs", "Gamma_old.rs", "ñandú", "nz", "ω-omega", "я", "中文",
      "😀.txt", "#hash", "~tilde", "$dollar", "@at", "(paren)", "[bracket]", "x+y", "x=y", "file10.txt",
      "file2.txt", "File1.txt", "straße", "strasse", "æsir", "aesop",
    ].map((n) => text(n, "")),
    dir("dir-z"),
    dir("Dir_a"),
    link("link-dir", "dir-z"),
    link("dangling", "nowhere"),
  ],
  empty: [dir("nothing")],
};

function build(root, entries) {
  for (const e of entries) {
    const full = path.join(root, e.path);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    if (e.dir) fs.mkdirSync(full, { recursive: true });
    else if (e.numberedLines) {
      const { count, template } = e.numberedLines;
      fs.writeFileSync(full, Array.from({ length: count }, (_, i) => expand(template, i + 1)).join("\n"));
    } else if (e.numberedFiles) {
      const { count, template } = e.numberedFiles;
      fs.mkdirSync(full, { recursive: true });
      for (let i = 1; i <= count; i++) fs.writeFileSync(path.join(full, expand(template, i)), "");
    }
    else if (e.link) fs.symlinkSync(e.link, full);
    else if (e.bytes) fs.writeFileSync(full, Buffer.from(e.bytes));
    else fs.writeFileSync(full, e.text);
  }
}

const grep = (args, compare = "sorted") => ({ tool: "grep", args, compare });
const find = (args, compare = "sorted") => ({ tool: "find", args, compare });
const ls = (args, compare = "exact") => ({ tool: "ls", args, compare });

const runs = {
  repo: [
    grep({ pattern: "needle" }, "count"),
    grep({ pattern: "needle", ignoreCase: true }, "count"),
    grep({ pattern: "needle", path: "src", limit: 2 }, "count"),
    grep({ pattern: "TODO|todo" }),
    grep({ pattern: "todo", ignoreCase: true, path: "src" }),
    grep({ pattern: "needle", path: "src/nested/deep.ts" }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", context: 1 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", context: 3 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", context: 1.5 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", context: -2 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", limit: 1 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", limit: 0 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/deep.ts", limit: 1.5 }, "exact"),
    grep({ pattern: "needle", path: "src/nested/secret.ts" }, "exact"),
    grep({ pattern: "needle", path: "bin.dat" }, "exact"),
    grep({ pattern: "needle", path: "bin.dat", context: 1 }, "exact"),
    grep({ pattern: "^needle", path: "bom.txt" }, "exact"),
    grep({ pattern: "needle", path: "bom.txt", context: 1 }, "exact"),
    grep({ pattern: "needle", path: "crlf.txt" }, "exact"),
    grep({ pattern: "needle", path: "crlf.txt", context: 1 }, "exact"),
    grep({ pattern: "needle", path: "cr.txt" }, "exact"),
    grep({ pattern: "needle", path: "cr.txt", context: 1 }, "exact"),
    grep({ pattern: "needle", path: "long.txt" }, "exact"),
    grep({ pattern: "needle", path: "long.txt", context: 1 }, "exact"),
    grep({ pattern: "ünïcødé|nädel", ignoreCase: true, path: "unicode.txt" }, "exact"),
    grep({ pattern: "needle", path: "latin1.txt" }, "exact"),
    grep({ pattern: "needle", path: "many" }, "exact"),
    grep({ pattern: "needle", path: "many", limit: 200 }, "exact"),
    grep({ pattern: "needle 00", path: "many", context: 2 }, "exact"),
    grep({ pattern: "needle", path: "..weird" }, "exact"),
    grep({ pattern: "a.b", literal: true, path: "src" }),
    grep({ pattern: "(", literal: true, path: "src" }),
    grep({ pattern: "-v", path: "dash.txt" }, "exact"),
    grep({ pattern: "--long", path: "dash.txt" }, "exact"),
    grep({ pattern: "needle", glob: "*.ts" }),
    grep({ pattern: "needle", glob: "**/*.spec.ts" }),
    grep({ pattern: "needle", glob: "src/*.ts" }),
    grep({ pattern: "needle", glob: "!*.ts", path: "src" }),
    grep({ pattern: "needle", glob: "*.md", path: "docs" }),
    grep({ pattern: "needle", path: "link-to-src" }),
    grep({ pattern: "nothing-matches-this" }),
    grep({ pattern: "(unclosed" }),
    grep({ pattern: "\\p{Foo}" }),
    grep({ pattern: "a\\x00" }),
    grep({ pattern: "needle", glob: "[" }),
    grep({ pattern: "needle", path: "missing" }),
    grep({ pattern: "needle", path: "broken-link" }),
    find({ pattern: "*.ts" }),
    find({ pattern: "*" }),
    find({ pattern: "**" }),
    find({ pattern: "" }),
    find({ pattern: "*.md" }),
    find({ pattern: "*.MD" }),
    find({ pattern: "src/**/*.ts" }),
    find({ pattern: "**/nested/*" }),
    find({ pattern: "nested/*.ts" }),
    find({ pattern: "*.spec.ts", path: "src" }),
    find({ pattern: "*.{json,env}" }),
    find({ pattern: ".*" }),
    find({ pattern: "*.txt", path: "docs" }),
    find({ pattern: "link*" }),
    find({ pattern: "*.ts", path: "link-to-src" }),
    find({ pattern: "no-such-*" }),
    find({ pattern: "*.ts", limit: 2 }, "count"),
    find({ pattern: "*.ts", limit: 0 }),
    find({ pattern: "*.ts", limit: 2.5 }),
    find({ pattern: "*.ts", limit: -3 }),
    find({ pattern: "*.ts", limit: -1 }),
    find({ pattern: "[" }),
    find({ pattern: "*.ts", path: "missing" }),
    find({ pattern: "*.ts", path: "src/main.ts" }),
    ls({}),
    ls({ path: "src" }),
    ls({ path: "src", limit: 2 }),
    ls({ path: "src", limit: 0 }),
    ls({ path: "src", limit: 1.5 }),
    ls({ path: "link-to-src" }),
    ls({ path: "missing" }),
    ls({ path: "src/main.ts" }),
    ls({ path: "broken-link" }),
  ],
  plain: [
    grep({ pattern: "needle" }),
    find({ pattern: "*.txt" }),
    ls({}),
  ],
  wide: [
    find({ pattern: "*.txt" }, "count"),
    find({ pattern: "*.txt", limit: 10 }, "count"),
    ls({ path: "w" }),
    ls({ path: "w", limit: 600 }),
    grep({ pattern: "x", path: "w" }),
  ],
  names: [ls({}), ls({ limit: 10 }), find({ pattern: "*" })],
  empty: [ls({ path: "nothing" }), find({ pattern: "*", path: "nothing" }), grep({ pattern: "x", path: "nothing" })],
};

// What the test compares: the whole text (its length and ends when long), its lines in any
// order, or only how many lines there are; the notices always exactly.
function expectation(compare, text) {
  const at = text.lastIndexOf("\n\n[");
  const [body, notice] = at >= 0 && text.endsWith("]") ? [text.slice(0, at), text.slice(at)] : [text, ""];
  if (compare === "count") return { lines: body.split("\n").length, notice };
  if (compare === "sorted" || text.length <= 2000) return { text };
  return { length: text.length, head: text.slice(0, 600), tail: text.slice(-600) };
}

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "search-")));
const cases = [];
for (const [tree, entries] of Object.entries(trees)) {
  const root = path.join(base, tree);
  fs.mkdirSync(root);
  build(root, entries);
  process.chdir(root);
  const tools = {
    grep: createGrepToolDefinition(root),
    find: createFindToolDefinition(root),
    ls: createLsToolDefinition(root),
  };
  for (const run of runs[tree]) {
    const c = { tree, ...run };
    try {
      const result = await tools[run.tool].execute("call", run.args, undefined, undefined, {});
      Object.assign(c, expectation(run.compare, result.content[0].text));
      if (result.details !== undefined) {
        // The cut text is the result's text without its notices; only its size is kept here.
        const { content, ...truncation } = result.details.truncation ?? {};
        c.details = result.details.truncation ? { ...result.details, truncation } : result.details;
      }
    } catch (error) {
      c.error = error.message.split(root).join("<root>");
    }
    cases.push(c);
  }
}
process.chdir(os.tmpdir());
fs.rmSync(base, { recursive: true, force: true });
fs.writeFileSync(out, JSON.stringify({ trees, cases }) + "\n");
console.log(`${cases.length} cases -> ${out}`);
