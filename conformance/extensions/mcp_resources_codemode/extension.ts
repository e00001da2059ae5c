// An extension that registers two small stdio MCP servers (a Node script it writes beside
// itself): `notes`, with one tool and resources, exposed through `codemode`, and `helper`, with
// one tool and no resources, exposed `deferred` (which activates tool_search). mcp.json turns
// autoEnableCodemode off, so no codemode tool is active. Both connect in the background; once
// they have, Pi 1.5.2 registers the resource tools deferred (its toToolExposure of `codemode`),
// for tool_search to find; the model searches, then reads a resource.
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
    // helper answers late, so that notes connects first.
    setTimeout(() => reply({ protocolVersion: request.params.protocolVersion, capabilities: process.argv[2] === "plain" ? { tools: {} } : { tools: {}, resources: {} },
            serverInfo: { name: "notes", version: "1.0.0" } }), process.argv[2] === "plain" ? 500 : 0);
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
  pi.registerMcpServer("notes", { command: process.execPath, args: [script], exposure: "codemode" });
  pi.registerMcpServer("helper", { command: process.execPath, args: [script, "plain"], exposure: "deferred" });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => t.name),
      active: pi.getActiveTools(),
    });
  });
}
