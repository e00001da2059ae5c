// Writes the `mcp_servers` system-prompt section the original's MCP extension renders
// (`renderServersSection`) for sets of servers, for mcp/tests/fixtures_section_152.rs
// (mcp/tests/fixtures/servers_section_152.json).
//
//   node scripts/gen-mcp-section-fixtures.mjs <pi install dir> <out file>
import fs from "fs";
import { original } from "./pi-original.mjs";

const [piDir, out] = process.argv.slice(2);
const pi = original(piDir);
const { renderServersSection } = await pi.agentModule("extensions/mcp/index.js");

// A server as the extension holds it: its entry's name and config, and its connection's
// instructions once it connected (undefined: not connected).
const server = (name, config = {}, instructions) => ({
  entry: { name, config },
  ...(instructions === undefined ? {} : { connection: { instructions } }),
});
const many = Array.from({ length: 120 }, (_, i) => server(`server-number-${String(i).padStart(3, "0")}`, { description: `Server ${i} does things` }));
const sets = [
  [],
  [server("direct-only", { exposure: "direct" })],
  [server("hidden", { exposure: "hidden" })],
  [server("off", { enabled: false })],
  [server("fs")],
  [server("fs", { description: "  Read and write files\nsecond line  " })],
  [server("fs", {}, "Instructions first line\nmore")],
  [server("fs", { description: "Configured wins" }, "Instructions")],
  [server("fs", { description: "   " }, "  padded instructions  ")],
  [server("search", { exposure: "deferred", description: "Find things" })],
  [server("zeta", { exposure: "deferred" }), server("alpha"), server("Beta"), server("beta"), server("a_b"), server("a-c"), server("a9"), server("A1")],
  ["a-b", "a_c", "ab", "a", "A", "a0", "_x", "-y", "B-", "b_", "b", "aB", "Ab", "AB", "ab-", "a--b", "a__b"].map((name) => server(name)),
  [server("mixed", { exposure: "direct", toolExposure: { "get_*": "codemode" } })],
  [server("mixed", { exposure: "deferred", toolExposure: { x: "codemode" } })],
  [server("mixed", { exposure: "hidden", toolExposure: { x: "deferred" } })],
  [server("dev-radius", { description: "x".repeat(300) })],
  [server("emoji", { description: "😀".repeat(200) })],
  [server("emoji", { description: "a" + "😀".repeat(200) })],
  [server("spaces", { description: "word ".repeat(100) })],
  many,
  many.slice(0, 40).map((s) => ({ ...s, entry: { ...s.entry, config: { description: "d".repeat(400) } } })),
];
const cases = sets.map((servers) => ({ servers, section: renderServersSection(servers) ?? null }));
fs.writeFileSync(out, JSON.stringify({ cases }, null, 1) + "\n");
