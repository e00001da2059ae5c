// A compaction asked while the `session_compact_failed` handlers of a cancelled one run: Pi's
// manual compaction has ended by then (`compaction_end` is out), so RPC `compact` starts the next
// at once. The failed handler waits for the next compaction's `session_compact` (and a moment)
// before it writes.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

let compacted: () => void = () => {};
const nextCompacted = new Promise<void>((resolve) => {
	compacted = resolve;
});

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event) => {
		pi.appendEntry("before_compact", { customInstructions: event.customInstructions ?? null });
		if (event.customInstructions === "cancel") return { cancel: true };
	});
	pi.on("session_compact_failed", async (event, ctx) => {
		ctx.ui.notify("the failed handler waits", "info");
		const waited = await Promise.race([
			// A moment after it, so that the compaction's end is out first here and in Pi alike.
			nextCompacted.then(() => new Promise((resolve) => setTimeout(() => resolve("compacted"), 200))),
			new Promise((resolve) => setTimeout(() => resolve("timed out"), 5000)),
		]);
		pi.appendEntry("compact_failed", { aborted: event.aborted, errorMessage: event.errorMessage ?? null, waited });
	});
	pi.on("session_compact", async (event) => {
		pi.appendEntry("compacted", { reason: event.reason, summary: event.compactionEntry.summary });
		compacted();
	});
}
