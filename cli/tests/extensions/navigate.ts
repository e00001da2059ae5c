// A command that navigates the tree (`/back`: to the first answer, summarised by the
// `session_before_tree` handler) and reads the session as it is after the navigation; `/back
// twice` then asks for an entry that is not there, which throws.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_tree", async (event) => ({
		summary: { summary: `Left ${event.preparation.entriesToSummarize.length} entries.` },
	}));
	pi.registerCommand("back", {
		handler: async (args, ctx) => {
			const before = ctx.sessionManager.getLeafId();
			const answer = ctx.sessionManager
				.getBranch()
				.find((e) => e.type === "message" && e.message.role === "assistant");
			pi.appendEntry("asked", { args });
			const result = await ctx.navigateTree(answer.id, { summarize: true });
			pi.appendEntry("navigated", {
				cancelled: result.cancelled,
				leaf: ctx.sessionManager.getLeafEntry()?.type ?? null,
				moved: ctx.sessionManager.getLeafId() !== before,
			});
			if (args === "twice") await ctx.navigateTree("nowhere");
		},
	});
}
