// A command that switches to another session file (`/resume <path>`), with `withSession`
// reading the resumed session through its own ctx; `session_before_switch` (reason resume)
// writes down what it was asked and lets it through.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_switch", async (event) => {
		pi.appendEntry("before_switch", { reason: event.reason, target: typeof event.targetSessionFile });
	});
	pi.on("session_start", async (event, ctx) => {
		ctx.ui.notify(`start ${event.reason} ${typeof event.previousSessionFile}`, "info");
	});
	pi.registerCommand("resume", {
		description: "Switch to a session file",
		handler: async (args, ctx) => {
			const result = await ctx.switchSession(args, {
				withSession: async (next) => {
					const messages = next.sessionManager.getEntries().filter((e) => e.type === "message").length;
					next.ui.notify(`resumed: ${messages} messages`, "info");
				},
			});
			if (result.cancelled) pi.appendEntry("resume", { cancelled: true });
		},
	});
}
