// Not loaded at the start: the run starts with no extension at all. The RPC client's `bash`
// names this file in the agent directory's settings' `extensions`, then asks `new_session`:
// Pi builds the new session's runtime afresh and loads this extension, whose provider (`late`,
// served by the kit's mock under a key and a header of its own) joins the model lists and
// takes requests once chosen, and whose stdio MCP server (a Node script it writes beside
// itself, run by the Node that runs the extension) connects, its tool `shout` declared and
// called as mcp__shouter__shout.
import * as fs from "node:fs";
import * as path from "node:path";

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
    send({ jsonrpc: "2.0", id: request.id, result: { tools: [{
      name: "shout",
      description: "Returns the text in capitals.",
      inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    }] } });
  } else if (request.method === "tools/call") {
    const text = String(request.params.arguments?.text ?? "").toUpperCase();
    send({ jsonrpc: "2.0", id: request.id, result: { content: [{ type: "text", text }] } });
  } else {
    send({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
`;

export default function (pi: any) {
  const models = JSON.parse(fs.readFileSync(path.join(process.env.PI_CODING_AGENT_DIR!, "models.json"), "utf8"));
  pi.registerProvider("late", {
    baseUrl: models.providers.mock.baseUrl,
    api: "openai-completions",
    apiKey: "late-provider-key-0123456789",
    headers: { "x-late": "yes" },
    models: [
      {
        id: "late-model",
        name: "Late Model",
        reasoning: false,
        input: ["text"],
        cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 32000,
        maxTokens: 2048,
      },
    ],
  });
  const script = path.join(process.cwd(), "shouter.cjs");
  fs.writeFileSync(script, SERVER);
  pi.registerMcpServer("shouter", { command: process.execPath, args: [script], exposure: "direct" });
  pi.on("session_start", (event: any, ctx: any) => {
    pi.appendEntry("late-started", {
      reason: event.reason,
      found: ctx.modelRegistry.find("late", "late-model")?.name ?? null,
      model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null,
    });
  });
  pi.on("agent_end", (_event: any, ctx: any) => {
    pi.appendEntry("late-tools", {
      active: pi.getActiveTools(),
      model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null,
    });
  });
}
