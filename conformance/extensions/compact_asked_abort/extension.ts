// `ctx.compact()` while another compaction runs (Pi's `compact()` aborts first): asked from the
// `session_before_compact` handler of a threshold compaction, it aborts that one (its signal
// fires, it ends aborted, the run settles aborted) and compacts once it has ended, calling
// `onComplete` with its result.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event, ctx) => {
		pi.appendEntry("before_compact", { reason: event.reason, customInstructions: event.customInstructions ?? null, aborted: event.signal.aborted });
		if (event.reason === "threshold") {
			ctx.compact({
				customInstructions: "asked",
				onComplete: (result) => pi.appendEntry("on_complete", { summary: result.summary }),
				onError: (error) => pi.appendEntry("on_error", { message: error.message }),
			});
		}
		pi.appendEntry("before_compact_done", { aborted: event.signal.aborted });
	});
	pi.on("session_compact_failed", async (event) => {
		pi.appendEntry("compact_failed", { reason: event.reason, aborted: event.aborted, errorMessage: event.errorMessage ?? null });
	});
	pi.on("session_compact", async (event) => {
		pi.appendEntry("compacted", { reason: event.reason });
	});
}
