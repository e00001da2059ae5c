// An extension that registers a small stdio MCP server (a Node script it writes beside itself)
// with one tool and resources, exposed directly: Pi 1.5.2 adds its resource tools
// (list_mcp_resources, list_mcp_resource_templates, read_mcp_resource), which the model calls.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {}, resources: {} },
            serverInfo: { name: "notes", version: "1.0.0" } });
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "count", description: "Counts the notes.", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "2" }] });
  } else if (request.method === "resources/list") {
    reply({ resources: [
      { name: "first", uri: "notes://first", mimeType: "text/plain", _meta: { x: 1 }, extra: "kept" },
      { uri: "ui://app", name: "app" },
      { uri: "notes://pixel", name: "pixel", mimeType: "image/png", size: 68 },
    ] });
  } else if (request.method === "resources/templates/list") {
    reply({ resourceTemplates: [{ uriTemplate: "notes://{name}", name: "note" }] });
  } else if (request.method === "resources/read") {
    const uri = request.params.uri;
    const contents = uri === "notes://first" ? [{ uri, mimeType: "text/plain", text: "The first note." }]
      : uri === "notes://pixel" ? [{ uri, mimeType: "image/png", blob: PIXEL }] : [];
    reply({ contents });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "notes.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("notes", { command: process.execPath, args: [script], exposure: "direct" });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => t.name),
      active: pi.getActiveTools(),
    });
  });
}
