// A compaction asked while the `session_compact_failed` handlers of an automatic one run: Pi's
// `_runAutoCompaction` has not returned yet, so RPC `compact` (which aborts first and waits for
// idle) starts once they ran and the run they end has settled (aborted).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event) => {
		pi.appendEntry("before_compact", { reason: event.reason, customInstructions: event.customInstructions ?? null });
		if (event.reason === "threshold") return { cancel: true };
	});
	pi.on("session_compact_failed", async (event, ctx) => {
		ctx.ui.notify("the failed handler waits", "info");
		await new Promise((resolve) => setTimeout(resolve, 1000));
		pi.appendEntry("compact_failed", { reason: event.reason, aborted: event.aborted });
	});
}
