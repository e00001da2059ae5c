// Writes how the original's tools resolve the paths a model gives them
// (core/tests/fixtures/path_cases.json): `@` prefixes, Unicode spaces, `~`, and resolution
// against the working directory, with HOME set to a fixed directory. The read tool's fallbacks
// for macOS file names are recorded by creating each variant and asking the original which it
// picks.
//
//   node scripts/gen-path-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
process.env.HOME = "/home/tester";
const { expandPath, resolveToCwd, resolveReadPath } = await original(piDir).agentModule("core/tools/path-utils.js");

const inputs = ["a.txt", "./a.txt", "../up/b.txt", "dir//c.txt", "dir/./d/../e.txt", "/abs/x.txt", "/abs/../y/./z.txt", "~", "~/notes.md", "~user/x",
  "@src/main.rs", "@~/x", "my\u00a0file.txt", "thin\u2009space", "ideo\u3000space", "", ".", "..", "dir/", "trailing/..", "a\u202Fb", "~\u00a0/x"];
const cwds = ["/work/project", "/", "/work/project/"];
const resolved = [];
for (const cwd of cwds) for (const input of inputs) resolved.push({ input, cwd, expanded: expandPath(input), resolved: resolveToCwd(input, cwd) });

// Read fallbacks: for each name, create exactly one candidate variant and see what is picked.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "paths-"));
const names = ["Screenshot 2024-01-01 at 10.00.00 AM.png", "Capture d'écran.png", "café.txt", "plain.txt"];
const variants = (name) => [
  name,
  name.replace(/ (AM|PM)\./gi, "\u202F$1."),
  name.normalize("NFD"),
  name.replace(/'/g, "\u2019"),
  name.normalize("NFD").replace(/'/g, "\u2019"),
];
const reads = [];
for (const name of names) {
  for (const variant of [...new Set(variants(name))]) {
    fs.writeFileSync(path.join(dir, variant), "x");
    const picked = resolveReadPath(name, dir);
    reads.push({ name, existing: variant, picked: path.relative(dir, picked) });
    fs.rmSync(path.join(dir, variant));
  }
  reads.push({ name, existing: null, picked: path.relative(dir, resolveReadPath(name, dir)) });
}
fs.rmSync(dir, { recursive: true, force: true });
fs.writeFileSync(out, JSON.stringify({ home: process.env.HOME, resolved, reads }, null, 1) + "\n");
console.log(`${resolved.length} resolutions, ${reads.length} read fallbacks -> ${out}`);
