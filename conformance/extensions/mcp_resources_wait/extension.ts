// An extension that registers two small stdio MCP servers while loading, from a Node script it
// writes beside itself, both with resources: `notes` exposed directly (the first prompt waits for
// it), `docs` deferred, which connects in the background and answers the handshake late. The
// model lists the resources at once: Pi 1.5.2's resource tools wait for every server, so the
// listing holds docs's too.
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
            serverInfo: { name, version: "1.0.0" } }), name === "docs" ? 500 : 0);
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
  pi.registerMcpServer("notes", { command: process.execPath, args: [script, "notes"], exposure: "direct" });
  pi.registerMcpServer("docs", { command: process.execPath, args: [script, "docs"], exposure: "deferred" });
}
