// An extension that registers a small stdio MCP server (a Node script it writes beside itself,
// run by the Node that runs the extension) with two tools, `shout` and `whisper`, exposed
// directly, and a tool of its own, `note`; it notes which tools are registered and which active
// after each run.
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
    const schema = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
    send({ jsonrpc: "2.0", id: request.id, result: { tools: [
      { name: "shout", description: "Returns the text in capitals.", inputSchema: schema },
      { name: "whisper", description: "Returns the text in small letters.", inputSchema: schema },
    ] } });
  } else if (request.method === "tools/call") {
    const text = String(request.params.arguments?.text ?? "");
    const said = request.params.name === "shout" ? text.toUpperCase() : text.toLowerCase();
    send({ jsonrpc: "2.0", id: request.id, result: { content: [{ type: "text", text: said }] } });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "shouter.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("shouter", { command: process.execPath, args: [script], exposure: "direct" });
  pi.registerTool({
    name: "note",
    label: "note",
    description: "Notes the text.",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    execute: async () => ({ content: [{ type: "text", text: "noted" }], details: {} }),
  });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => t.name),
      active: pi.getActiveTools(),
    });
  });
}
