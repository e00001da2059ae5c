// Not loaded at the start: the run starts with no extension at all. The RPC client's `bash`
// names this file in the agent directory's settings' `extensions`, then asks `new_session`:
// Pi loads this extension for the new session, and its stdio MCP server (a Node script it
// writes beside itself) connects. A command reloads (`ctx.reload()`): the new load registers
// the same script under another name, `again`, whose tool is declared and called after the
// reload (the first name's is gone). Each run's end appends the active tools.
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
  // The first load registers `shouter`, the reload's `again` (the count kept on globalThis).
  const g = globalThis as any;
  g.lateLoads = (g.lateLoads ?? 0) + 1;
  const name = g.lateLoads === 1 ? "shouter" : "again";
  pi.registerMcpServer(name, { command: process.execPath, args: [script], exposure: "direct" });
  pi.registerCommand("reload-it", {
    description: "Reload the extensions",
    handler: async (_args: any, ctx: any) => {
      await ctx.reload();
    },
  });
  pi.on("agent_end", () => {
    pi.appendEntry("late-tools", { active: pi.getActiveTools() });
  });
}
