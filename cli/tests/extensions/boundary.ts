// Pi 1.5's boundaries (the conformance case `boundaries`): `turn_end` and
// `agent_before_settle` handlers see the turn's persisted entry ids, its outcome and a preview
// of the context, and return entries to append (a custom entry, a custom message) and whether
// the run continues. Here each turn's end writes a note and a reminder message the next request
// carries; before the run settles the first time, a hidden nudge is appended and the run
// continues for one more turn.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let settles = 0;
	pi.on("turn_end", async (event) => {
		return {
			entries: [
				{
					type: "custom",
					customType: "turn-note",
					data: {
						turn: event.turnIndex,
						outcome: event.outcome,
						hasEntryId: typeof event.messageEntryId === "string",
						results: event.toolResultEntryIds.length,
						canContinue: event.context.canContinue,
						llmMessages: event.context.llmMessages.length,
					},
				},
				{ type: "custom_message", customType: "reminder", content: `Turn ${event.turnIndex} done.`, display: true },
			],
		};
	});
	pi.on("agent_before_settle", async (event) => {
		settles += 1;
		pi.appendEntry("settle", { settles, outcome: event.outcome, canContinue: event.context.canContinue });
		if (settles > 1) return;
		return {
			entries: [{ type: "custom_message", customType: "nudge", content: "Say one more thing.", display: false }],
			continue: true,
		};
	});
}
