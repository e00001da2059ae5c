// Commands that replace the session from inside: `/branch` forks before the last prompt and
// `/resume <path>` switches to a session file, each `withSession` reading the new session
// through its own context; the `session_before_*` handlers write down what they were asked.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_fork", async (event) => {
		pi.appendEntry("before_fork", { position: event.position });
	});
	pi.on("session_before_switch", async (event) => {
		pi.appendEntry("before_switch", { reason: event.reason });
	});
	pi.registerCommand("branch", {
		handler: async (_args, ctx) => {
			const users = ctx.sessionManager.getEntries().filter((e) => e.type === "message" && e.message.role === "user");
			await ctx.fork(users[users.length - 1].id, {
				withSession: async (next) => {
					const branch = next.sessionManager.getBranch();
					next.ui.notify(`forked: last ${branch[branch.length - 1]?.type}`, "info");
				},
			});
		},
	});
	pi.registerCommand("resume", {
		handler: async (args, ctx) => {
			await ctx.switchSession(args, {
				withSession: async (next) => {
					const messages = next.sessionManager.getEntries().filter((e) => e.type === "message").length;
					next.ui.notify(`resumed: ${messages} messages`, "info");
				},
			});
		},
	});
}
