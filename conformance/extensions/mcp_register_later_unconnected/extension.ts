// --no-mcp, and an extension that registers MCP servers after loading (one in session_start,
// one in a command) with no mcp_servers_change handler: nothing connects them, and Pi reports
// each once, within the handler or command that registered it.
export default function (pi: any) {
  pi.on("session_start", () => {
    pi.registerMcpServer("early", { command: "no-such-mcp-server", exposure: "direct" });
  });
  pi.registerCommand("more", {
    description: "Registers another server",
    handler: async () => {
      pi.registerMcpServer("more", { command: "no-such-mcp-server", exposure: "direct" });
      pi.registerMcpServer("early", { command: "no-such-mcp-server", args: ["again"], exposure: "direct" });
    },
  });
}
