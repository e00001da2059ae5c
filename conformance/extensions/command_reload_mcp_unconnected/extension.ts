// With `--no-mcp` nothing connects the MCP servers extensions register: Pi reports each one as
// a `register_mcp_server` error after `session_start`, and again after a reload's, whose new
// load registers it again (`/reload-it`: `ctx.reload()`). The server is never started.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerMcpServer("unused", { command: "/nonexistent/server", args: [] });
	pi.registerCommand("reload-it", {
		description: "Reload the extensions",
		handler: async (_args, ctx) => {
			await ctx.reload();
		},
	});
}
