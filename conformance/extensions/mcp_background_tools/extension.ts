// An extension that registers a small stdio MCP server (a Node script it writes beside itself)
// whose one tool is exposed `deferred`, so it connects in the background while the first prompt
// runs; the server answers the handshake after a short pause, so it has not connected when the
// first turn starts. The model calls the extension's `wait` tool, which takes longer than the
// server needs to connect. At each hook point the extension notes which MCP tools
// `pi.getAllTools()` lists (at `tool_result`, the first after the server connected, each whole):
// Pi 1.5.2 registers the server's tools as soon as it has connected.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Type } from "typebox";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    setTimeout(() => reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
                             serverInfo: { name: "notes", version: "1.0.0" } }), 300);
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "count", description: "Counts the notes.", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "1" }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "notes.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("notes", { command: process.execPath, args: [script], exposure: "deferred" });
  pi.registerTool({
    name: "wait",
    label: "Wait",
    description: "Waits a while.",
    parameters: Type.Object({}),
    async execute() {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      return { content: [{ type: "text", text: "waited" }], details: {} };
    },
  });
  const mcpTools = () => pi.getAllTools().filter((t: any) => t.name.startsWith("mcp__"));
  const note = (at: string) => pi.appendEntry("mcp-tools", { at, tools: mcpTools().map((t: any) => t.name) });
  for (const event of ["turn_start", "message_start", "message_end", "tool_call", "tool_execution_start",
                       "tool_execution_end", "turn_end", "agent_end", "agent_settled"]) {
    pi.on(event, () => note(event));
  }
  // The first hook point after the server connected: each of its tools whole.
  pi.on("tool_result", () => pi.appendEntry("mcp-tools", { at: "tool_result", tools: mcpTools() }));
}
