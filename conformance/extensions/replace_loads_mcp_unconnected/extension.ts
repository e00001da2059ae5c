// Not loaded at the start: the run starts with no extension at all, and with `--no-mcp`. The
// RPC client's `bash` names this file in the agent directory's settings' `extensions`, then
// asks `new_session`: Pi loads this extension for the new session, and nothing connects the
// MCP server it registers, which Pi reports as a `register_mcp_server` error after the new
// session's start, and again after a command's reload (`ctx.reload()`), whose new load
// registers it again. The server is never started.
export default function (pi: any) {
  pi.registerMcpServer("unused", { command: "/nonexistent/server", args: [] });
  pi.registerCommand("reload-it", {
    description: "Reload the extensions",
    handler: async (_args: any, ctx: any) => {
      await ctx.reload();
    },
  });
}
