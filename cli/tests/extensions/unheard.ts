// Handlers for events the harness runs (`turn_end`, `agent_end`, `mcp_servers_change`) and for
// one it does not know (an event a later Pi may have): the run goes on, and the latter is said,
// not skipped silently.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("turn_end", () => {});
	pi.on("agent_end", () => {});
	pi.on("mcp_servers_change", () => {});
	(pi as any).on("some_later_event", () => {});
}
