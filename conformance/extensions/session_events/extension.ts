// Hears `session_start` before the first prompt and `session_shutdown` once print mode is
// done, writing an entry from each (the session file says when they came); the start also
// restricts the active tools, which the first request lists, and says so through the UI (RPC
// mode prints it).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async (event, ctx) => {
		pi.appendEntry("started", { reason: event.reason, idle: ctx.isIdle(), tools: pi.getActiveTools() });
		pi.setActiveTools(["read"]);
		ctx.ui.notify(`started with ${ctx.model?.id}`, "info");
	});
	pi.on("session_shutdown", async (event, ctx) => {
		pi.appendEntry("stopping", { reason: event.reason, idle: ctx.isIdle() });
	});
}
