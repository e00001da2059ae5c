// A handoff command whose `ctx.newSession` has a `setup` callback, as Pi's documentation shows
// it: the new session's manager gets a user message carrying the old session's context, a
// custom entry, a custom message and a name; `withSession` then reads the session, sends a
// custom message that starts a run (the call returns once it settled: the entries after it
// count its answer) and prompts it, so the model's requests hold what `setup` wrote (Pi
// rebuilds the context from it).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerCommand("handoff", {
		description: "Continue in a new session set up with the old one's context",
		handler: async (args, ctx) => {
			const parent = ctx.sessionManager.getSessionFile();
			const before = ctx.sessionManager.getBranch().length;
			await ctx.newSession({
				parentSession: parent,
				setup: async (sm) => {
					sm.appendMessage({
						role: "user",
						content: [{ type: "text", text: `Context from the previous session (${before} entries)` }],
						timestamp: 1,
					});
					sm.appendCustomEntry("handoff", { goal: args });
					sm.appendCustomMessageEntry("handoff_note", "Goal: " + args, true, { from: "setup" });
					sm.appendSessionInfo("handed off");
				},
				withSession: async (next) => {
					const types = next.sessionManager.getBranch().map((entry) => entry.type).join(",");
					next.ui.notify(`set up: ${types}`, "info");
					await next.sendMessage({ customType: "kickoff", content: "Kick off: " + args, display: true }, { triggerTurn: true });
					next.ui.notify(`after sendMessage: ${next.sessionManager.getBranch().length} entries`, "info");
					await next.sendUserMessage(`Continue: ${args}`);
				},
			});
		},
	});
}
