// An extension that registers a small stdio MCP server with one tool and resources, exposed
// through `codemode` (Pi 1.5.2 activates its codemode tool). A script reads what
// `describeTool()` shows of the three MCP resource tools (each declares its own output schema)
// and reads a resource; at the run's end the extension reports the resource tools as
// `pi.getAllTools()` lists them.
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
  pi.registerMcpServer("notes", { command: process.execPath, args: [script] });
  pi.on("agent_end", () => {
    pi.appendEntry("tools", pi.getAllTools().filter((t: any) => t.name.includes("mcp_resource")));
  });
}
