// mcp.json turns autoEnableCodemode off. The extension registers, while loading, a stdio MCP
// server whose tools are reached through codemode (the default exposure), which nothing
// activates: Pi 1.5.2 warns at the session's start that its tools cannot be called. The server
// is a Node script written beside the extension.
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
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "docs.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("docs", { command: process.execPath, args: [script] });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", { active: pi.getActiveTools() });
  });
}
