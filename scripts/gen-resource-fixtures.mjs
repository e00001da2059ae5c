// Writes how the original reads skills and prompt templates (core/tests/fixtures/resource_cases.json):
// `parseFrontmatter` on SKILL.md-like texts, each file loaded as a skill (`loadSkillsFromDir` on a
// folder holding it: name, description, flags and warnings) and as a prompt template
// (`loadPromptTemplates`: name, description, argument hint, body), `parseCommandArgs`,
// `substituteArgs`, `expandPromptTemplate`, and the session's `/skill:` expansion
// (`_expandSkillCommand`), and which files of skill folders holding ignore files load. Paths
// are printed relative to the temporary folder as `<dir>`.
//
//   node scripts/gen-resource-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import os from "os";
import path from "path";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { parseFrontmatter } = await pi.agentModule("utils/frontmatter.js");
const { loadSkillsFromDir } = await pi.agentModule("core/skills.js");
const { loadPromptTemplates, parseCommandArgs, substituteArgs, expandPromptTemplate } = await pi.agentModule("core/prompt-templates.js");
const { stripFrontmatter } = await pi.agentModule("utils/frontmatter.js");
// agent-session.js imports packages the install does not hold; its `_expandSkillCommand` method
// is taken from the source and run as it is.
const sessionSource = fs.readFileSync(path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist/core/agent-session.js"), "utf8");
const method = sessionSource.match(/\n    _expandSkillCommand\(text\) \{\n([\s\S]*?)\n    \}\n/);
if (!method) throw new Error("no _expandSkillCommand in agent-session.js");
const expandSkillCommand = new Function("readFileSync", "stripFrontmatter", `return function (text) {\n${method[1]}\n};`)(fs.readFileSync, stripFrontmatter);

const files = [
  "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\n# PDF\n\nUse pdftotext.\n",
  "---\ndescription: Plain description only\n---\nBody line\n",
  "---\nname: Bad_Name\ndescription: x\n---\nbody",
  "---\nname: -lead\ndescription: x\n---\n",
  "---\nname: two--hyphens-\ndescription: x\n---\n",
  "---\nname: " + "a".repeat(70) + "\ndescription: long name\n---\n",
  "---\nname: big\ndescription: " + "d".repeat(1030) + "\n---\n",
  "---\nname: nodesc\n---\nNo description here\n",
  "---\nname: emptydesc\ndescription: \"   \"\n---\n",
  "---\nname: numdesc\ndescription: 42\n---\n",
  "---\nname: hidden\ndescription: 'Quoted: with colon'\ndisable-model-invocation: true\n---\nSecret\n",
  "---\nname: notbool\ndescription: \"Double \\\"quoted\\\" \\u00e9\"\ndisable-model-invocation: \"true\"\n---\n",
  "---\r\nname: crlf\r\ndescription: Windows lines\r\n---\r\nBody\r\n",
  "\ufeff---\nname: bom\ndescription: With a BOM # not a comment?\n---\nText",
  "---\nname: comment\ndescription: value # a comment\n# full comment\n---\n\n\n  Body after blanks  \n\n",
  "No frontmatter at all\nsecond line",
  "---\nname: unclosed\ndescription: never closed\n",
  "---\n---\nEmpty frontmatter",
  "---\nname: hint\ndescription: With hint\nargument-hint: <file> [mode]\n---\nReview $1 in ${2:-fast} mode: $@",
  "---\nname: nulls\ndescription: ~\n---\nFirst line of a body that is longer than sixty characters, to be cut\n",
  "---\nname: 'single ''escaped'''\ndescription: yes\n---\n",
  "---\nname: spaced   \ndescription:    lots of space   \n---\n",
  "---\nname: true\ndescription: null\n---\n",
  "---\nname: dash-name\ndescription: >\n  Folded\n  text\n---\n",
  "---\nname: lit\ndescription: |\n  Literal\n  text\n---\n",
  "---\nname: [a, b]\ndescription: list name\n---\n",
  "---\nname: x\ndescription: : bad\n  : worse\n---\n",
  "---\nname: a: b\ndescription: x\n---\n",
  "---\nname: dup\nname: dup2\ndescription: x\n---\n",
  "---\nname: at\ndescription: @handle\n---\n",
  "---\nname: multi\ndescription: first part\n  second part\n\n  after blank\n---\nBody",
  "---\nname: trail\ndescription: \"quoted\" trailing\n---\n",
  "---\nname: nums\ndescription: 1.5\n---\n",
  "---\nname: yes\ndescription: yes\ndisable-model-invocation: True\n---\n",
  "---\nname: meta\ndescription: has metadata\nmetadata:\n  k: v\n  list:\n    - a\nallowed-tools:\n  - read\n---\nB",
  "---\nname: colon\ndescription: Use when: the user asks\n---\n",
  "---\nname: url\ndescription: see http://example.com/x#frag and a:b\n---\n",
  "---\nname: keep\ndescription: |-\n  no trailing\n  newline\nlicense: MIT\n---\n",
  "---\nname: fold\ndescription: >-\n  one\n  two\n\n  three\n---\n",
  "---\n  name: indented\n  description: whole map indented\n---\n",
  "---\nname: tabs\ndescription:\tafter tab\n---\n",
  "--- \nname: spacedash\ndescription: x\n---\n",
  "---\nname: close\ndescription: x\n---more\nBody",
  "---\n- a\n- b\n---\nList frontmatter",
  "---\njust text\n---\nScalar frontmatter",
  // YAML forms beyond the common ones: block scalars with chomping and indentation indicators,
  // quoted strings across lines and with escapes, lists and maps in flow and block style,
  // comments in odd places, anchors, tags, documents markers and keys quoted.
  "---\nname: keepnl\ndescription: |+\n  kept\n\n\n---\n",
  "---\nname: indind\ndescription: |2\n    two extra\n  base\n---\n",
  "---\nname: foldmore\ndescription: >\n  a\n    more indented\n  b\n---\n",
  "---\nname: dq\ndescription: \"first\n  second\n\n  third\"\n---\n",
  "---\nname: sq\ndescription: 'one\n  two'\n---\n",
  "---\nname: esc\ndescription: \"tab\\there \\x41 \\u263A \\\\ \\/ end\\\n  joined\"\n---\n",
  "---\nname: flowmap\ndescription: {a: 1, b: [x, y]}\n---\n",
  "---\nname: tags\ndescription: !!str 123\nother: !!int \"7\"\n---\n",
  "---\nname: anchor\ndescription: &d shared text\ncopy: *d\n---\n",
  "---\n\"name\": quotedkey\n'description': quoted key too\n---\n",
  "---\nname: seqind\nallowed-tools:\n- read\n- bash  # comment\n-   edit\ndescription: x\n---\n",
  "---\n# leading comment\nname: c1 #not a comment? no, a comment\ndescription: x#y\n---\n",
  "---\nname: nested\ndescription: x\nmetadata:\n  deep:\n    deeper: [1, 2.5, -3, 0x1F, 1e3, .inf, ~, null, Null, TRUE, off]\n---\n",
  "---\nname: seqmaps\ndescription: x\nlist:\n  - a: 1\n    b: 2\n  - c\n---\n",
  "---\nname: emptyval\ndescription:\nother: ''\n---\n",
  "---\nname: docend\ndescription: x\n...\n---\n",
  "---\nname: multiflow\ndescription: [a,\n  b, c]\n---\n",
  "---\nname: \"  padded  \"\ndescription: \"\"\n---\n",
  "---\nname: litcomment\ndescription: |\n  # not a comment\n  text # kept\n---\n",
  "---\nname: explicit\n? description\n: explicit key\n---\n",
  "---\nname: numkey\n1: one\ndescription: x\n---\n",
  "---\nname: date\ndescription: 2024-01-02\n---\n",
  "---\nname: octal\ndescription: 0o17 and more\nv: 0o17\nw: 012\n---\n",
  "---\nname: blankfold\ndescription: >\n\n  after blank\n---\n",
  "---\nname: tabbed\ndescription: x\n\tbad: tab\n---\n",
  "---\nname: badindent\ndescription: x\n  extra: y\n---\n",
  "---\nname: unterminated\ndescription: \"open\n---\n",
  "---\nname: seqseq\ndescription: x\nl:\n  - - a\n    - b\n  - c: [1, \"x, y\", 'it''s']\n    d: {}\n---\n",
  "---\nname: chompind\ndescription: >2-\n   lead\n  next\n\n---\n",
  "---\nname: sqblank\ndescription: 'a\n\n\n  b  '\n---\n",
  "---\nname: flowkeys\ndescription: {\"q k\": v, plain: , bare}\n---\n",
  "---\nname: aliasmissing\ndescription: *nothing\n---\n",
  "---\nname: customtag\ndescription: !custom x\n---\n",
  "---\nname: flowtrail\ndescription: [a, b] trailing\n---\n",
  "---\nname: afterend\ndescription: x\n...\nmore: y\n---\n",
];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "resources-"));
const rel = (text) => (typeof text === "string" ? text.split(tmp).join("<dir>") : text);
const frontmatter = [];
const skills = [];
const templates = [];
files.forEach((content, i) => {
  let parseMessage = null;
  try {
    const { frontmatter: fm, body } = parseFrontmatter(content);
    frontmatter.push({ content, frontmatter: fm, body });
  } catch (e) {
    parseMessage = e.message;
    frontmatter.push({ content, error: true });
  }
  const dir = path.join(tmp, `case${i}`, "skill-dir");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "SKILL.md"), content);
  const loaded = loadSkillsFromDir({ dir, source: "user" });
  skills.push({
    content,
    skill: loaded.skills[0]
      ? { name: loaded.skills[0].name, description: loaded.skills[0].description, disableModelInvocation: loaded.skills[0].disableModelInvocation }
      : null,
    // The YAML parser's own error (its wording is the `yaml` package's) is recorded as a flag.
    warnings: loaded.diagnostics.map((d) => (d.message.includes("\n") || !["warning"].includes(d.type) ? null : d.message)).filter((m) => m !== null && !m.startsWith("Nested") && !m.includes("at line") && m !== parseMessage),
    parseError: parseMessage !== null || loaded.diagnostics.some((d) => d.message.includes("at line") || d.message.includes("\n")),
  });
  const promptDir = path.join(tmp, `case${i}`, "prompts");
  fs.mkdirSync(promptDir, { recursive: true });
  fs.writeFileSync(path.join(promptDir, "tpl.md"), content);
  const result = loadPromptTemplates({ cwd: tmp, agentDir: path.join(tmp, "none"), promptPaths: [promptDir], includeDefaults: false });
  const t = result.templates[0];
  templates.push({ content, template: t ? { name: t.name, description: t.description, argumentHint: t.argumentHint ?? null, content: t.content } : null });
});

const argStrings = ["", "a b c", "  spaced   out  ", "\"quoted arg\" next", "'single q' x", "say \"hi \\\"there\\\"\"", "it's fine", "\"unclosed rest", "a \"\" b", "tab\tsep\nnewline", "'', \"\"", "x'y' \"z\"w"];
const commandArgs = argStrings.map((input) => ({ input, args: parseCommandArgs(input) }));
const templatesText = ["$1 and $2", "$@", "$ARGUMENTS!", "${1:-def} ${3:-none}", "${@:-empty}", "${ARGUMENTS:-x}", "${@:2}", "${@:2:1}", "${@:0}", "$10 $1", "$$1 \\$1", "${2:-} end", "no args", "${@:1:0}", "$ARGUMENTSX $@@"];
const argSets = [[], ["one"], ["one", "two", "three"], ["", "b"], ["$1", "$@"]];
const substitutions = [];
for (const template of templatesText) for (const args of argSets) substitutions.push({ template, args, result: substituteArgs(template, args) });

const tpls = [
  { name: "review", content: "Review $1 with ${2:-care}. All: $@" },
  { name: "plain", content: "Plain body" },
  { name: "with.dot", content: "Dot $ARGUMENTS" },
];
const inputs = ["/review main.rs", "/review \"a b\" fast extra", "/plain", "/plain   ", "/review", "/missing x", "not a command", "/", "/ review x", "/with.dot a\nb", "/review\tx", "//review"];
const expansions = inputs.map((text) => ({ text, result: expandPromptTemplate(text, tpls) }));

const skillDir = path.join(tmp, "sk", "demo");
fs.mkdirSync(skillDir, { recursive: true });
const skillFile = path.join(skillDir, "SKILL.md");
fs.writeFileSync(skillFile, "---\nname: demo\ndescription: Demo skill\n---\n\n# Demo\n\nRun ./run.sh\n\n");
const fakeSession = {
  resourceLoader: { getSkills: () => ({ skills: [{ name: "demo", description: "Demo skill", filePath: skillFile, baseDir: skillDir }] }) },
  _extensionRunner: { emitError: () => {} },
};
const skillInputs = ["/skill:demo", "/skill:demo  do it  now ", "/skill:demo\nnext line", "/skill:other x", "/skill:", "skill:demo", " /skill:demo", "/skill:demo\tx y"];
const skillExpansions = skillInputs.map((text) => ({ text, result: rel(expandSkillCommand.call(fakeSession, text)) }));

// Skill folders with .gitignore / .ignore / .fdignore files: the files `loadSkillsFromDir`
// loads from each tree (paths relative to the tree's root).
const skill = (name) => `---\nname: ${name}\ndescription: The ${name} skill.\n---\nBody\n`;
const ignoreTrees = [
  { ".gitignore": "drafts/\n*.tmp.md\n# a comment\n\n", "top.md": skill("top"), "scratch.tmp.md": skill("scratch"),
    "drafts/wip/SKILL.md": skill("wip"), "kept/SKILL.md": skill("kept") },
  { ".ignore": "/anchored.md\nsub\n!sub/keep/\n", "anchored.md": skill("anchored"),
    "deep/anchored.md": skill("deep-anchored"), "deep/x/SKILL.md": skill("deep-x"), "sub/SKILL.md": skill("sub"),
    "sub/keep/SKILL.md": skill("keep") },
  { ".fdignore": "a/SKILL.md\n", "a/SKILL.md": skill("a"), "a/inner/SKILL.md": skill("a-inner"),
    "b/.gitignore": "hidden/\n\\#literal.md\n", "b/hidden/SKILL.md": skill("b-hidden"), "b/shown/SKILL.md": skill("b-shown"),
    "c/.gitignore": "*\n", "c/SKILL.md": skill("c") },
];
const ignored = ignoreTrees.map((tree, i) => {
  const root = path.join(tmp, `ignore${i}`);
  for (const [file, content] of Object.entries(tree)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), content);
  }
  const loaded = loadSkillsFromDir({ dir: root, source: "user" });
  return { tree, loaded: loaded.skills.map((s) => path.relative(root, s.filePath).split(path.sep).join("/")) };
});

fs.rmSync(tmp, { recursive: true, force: true });
fs.writeFileSync(out, JSON.stringify({ frontmatter, skills, templates, commandArgs, substitutions, expansions, skillExpansions, ignored }, null, 1) + "\n");
console.log(`${files.length} files, ${substitutions.length} substitutions, ${expansions.length + skillExpansions.length} expansions -> ${out}`);
