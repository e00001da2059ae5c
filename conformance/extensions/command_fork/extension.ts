// A command that forks the session (`/branch`) before the second user message, with
// `withSession` reading the new session through its own ctx; `session_before_fork` writes down
// what it was asked and lets it through.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_fork", async (event, ctx) => {
		pi.appendEntry("before_fork", { position: event.position, entryType: ctx.sessionManager.getEntry(event.entryId)?.type });
	});
	pi.on("session_start", async (event, ctx) => {
		ctx.ui.notify(`start ${event.reason} ${typeof event.previousSessionFile}`, "info");
	});
	pi.registerCommand("branch", {
		description: "Fork before the last prompt",
		handler: async (_args, ctx) => {
			const users = ctx.sessionManager.getEntries().filter((e) => e.type === "message" && e.message.role === "user");
			const result = await ctx.fork(users[users.length - 1].id, {
				withSession: async (next) => {
					const branch = next.sessionManager.getBranch();
					next.ui.notify(`forked: ${branch.length} entries, last ${branch[branch.length - 1]?.type}`, "info");
				},
			});
			if (result.cancelled) pi.appendEntry("branch", { cancelled: true });
		},
	});
}
