// Writes the definitions of the original's seven built-in tools as data
// (core/src/tools/definitions.json): name, label, description, prompt snippet and guidelines,
// and the JSON schema of the parameters, exactly as the original sends and shows them.
//
//   node scripts/gen-tool-definitions.mjs <pi install dir>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir] = process.argv.slice(2);
const { createAllToolDefinitions } = await original(piDir).agentModule("core/tools/index.js");
const cwd = "/CWD-PLACEHOLDER";
// 1.5.2 also defines powershell, Windows' shell tool, which this harness does not offer.
const definitions = Object.values(createAllToolDefinitions(cwd)).filter((d) => d.name !== "powershell").map((d) => {
  const text = JSON.stringify(d.parameters) + d.description + (d.promptSnippet ?? "");
  if (text.includes(cwd)) throw new Error(`${d.name}: the definition depends on the working directory`);
  return {
    name: d.name, label: d.label, description: d.description,
    ...(d.promptSnippet ? { promptSnippet: d.promptSnippet } : {}),
    ...(d.promptGuidelines ? { promptGuidelines: d.promptGuidelines } : {}),
    parameters: JSON.parse(JSON.stringify(d.parameters)),
  };
});
const out = new URL("../core/src/tools/definitions.json", import.meta.url);
fs.writeFileSync(out, JSON.stringify(definitions, null, 1) + "\n");
console.log(`${definitions.length} tools: ${definitions.map((d) => d.name).join(", ")}`);
