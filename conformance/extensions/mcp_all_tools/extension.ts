// An extension that registers two small stdio MCP servers (Node scripts it writes beside itself):
// `notes` exposed directly, with a description and server instructions, offering a tool with
// annotations and a title, and one with neither a description nor annotations; `docs` deferred,
// with a tool whose only description is its title. The model searches the tools (which waits for
// `docs`) and calls one; after the run the extension keeps each MCP tool's `pi.getAllTools()`
// entry whole (namespace, annotations, sourceInfo), and which of them are active.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const server = (name: string, instructions: string | undefined, tools: unknown[]) => `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: ${JSON.stringify(name)}, version: "1.0.0" },
            ${instructions ? `instructions: ${JSON.stringify(instructions)},` : ""} });
  } else if (request.method === "tools/list") {
    reply({ tools: ${JSON.stringify(tools)} });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "2" }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const notes = join(process.cwd(), "notes.cjs");
  writeFileSync(notes, server("notes", "Notes are short.", [
    {
      name: "count",
      title: "Count notes",
      description: "Counts the notes.",
      inputSchema: { type: "object", properties: { tag: { type: "string" } } },
      outputSchema: { type: "object", properties: { total: { type: "number" } } },
      annotations: { title: "Counter", readOnlyHint: true, destructiveHint: false, idempotentHint: true,
                     openWorldHint: false, custom: "kept?" },
    },
    { name: "wipe.all", inputSchema: { type: "object" } },
  ]));
  const docs = join(process.cwd(), "docs.cjs");
  writeFileSync(docs, server("docs", undefined, [
    { name: "lookup", annotations: { title: "Look up a page" }, inputSchema: { type: "object" } },
  ]));
  pi.registerMcpServer("notes", { command: process.execPath, args: [notes], exposure: "direct",
                                  description: "The team's notes." });
  pi.registerMcpServer("docs", { command: process.execPath, args: [docs], exposure: "deferred" });
  pi.on("agent_end", () => {
    pi.appendEntry("mcp-tools", {
      all: pi.getAllTools().filter((t: any) => t.name.startsWith("mcp__")),
      active: pi.getActiveTools().filter((name: string) => name.startsWith("mcp__")),
    });
  });
}
