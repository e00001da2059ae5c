// An extension that registers two small stdio MCP servers after loading (in session_start, where
// it also activates tool_search), from a Node script it writes beside itself, both with
// resources: `notes` exposed directly, `docs` deferred, so Pi 1.5.2 registers the resource tools
// direct. A command unregisters notes: the
// widest exposure left is docs's, and Pi 1.5.2 registers the resource tools again deferred,
// out of the active tools, for tool_search to find. Each run's end appends the tools.
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
    // docs answers late, so that notes connects first.
    setTimeout(() => reply({ protocolVersion: request.params.protocolVersion, capabilities: { tools: {}, resources: {} },
            serverInfo: { name, version: "1.0.0" } }), name === "docs" ? 300 : 0);
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "count", description: "Counts the " + name + ".", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [{ type: "text", text: "1" }] });
  } else if (request.method === "resources/list") {
    reply({ resources: [{ name: "first", uri: name + "://first", mimeType: "text/plain" }] });
  } else if (request.method === "resources/templates/list") {
    reply({ resourceTemplates: [] });
  } else if (request.method === "resources/read") {
    const uri = request.params.uri;
    reply({ contents: [{ uri, mimeType: "text/plain", text: "The first of " + name + "." }] });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const script = join(process.cwd(), "servers.cjs");
  writeFileSync(script, SERVER);
  pi.on("session_start", () => {
    pi.registerMcpServer("notes", { command: process.execPath, args: [script, "notes"], exposure: "direct" });
    pi.registerMcpServer("docs", { command: process.execPath, args: [script, "docs"], exposure: "deferred" });
    pi.setActiveTools([...pi.getActiveTools(), "tool_search"]);
  });
  pi.registerCommand("drop", {
    description: "Unregisters the notes server",
    handler: async () => {
      pi.unregisterMcpServer("notes");
    },
  });
  pi.on("agent_end", () => {
    const unlisted = ["powershell", "codemode"];
    pi.appendEntry("tools", {
      all: pi.getAllTools()
        .filter((t: any) => !unlisted.includes(t.name))
        .map((t: any) => `${t.name} ${t.exposure ?? "direct"}`),
      active: pi.getActiveTools(),
    });
  });
}
