// Writes what the original's MCP extension makes of MCP tool results (`convertMcpResult`) and
// tool names (`createMcpToolName`), for mcp/tests/fixtures_152.rs
// (mcp/tests/fixtures/convert_152.json).
//
//   node scripts/gen-mcp-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { convertMcpResult } = await pi.agentModule("extensions/mcp/tools.js");
const { createMcpToolName } = await pi.bundled("createMcpToolName");

const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const long = Array.from({ length: 1100 }, (_, i) => `line ${i} ✓ ünïcödé`).join("\n");
const results = [
  { content: [{ type: "text", text: "plain" }] },
  { content: [{ type: "text", text: "a" }, { type: "image", data: png, mimeType: "image/png" }, { type: "text", text: "b" }] },
  { content: [], isError: true },
  { content: [{ type: "image", data: png, mimeType: "image/png" }], isError: true },
  { content: [], structuredContent: { answer: 42, nested: { list: [1, "two", null] } }, _meta: { x: 1 } },
  { content: [{ type: "audio", data: "AAAA", mimeType: "audio/wav" }] },
  { content: [{ type: "resource_link", uri: "file:///a/b.txt", name: "b.txt" }] },
  { content: [{ type: "resource_link", uri: "file:///a/c.png", name: "c", title: "The C", mimeType: "image/png", size: 123456, description: "a picture" }] },
  { content: [{ type: "resource", resource: { uri: "mem://t", text: "embedded text" } }] },
  { content: [{ type: "resource", resource: { uri: "mem://i", blob: png, mimeType: "image/png" } }] },
  { content: [{ type: "resource", resource: { uri: "mem://j.json", blob: Buffer.from('{"k":1}').toString("base64"), mimeType: "application/json" } }] },
  { content: [{ type: "resource", resource: { uri: "https://x/y/data.tar.gz", blob: Buffer.from("binary!").toString("base64"), mimeType: "application/gzip" } }] },
  { content: [{ type: "weird", value: 1 }] },
  { content: [{ type: "text", text: long }, { type: "image", data: png, mimeType: "image/png" }] },
];
const cases = [];
for (const [i, result] of results.entries()) {
  for (const readableResources of [false, true]) {
    const saved = [];
    const saveOutput = async (data, extension) => {
      saved.push({ extension, bytes: Buffer.from(data).length, start: Buffer.from(data).toString("utf8").slice(0, 40) });
      return `/saved/${saved.length}${extension}`;
    };
    const converted = await convertMcpResult("srv", `tool${i}`, result, { readableResources, saveOutput });
    cases.push({ result, readableResources, converted, saved });
  }
}
const names = [
  ["srv", "echo"], ["my-server", "get.issue"], ["s", "ünï côdé"], ["emoji", "go😀now"], ["a".repeat(30), "b".repeat(40)],
].map(([server, tool]) => ({ server, tool, name: createMcpToolName(server, tool), taken: createMcpToolName(server, tool, () => true) }));
fs.writeFileSync(out, JSON.stringify({ cases, names }, null, 1) + "\n");
