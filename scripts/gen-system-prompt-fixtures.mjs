// Extracts Pi 1.5.2's system prompt texts (core/src/system_prompt/preamble.txt and docs.txt,
// their `${...}` placeholders kept), each built-in tool's prompt contribution and constrained
// sampling (the snippet, guidelines and constrainedSampling in core/src/tools/definitions.json;
// its other fields are gen-tool-definitions.mjs's) and writes what 1.5.2's own
// buildSystemPromptSections makes of a set of options, section by section, with the prompt
// rendered as the request sends it (core/tests/fixtures/system_prompt_cases.json).
//
//   node scripts/gen-system-prompt-fixtures.mjs <pi 1.5.2 install dir> <out file>
//
// Run it with the Node of the install (<dir>/node/bin/node). 1.5.2's system-prompt.js imports
// pi-ai, which the package only ships inlined in its bundle: the import is resolved to the
// bundle chunk that exports getSystemMessageText.
import fs from "fs";
import path from "path";
import { register } from "node:module";
import { pathToFileURL } from "url";

const [piDir, out] = process.argv.slice(2);
const dist = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const chunks = path.join(dist, "bundle/chunks");
const piAi = fs
  .readdirSync(chunks)
  .map((name) => path.join(chunks, name))
  .find((file) => /export\{[^}]*\bgetSystemMessageText\b/.test(fs.readFileSync(file, "utf8")));
if (!piAi) throw new Error("no bundle chunk exports getSystemMessageText");
const shim = `data:text/javascript,export * from ${JSON.stringify(pathToFileURL(piAi).href)};`;
const hook = `export async function resolve(s, c, next) {
  return s === "@earendil-works/pi-ai" ? { url: ${JSON.stringify(shim)}, shortCircuit: true } : next(s, c);
}`;
register(`data:text/javascript,${encodeURIComponent(hook)}`);

const source = fs.readFileSync(path.join(dist, "core/system-prompt.js"), "utf8");
const preamble = JSON.parse(source.match(/promptSections\.preamble =\s*("(?:[^"\\]|\\.)*");/)[1]);
const docsStart = source.indexOf("promptSections.docs = `") + "promptSections.docs = `".length;
const docs = source
  .slice(docsStart, source.indexOf("`;", docsStart))
  .replace("${getReadmePath()}", "${readmePath}")
  .replace("${getDocsPath()}", "${docsPath}")
  .replace("${getExamplesPath()}", "${examplesPath}");
const dataDir = new URL("../core/src/system_prompt/", import.meta.url);
fs.writeFileSync(new URL("preamble.txt", dataDir), preamble);
fs.writeFileSync(new URL("docs.txt", dataDir), docs);

// Each tool's contribution and constrained sampling, as its module declares them (the modules
// themselves import the TUI, so they are read, not imported).
const contributions = {};
const sampling = {};
for (const name of ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls"]) {
  const text = fs.readFileSync(path.join(dist, `core/tools/${name}.js`), "utf8");
  const block = text.match(/ToolSystemPromptContribution = (\{[\s\S]*?\n\});/)[1];
  contributions[name] = Function(`return ${block}`)();
  const constrained = text.match(/constrainedSampling: (\{[^}]*\})/);
  if (constrained) sampling[name] = Function(`return ${constrained[1]}`)();
}
const definitionsFile = new URL("../core/src/tools/definitions.json", import.meta.url);
const definitions = JSON.parse(fs.readFileSync(definitionsFile, "utf8")).map((d) => {
  const { promptSnippet, promptGuidelines, constrainedSampling, ...rest } = d;
  const { snippet, guidelines } = contributions[d.name];
  const ordered = {};
  for (const [key, value] of Object.entries(rest)) {
    ordered[key] = value;
    if (key === "description") {
      if (snippet) ordered.promptSnippet = snippet;
      if (guidelines.length > 0) ordered.promptGuidelines = guidelines;
    }
  }
  // powershell's module declares none itself (bash's shared shell definition does): the one
  // gen-tool-definitions.mjs read off the definition stays.
  const declared = sampling[d.name] ?? constrainedSampling;
  if (declared) ordered.constrainedSampling = declared;
  return ordered;
});
fs.writeFileSync(definitionsFile, JSON.stringify(definitions, null, 1) + "\n");

const { buildSystemPromptSections, buildSystemPrompt } = await import(path.join(dist, "core/system-prompt.js"));
const toolSnippets = Object.fromEntries(Object.entries(contributions).map(([n, c]) => [n, c.snippet]));
const toolGuidelines = Object.fromEntries(Object.entries(contributions).map(([n, c]) => [n, c.guidelines]));
const skills = [
  { name: "pdf", description: "Work with <PDF> & \"forms\"", filePath: "/skills/pdf/SKILL.md" },
  { name: "hidden", description: "not shown", filePath: "/skills/h/SKILL.md", disableModelInvocation: true },
];
const contextFiles = [{ path: "/repo/AGENTS.md", content: "Use tabs." }, { path: "/repo/sub/CLAUDE.md", content: "Be careful.\n" }];
const base = { cwd: "/repo", toolSnippets, toolGuidelines };
const options = [
  { name: "defaults", o: base },
  { name: "no-snippets", o: { cwd: "/repo" } },
  { name: "all-tools", o: { ...base, selectedTools: ["read", "bash", "edit", "write", "grep", "find", "ls"] } },
  { name: "bash-and-ls", o: { ...base, cwd: "C:\\Users\\me\\repo", selectedTools: ["bash", "ls"] } },
  { name: "powershell-without-explorers", o: { ...base, selectedTools: ["read", "powershell"] } },
  { name: "both-shells", o: { ...base, selectedTools: ["bash", "powershell", "edit"] } },
  { name: "no-bash", o: { ...base, selectedTools: ["read"], promptGuidelines: ["  Custom rule  ", "", "Be concise in your responses", "Custom rule"] } },
  { name: "context-skills-append", o: { ...base, contextFiles, skills, appendSystemPrompt: "Extra instructions." } },
  { name: "skills-with-bash-only", o: { ...base, selectedTools: ["bash"], skills } },
  { name: "skills-without-reader", o: { ...base, selectedTools: ["edit", "ls"], skills } },
  { name: "custom", o: { ...base, customPrompt: "You are a test bot.", appendSystemPrompt: "More.", contextFiles, skills } },
  { name: "custom-no-read", o: { ...base, customPrompt: "Custom.", selectedTools: ["bash"], skills } },
  { name: "empty-tools", o: { ...base, selectedTools: [] } },
  { name: "custom-sections", o: { ...base, sections: { notes: "Remember the build.", empty: "", cwd: "/elsewhere" } } },
];
// The install location is written as @PI@, as in the kit's traces.
const installDir = path.resolve(piDir);
const anonymous = (text) => text.split(installDir).join("@PI@");
const cases = options.map(({ name, o }) => ({
  name,
  options: o,
  sections: JSON.parse(anonymous(JSON.stringify(buildSystemPromptSections(o)))),
  prompt: anonymous(buildSystemPrompt(o)),
}));
const { getReadmePath, getDocsPath, getExamplesPath } = await import(path.join(dist, "config.js"));
const docPaths = { readme: anonymous(getReadmePath()), docs: anonymous(getDocsPath()), examples: anonymous(getExamplesPath()) };
fs.writeFileSync(out, JSON.stringify({ docs: docPaths, cases }, null, 1) + "\n");
console.log(`preamble ${preamble.length} chars, docs ${docs.length} chars; ${cases.length} cases -> ${out}`);
