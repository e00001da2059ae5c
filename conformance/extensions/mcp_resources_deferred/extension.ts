// An extension that registers a small stdio MCP server (a Node script it writes beside itself)
// with one tool and resources, exposed `deferred`: the server connects in the background, and
// Pi 1.5.2 registers its resource tools deferred once it has connected, for tool_search to find;
// the model searches for them, then reads a resource.
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
    reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {}, resources: {} },
            serverInfo: { name: "notes", version: "1.0.0" } });
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "count", description: "Counts the notes.", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "1" }] });
  } else if (request.method === "resources/list") {
    reply({ resources: [{ name: "first", uri: "notes://first", mimeType: "text/plain" }] });
  } else if (request.method === "resources/templates/list") {
    reply({ resourceTemplates: [] });
  } else if (request.method === "resources/read") {
    const uri = request.params.uri;
    reply({ contents: uri === "notes://first" ? [{ uri, mimeType: "text/plain", text: "The first note." }] : [] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "notes.cjs");
  writeFileSync(script, SERVER);
  pi.registerMcpServer("notes", { command: process.execPath, args: [script], exposure: "deferred" });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => t.name),
      active: pi.getActiveTools(),
    });
  });
}
