// Runs Pi 1.5.2's own `tool_search` over the tools and queries on stdin and prints each call's
// result (or the error it throws) as JSON lines. argv[2]: the install's bundle chunk folder.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
let toolSearch;
for (const file of readdirSync(dir).filter((f) => f.endsWith(".js"))) {
  const source = readFileSync(join(dir, file), "utf8");
  if (!source.includes("createToolSearchToolDefinition")) continue;
  const module = await import(join(dir, file));
  if (module.createToolSearchToolDefinition) toolSearch = module.createToolSearchToolDefinition;
}
const { tools, calls } = JSON.parse(readFileSync(0, "utf8"));
for (const args of calls) {
  let active = [];
  const definition = toolSearch({
    tools: {
      getActiveTools: () => [...active],
      getAllTools: () => tools.map((t) => ({ ...t, exposure: "deferred" })),
      setActiveTools: (names) => { active = names; },
    },
  });
  try {
    const result = await definition.execute("call", args);
    console.log(JSON.stringify({ ok: { text: result.content[0].text, loaded: result.details.loaded, active } }));
  } catch (error) {
    console.log(JSON.stringify({ err: error.message }));
  }
}
