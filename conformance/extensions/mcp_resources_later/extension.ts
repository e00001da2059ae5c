// An extension that registers two small stdio MCP servers after loading (in session_start), from
// a Node script it writes beside itself, each with one tool, `link`, exposed directly, which
// answers with a resource_link: `notes` has resources, `plain` has none. Pi 1.5.2 registers the
// resource tools once notes has connected, and words notes's link with how to read it. A command
// unregisters notes; the resource tools are then hidden. Each run's end appends the tools.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const SERVER = `
const readline = require("node:readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\\n");
const plain = process.argv[2] === "plain";
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) return;
  const reply = (result) => send({ jsonrpc: "2.0", id: request.id, result });
  if (request.method === "initialize") {
    // plain answers late, so that notes connects first.
    setTimeout(() => reply({ protocolVersion: request.params.protocolVersion,
            capabilities: plain ? { tools: {} } : { tools: {}, resources: {} },
            serverInfo: { name: "notes", version: "1.0.0" } }), plain ? 500 : 0);
  } else if (request.method === "tools/list") {
    reply({ tools: [{ name: "link", description: "Links the first note.", inputSchema: { type: "object" } }] });
  } else if (request.method === "tools/call") {
    reply({ content: [
      { type: "text", text: "Here it is." },
      { type: "resource_link", uri: "notes://first", name: "first", title: "The first note",
        description: "What came first", mimeType: "text/plain", size: 2048 },
      { type: "resource_link", uri: "notes://bare", name: "bare" },
    ] });
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
  pi.on("session_start", () => {
    pi.registerMcpServer("notes", { command: process.execPath, args: [script], exposure: "direct" });
    pi.registerMcpServer("plain", { command: process.execPath, args: [script, "plain"], exposure: "direct" });
  });
  pi.registerCommand("drop", {
    description: "Unregisters the notes server",
    handler: async () => {
      pi.unregisterMcpServer("notes");
    },
  });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", {
      all: pi.getAllTools().map((t: any) => t.name),
      active: pi.getActiveTools(),
    });
  });
}
