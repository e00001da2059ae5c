// The `session_before_compact` event's `signal` and the preparation's file operations: a
// compaction aborted (RPC `abort`) while the handler waits fires its signal; the preparation's
// `fileOps` sets hold the paths in the order the conversation touched them (the summary's lists
// are sorted).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_compact", async (event, ctx) => {
		const { fileOps } = event.preparation;
		const files = { read: [...fileOps.read], written: [...fileOps.written], edited: [...fileOps.edited] };
		if (event.customInstructions === "wait") {
			ctx.ui.notify("waiting for an abort", "info");
			const how = await new Promise((resolve) => {
				event.signal.addEventListener("abort", () => resolve("aborted"));
				setTimeout(() => resolve("timed out"), 5000);
			});
			pi.appendEntry("before_compact", { how, aborted: event.signal.aborted, ...files });
			return;
		}
		pi.appendEntry("before_compact", { aborted: event.signal.aborted, ...files });
	});
	pi.on("session_compact_failed", async (event) => {
		pi.appendEntry("compact_failed", { aborted: event.aborted, errorMessage: event.errorMessage ?? null });
	});
}
