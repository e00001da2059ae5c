// Loaded with -e. The first load registers two stdio MCP servers (a Node script it writes
// beside itself): `shouter`, its tool direct, and `docs`, its tool deferred (so the mcp_servers
// section lists it). A command reloads (`ctx.reload()`): the new load registers the same script
// as `again` (direct) only; its tool is declared and called after the reload, the first load's
// servers' tools and the section gone. Each run's end appends the active tools, and each
// mcp_servers_change heard is appended.
import * as fs from "node:fs";
import * as path from "node:path";

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
  const script = path.join(process.cwd(), "shouter.cjs");
  fs.writeFileSync(script, SERVER);
  // The first load registers `shouter` and `docs`, the reload's `again` (the count kept on
  // globalThis).
  const g = globalThis as any;
  g.cliLoads = (g.cliLoads ?? 0) + 1;
  if (g.cliLoads === 1) {
    pi.registerMcpServer("shouter", { command: process.execPath, args: [script], exposure: "direct" });
    pi.registerMcpServer("docs", { command: process.execPath, args: [script], exposure: "deferred" });
  } else {
    pi.registerMcpServer("again", { command: process.execPath, args: [script], exposure: "direct" });
  }
  pi.registerCommand("reload-it", {
    description: "Reload the extensions",
    handler: async (_args: any, ctx: any) => {
      await ctx.reload();
    },
  });
  pi.on("mcp_servers_change", (event: any) => {
    pi.appendEntry("mcp-seen", { names: event.servers.map((server: any) => server.name) });
  });
  pi.on("agent_end", () => {
    pi.appendEntry("cli-tools", { active: pi.getActiveTools() });
  });
}
