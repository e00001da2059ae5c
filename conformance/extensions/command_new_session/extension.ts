// A handoff command (`/handoff <goal>`): `ctx.newSession` with the old file as the parent and
// `withSession` prompting the new session through its own ctx. `session_before_switch` cancels
// the first handoff (the handler goes on with `{cancelled: true}` and writes it down); the
// second replaces the session, after which the captured ctx is stale (its use throws Pi's
// message, reported as the command's error).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	const seen = globalThis as { switches?: number };
	pi.on("session_start", async (event, ctx) => {
		pi.appendEntry("start", { reason: event.reason, parent: ctx.sessionManager.getHeader()?.parentSession !== undefined });
		ctx.ui.notify(`start ${event.reason}`, "info");
	});
	pi.on("session_before_switch", async (event) => {
		seen.switches = (seen.switches ?? 0) + 1;
		pi.appendEntry("before_switch", { reason: event.reason, asked: seen.switches });
		if (seen.switches === 1) return { cancel: true };
	});
	pi.registerCommand("handoff", {
		description: "Continue in a new session",
		handler: async (args, ctx) => {
			const parent = ctx.sessionManager.getSessionFile();
			const result = await ctx.newSession({
				parentSession: parent,
				withSession: async (next) => {
					next.ui.notify(`new session: parent kept ${next.sessionManager.getHeader()?.parentSession === parent}, entries ${next.sessionManager.getEntries().length}`, "info");
					await next.sendUserMessage(`Continue: ${args}`);
				},
			});
			if (result.cancelled) {
				pi.appendEntry("handoff", { args, cancelled: true });
				return;
			}
			ctx.ui.notify("the old ctx after the handoff", "info");
		},
	});
}
