// An extension that registers a small stdio MCP server after loading (in session_start), its
// tools deferred, without activating tool_search itself, and unregisters it in a command. The
// server is a Node script written beside the extension, with one tool, `count`. Each run's end
// appends the active tools.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: "docs", version: "1.0.0" } });
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "count", description: "Counts the documents.", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "3" }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "docs.cjs");
  writeFileSync(script, SERVER);
  pi.on("session_start", () => {
    pi.registerMcpServer("docs", {
      command: process.execPath,
      args: [script],
      exposure: "deferred",
      description: "The project's documents.",
    });
  });
  pi.registerCommand("drop", {
    description: "Unregisters the docs server",
    handler: async () => {
      pi.unregisterMcpServer("docs");
    },
  });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", { active: pi.getActiveTools() });
  });
}
