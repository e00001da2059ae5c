// Navigates the session's tree from a command (`/back <label>`: to the first answer, with a
// summary), and hears it: `session_before_tree` cancels a navigation labelled `no` and supplies
// the summary of any other (with its own label), `session_tree` writes down what it heard; the
// command writes down what the navigation answered.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_tree", async (event, ctx) => {
		const p = event.preparation;
		const seen = {
			wanted: p.userWantsSummary,
			entries: p.entriesToSummarize.map((e) => e.type),
			label: p.label ?? null,
			instructions: p.customInstructions ?? null,
			fromRoot: p.commonAncestorId === null,
		};
		pi.appendEntry("before_tree", seen);
		ctx.ui.notify(`before_tree ${JSON.stringify(seen)}`, "info");
		if (p.label === "no") return { cancel: true };
		return { summary: { summary: `Left ${p.entriesToSummarize.length} entries.`, details: { by: "extension" } }, label: "kept" };
	});
	pi.on("session_tree", async (event, ctx) => {
		const heard = {
			summary: event.summaryEntry?.summary ?? null,
			fromHook: event.summaryEntry?.fromHook ?? null,
			fromExtension: event.fromExtension ?? null,
			moved: event.newLeafId !== event.oldLeafId,
		};
		pi.appendEntry("tree", heard);
		ctx.ui.notify(`tree ${JSON.stringify(heard)}`, "info");
	});
	pi.registerCommand("back", {
		description: "Go back to the first answer",
		handler: async (args, ctx) => {
			const answer = ctx.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "assistant");
			const result = await ctx.navigateTree(answer.id, { summarize: true, label: args, customInstructions: "names only" });
			pi.appendEntry("navigated", { args, cancelled: result.cancelled });
		},
	});
}
