// A handoff command (`/handoff <goal>`): `ctx.newSession` with the old file as the parent and
// `withSession` prompting the new session through its own context. `session_before_switch`
// cancels the first handoff; after the second, the captured context is stale.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let switches = 0;
	pi.on("session_before_switch", async () => {
		switches += 1;
		pi.appendEntry("before_switch", { asked: switches });
		if (switches === 1) return { cancel: true };
	});
	pi.registerCommand("handoff", {
		handler: async (args, ctx) => {
			const parent = ctx.sessionManager.getSessionFile();
			const result = await ctx.newSession({
				parentSession: parent,
				withSession: async (next) => {
					next.ui.notify(`parent kept ${next.sessionManager.getHeader()?.parentSession === parent}`, "info");
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
