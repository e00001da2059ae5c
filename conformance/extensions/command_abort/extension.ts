// A command run while the agent streams: it records what it saw of the session, then aborts
// the run through its context, and records whether the session is idle once the abort is asked.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("stop", {
		description: "Stop the run",
		handler: async (args, ctx) => {
			pi.appendEntry("stop-asked", { args, idle: ctx.isIdle() });
			ctx.abort();
			pi.appendEntry("stop-done", { idle: ctx.isIdle() });
		},
	});
	pi.on("agent_end", async (event) => {
		const last = event.messages[event.messages.length - 1];
		pi.appendEntry("ended", { stopReason: last?.role === "assistant" ? last.stopReason : null });
	});
}
