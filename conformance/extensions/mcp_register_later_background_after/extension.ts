// mcp.json configures `bg`, a stdio MCP server whose one tool is deferred, so it connects in the
// background; it answers the handshake late, with instructions. The extension writes the
// server's script beside itself and registers a second server, `late` (deferred, without
// instructions), in session_start; the first prompt's tool_search waits for `bg`, which
// connects after `late`. The next prompt's mcp_servers section lists both, `bg` with its
// instructions.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
const name = process.argv[2];
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    setTimeout(() => reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name, version: "1.0.0" },
            ...(name === "bg" ? { instructions: "Counts things in the background." } : {}) }), name === "bg" ? 300 : 0);
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: name + "_count", description: "Counts for " + name + ".", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "2" }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "server.cjs");
  writeFileSync(script, SERVER);
  pi.on("session_start", () => {
    pi.registerMcpServer("late", { command: process.execPath, args: [script, "late"], exposure: "deferred" });
  });
}
