// An extension that registers a small stdio MCP server (a Node script it writes beside itself)
// with the default exposure, `codemode`: Pi 1.5.2 activates its codemode tool, whose description
// lists the server's tools under their namespace, and a script calls one (its structured
// result, by the tool's output schema) and one without an output schema (its text).
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
            serverInfo: { name: "calc", version: "1.0.0" }, instructions: "Adds numbers." });
  } else if (request.method === "tools/list") {
    reply({ tools: [
      { name: "add", description: "Adds two numbers.",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
        outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] } },
      { name: "echo", description: "Echoes a text.",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
    ] });
  } else if (request.method === "tools/call") {
    const { name, arguments: args } = request.params;
    if (name === "add") reply({ content: [{ type: "text", text: String(args.a + args.b) }], structuredContent: { sum: args.a + args.b } });
    else reply({ content: [{ type: "text", text: args.text }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  // A tool of the extension's, active once registered: codemode comes after it.
  pi.registerTool({
    name: "mine",
    label: "Mine",
    description: "An extension's tool.",
    parameters: { type: "object", properties: {} },
    async execute() {
      return { content: [{ type: "text", text: "mine" }], details: {} };
    },
  });
  const script = join(process.cwd(), "calc.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("calc", { command: process.execPath, args: [script], description: "A calculator." });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => [t.name, t.exposure]),
      active: pi.getActiveTools(),
    });
  });
}
