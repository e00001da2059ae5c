// Writes the definitions of pi-coding-agent 1.5.2's seven built-in tools as data
// (core/src/tools/definitions.json): name, label, description, prompt snippet and guidelines,
// the JSON schema of the parameters and the constrained sampling the tool asks for, exactly as
// the original sends, shows and records them (a system message's toolsAdded).
//
//   node scripts/gen-tool-definitions.mjs <pi 1.5.2 install dir>
//
// Run it with the Node of the install (<dir>/node/bin/node). The tool modules of 1.5.2's dist
// import pi-tui and pi-ai, which the package ships only inlined in its bundle, so the
// definitions are taken from the bundle's index, which exports each create…ToolDefinition.
import fs from "fs";
import path from "path";

const [piDir] = process.argv.slice(2);
const dist = path.join(piDir, "node_modules/@earendil-works/pi-coding-agent/dist");
const bundle = await import(path.join(dist, "bundle/index.js"));
const cwd = "/CWD-PLACEHOLDER";
const names = { read: "Read", bash: "Bash", edit: "Edit", write: "Write", grep: "Grep", find: "Find", ls: "Ls" };
const definitions = Object.entries(names).map(([name, typeName]) => {
  const d = bundle[`create${typeName}ToolDefinition`](cwd);
  if (d.name !== name) throw new Error(`create${typeName}ToolDefinition made ${d.name}`);
  const text = JSON.stringify(d.parameters) + d.description + (d.promptSnippet ?? "");
  if (text.includes(cwd)) throw new Error(`${d.name}: the definition depends on the working directory`);
  return {
    name: d.name, label: d.label, description: d.description,
    ...(d.promptSnippet ? { promptSnippet: d.promptSnippet } : {}),
    ...(d.promptGuidelines?.length ? { promptGuidelines: d.promptGuidelines } : {}),
    parameters: JSON.parse(JSON.stringify(d.parameters)),
    ...(d.constrainedSampling ? { constrainedSampling: d.constrainedSampling } : {}),
  };
});
const out = new URL("../core/src/tools/definitions.json", import.meta.url);
fs.writeFileSync(out, JSON.stringify(definitions, null, 1) + "\n");
console.log(`${definitions.length} tools: ${definitions.map((d) => d.name).join(", ")}`);
