// An extension that registers small stdio MCP servers after loading (in session_start), unregisters one
// in a command, and reports every mcp_servers_change it hears (a notice and an entry). Each server
// is a Node script written beside the extension, with one tool, `shout`, exposed directly.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  if (request.method === "initialize") {
    send({ jsonrpc: "2.0", id: request.id, result: {
      protocolVersion: request.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: "shouter", version: "1.0.0" },
    } });
  } else if (request.method === "tools/list") {
    send({ jsonrpc: "2.0", id: request.id, result: { tools: [{
      name: "shout",
      description: "Returns the text in capitals.",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    }] } });
  } else if (request.method === "tools/call") {
    const text = String(request.params.arguments?.text ?? "").toUpperCase();
    send({ jsonrpc: "2.0", id: request.id, result: { content: [{ type: "text", text }] } });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "shouter.cjs");
  writeFileSync(script, SERVER);
  pi.on("mcp_servers_change", (event: any, ctx: any) => {
    const names = event.servers.map((server: any) => server.name);
    ctx.ui.notify(`servers now: ${names.join(", ") || "none"}`, "info");
    pi.appendEntry("mcp-seen", { names, listed: pi.getMcpServers().map((server: any) => server.name) });
  });
  pi.on("session_start", () => {
    pi.registerMcpServer("later", { command: process.execPath, args: [script], exposure: "direct" });
    pi.registerMcpServer("gone", { command: process.execPath, args: [script], exposure: "direct" });
  });
  pi.registerCommand("drop", {
    description: "Unregisters the gone server",
    handler: async () => {
      pi.unregisterMcpServer("gone");
    },
  });
}
