// A command that replaces the session (`/handoff`, `ctx.newSession` without `withSession`),
// with `session_shutdown` and `session_start` handlers that append an entry: which of them
// the old and the new session hold, and which a print-mode run prints.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_shutdown", async (event) => {
		pi.appendEntry("bye", { reason: event.reason, target: typeof event.targetSessionFile });
	});
	pi.on("session_start", async (event) => {
		pi.appendEntry("hello", { reason: event.reason, previous: typeof event.previousSessionFile });
	});
	pi.registerCommand("handoff", {
		description: "Continue in a new session",
		handler: async (_args, ctx) => {
			await ctx.newSession({});
		},
	});
}
