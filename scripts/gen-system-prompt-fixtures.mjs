// Extracts pi-coding-agent 0.73.1's default system prompt template (core/src/system_prompt/
// default.txt, its `${...}` placeholders kept) and writes what its own buildSystemPrompt makes of
// a set of options (core/tests/fixtures/system_prompt_cases.json).
//
//   node scripts/gen-system-prompt-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import path from "path";

const [piDir, out] = process.argv.slice(2);
const dist = path.join(piDir, "node_modules/@mariozechner/pi-coding-agent/dist");
const source = fs.readFileSync(path.join(dist, "core/system-prompt.js"), "utf8");
const start = source.indexOf("let prompt = `") + "let prompt = `".length;
const end = source.indexOf("`;", start);
const template = source.slice(start, end);
fs.writeFileSync(new URL("../core/src/system_prompt/default.txt", import.meta.url), template);

const { buildSystemPrompt } = await import(path.join(dist, "core/system-prompt.js"));
const { getReadmePath, getDocsPath, getExamplesPath } = await import(path.join(dist, "config.js"));
const now = new Date();
const date = `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, "0")}-${String(now.getDate()).padStart(2, "0")}`;
const docs = { readme: getReadmePath(), docs: getDocsPath(), examples: getExamplesPath() };

const snippets = { read: "Read file contents", bash: "Execute bash commands (ls, grep, find, etc.)", edit: "Make precise file edits", write: "Create or overwrite files", grep: "Search file contents", find: "Find files", ls: "List directory contents" };
const skills = [
  { name: "pdf", description: "Work with <PDF> & \"forms\"", filePath: "/skills/pdf/SKILL.md" },
  { name: "hidden", description: "not shown", filePath: "/skills/h/SKILL.md", disableModelInvocation: true },
];
const contextFiles = [{ path: "/repo/AGENTS.md", content: "Use tabs." }, { path: "/repo/sub/CLAUDE.md", content: "Be careful.\n" }];
const options = [
  { name: "defaults", o: { cwd: "/repo", toolSnippets: snippets } },
  { name: "no-snippets", o: { cwd: "/repo" } },
  { name: "all-tools", o: { cwd: "/repo", selectedTools: ["read", "bash", "edit", "write", "grep", "find", "ls"], toolSnippets: snippets } },
  { name: "bash-and-ls", o: { cwd: "C:\\Users\\me\\repo", selectedTools: ["bash", "ls"], toolSnippets: snippets } },
  { name: "no-bash", o: { cwd: "/repo", selectedTools: ["read"], toolSnippets: snippets, promptGuidelines: ["  Custom rule  ", "", "Be concise in your responses", "Custom rule"] } },
  { name: "context-skills-append", o: { cwd: "/repo", toolSnippets: snippets, contextFiles, skills, appendSystemPrompt: "Extra instructions." } },
  { name: "skills-without-read", o: { cwd: "/repo", selectedTools: ["bash"], toolSnippets: snippets, skills } },
  { name: "custom", o: { cwd: "/repo", customPrompt: "You are a test bot.", appendSystemPrompt: "More.", contextFiles, skills } },
  { name: "custom-no-read", o: { cwd: "/repo", customPrompt: "Custom.", selectedTools: ["bash"], skills } },
  { name: "custom-tools-unset-skills", o: { cwd: "/repo", customPrompt: "Custom.", skills } },
  { name: "empty-tools", o: { cwd: "/repo", selectedTools: [], toolSnippets: snippets } },
];
// The install location is written as @PI@, as in the kit's traces.
const installDir = path.resolve(piDir);
const anonymous = (text) => text.split(installDir).join("@PI@");
const cases = options.map(({ name, o }) => ({ name, options: o, prompt: anonymous(buildSystemPrompt(o)) }));
const docPaths = Object.fromEntries(Object.entries(docs).map(([k, v]) => [k, anonymous(v)]));
fs.writeFileSync(out, JSON.stringify({ date, docs: docPaths, cases }, null, 1) + "\n");
console.log(`template ${template.length} chars; ${cases.length} prompts -> ${out}`);
