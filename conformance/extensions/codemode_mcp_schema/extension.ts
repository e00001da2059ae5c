// An extension that registers a small stdio MCP server whose tools declare output schemas (one
// with local `$ref`s into its `$defs`): one tool is exposed directly, so its declaration in `on`
// mode says what a script's call resolves to, and the others stay in codemode. A script reads
// what `describeTool()` and `ALL_TOOLS` show of them: Pi wraps each server schema in its MCP
// result schema, under `structuredContent`, its references moved there.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
const point = { type: "object", properties: { x: { type: "number" }, y: { type: "number" } }, required: ["x", "y"] };
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
            serverInfo: { name: "geo", version: "1.0.0" } });
  } else if (request.method === "tools/list") {
    reply({ tools: [
      { name: "add", description: "Adds two numbers.",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
        outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] } },
      { name: "segment", description: "A segment between two points.",
        inputSchema: { type: "object", properties: {} },
        outputSchema: { type: "object", $defs: { point },
          properties: { from: { $ref: "#/$defs/point" }, to: { $ref: "#/$defs/point" } }, required: ["from", "to"] } },
      { name: "echo", description: "Echoes a text.",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } },
    ] });
  } else if (request.method === "tools/call") {
    const { name, arguments: args } = request.params;
    if (name === "add") reply({ content: [{ type: "text", text: String(args.a + args.b) }], structuredContent: { sum: args.a + args.b } });
    else if (name === "segment") reply({ content: [{ type: "text", text: "0,0-1,1" }], structuredContent: { from: { x: 0, y: 0 }, to: { x: 1, y: 1 } } });
    else reply({ content: [{ type: "text", text: args.text }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "geo.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("geo", {
    command: process.execPath,
    args: [script],
    toolExposure: { add: "direct" },
  });
}
