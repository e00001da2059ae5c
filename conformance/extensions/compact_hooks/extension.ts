// An extension hears compactions (Pi's `session_before_compact` and `session_compact`): it
// writes what it was shown, cancels the compaction asked with "cancel", supplies its own
// summary for the one asked with "mine", and leaves the next to the model; `session_compact_failed`
// notes the cancelled one.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event) => {
		const p = event.preparation;
		pi.appendEntry("before_compact", {
			reason: event.reason,
			willRetry: event.willRetry,
			customInstructions: event.customInstructions ?? null,
			branchTypes: event.branchEntries.map((e) => e.type),
			firstKeptIndex: event.branchEntries.findIndex((e) => e.id === p.firstKeptEntryId),
			tokensBefore: p.tokensBefore,
			toSummarize: p.messagesToSummarize.map((m) => m.role),
			turnPrefix: p.turnPrefixMessages.length,
			isSplitTurn: p.isSplitTurn,
			previousSummary: p.previousSummary ?? null,
			read: [...p.fileOps.read],
			settings: p.settings,
			aborted: event.signal.aborted,
		});
		if (event.customInstructions === "cancel") return { cancel: true };
		if (event.customInstructions === "mine") {
			return {
				compaction: {
					summary: "Summary written by the extension.",
					firstKeptEntryId: p.firstKeptEntryId,
					tokensBefore: p.tokensBefore,
					details: { by: "extension" },
				},
			};
		}
	});
	pi.on("session_compact_failed", async (event) => {
		pi.appendEntry("compact_failed", {
			reason: event.reason,
			errorMessage: event.errorMessage ?? null,
			aborted: event.aborted,
			willRetry: event.willRetry,
			fromExtension: event.fromExtension,
		});
	});
	pi.on("session_compact", async (event) => {
		pi.appendEntry("compacted", {
			fromExtension: event.fromExtension,
			reason: event.reason,
			willRetry: event.willRetry,
			type: event.compactionEntry.type,
			summary: event.compactionEntry.summary,
			fromHook: event.compactionEntry.fromHook,
		});
	});
}
