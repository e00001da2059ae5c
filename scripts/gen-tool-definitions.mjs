// Writes the definitions of the original's eight built-in tools as data
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
import { original } from "./pi-original.mjs";

const [piDir] = process.argv.slice(2);
const { createAllToolDefinitions } = await original(piDir).agentModule("core/tools/index.js");
const cwd = "/CWD-PLACEHOLDER";
// powershell, Windows' shell tool, is defined (and registered) on every platform.
const definitions = Object.values(createAllToolDefinitions(cwd)).map((d) => {
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
