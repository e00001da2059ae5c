// An extension at automatic compactions (Pi's `session_before_compact` with reason `threshold`
// or `overflow`): it supplies the threshold compaction's summary and cancels the overflow
// recovery, whose turn is then not asked again; `session_compact` notes the entry,
// `session_compact_failed` the cancelled recovery.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event) => {
		pi.appendEntry("before_compact", {
			reason: event.reason,
			willRetry: event.willRetry,
			customInstructions: event.customInstructions ?? null,
			toSummarize: event.preparation.messagesToSummarize.map((m) => m.role),
			tokensBefore: event.preparation.tokensBefore,
		});
		if (event.reason === "overflow") return { cancel: true };
		return {
			compaction: {
				summary: `Supplied at ${event.reason}.`,
				firstKeptEntryId: event.preparation.firstKeptEntryId,
				tokensBefore: event.preparation.tokensBefore,
			},
		};
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
		pi.appendEntry("compacted", { reason: event.reason, fromExtension: event.fromExtension, willRetry: event.willRetry });
	});
}
