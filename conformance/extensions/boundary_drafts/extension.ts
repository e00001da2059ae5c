// Pi 1.5's boundary drafts that change the context: after the first turn a `turn_end` handler
// edits the tool result it read (a `context_edit`), after the second it compacts what came
// before that turn (a `compaction` draft, its summary the handler's), so the third request
// sends the projection after both. Before the run settles, one handler queues a follow-up and
// the next sees it among the preview's pending messages; the follow-up's run settles with an
// invalid draft (an edit of an entry that does not exist), which Pi reports and drops.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	let settles = 0;
	pi.on("turn_end", async (event) => {
		turns += 1;
		if (turns === 1) {
			return {
				entries: [{ type: "context_edit", targetId: event.toolResultEntryIds[0], replacement: { content: "a.txt was read." } }],
			};
		}
		if (turns === 2) {
			return {
				entries: [
					{ type: "compaction", summary: "The user asked about a.txt; it was read.", firstKeptEntryId: event.messageEntryId, details: { by: "boundary" } },
				],
			};
		}
	});
	pi.on("agent_before_settle", async () => {
		settles += 1;
		if (settles === 1) pi.sendUserMessage("One more thing.", { deliverAs: "followUp" });
	});
	pi.on("agent_before_settle", async (event) => {
		pi.appendEntry("settle", {
			settles,
			pending: event.context.pendingMessages.length,
			pendingRoles: event.context.pendingMessages.map((m) => m.role),
			canContinue: event.context.canContinue,
			llmMessages: event.context.llmMessages.length,
		});
		if (settles === 2) return { entries: [{ type: "context_edit", targetId: "missing", replacement: null }] };
	});
}
