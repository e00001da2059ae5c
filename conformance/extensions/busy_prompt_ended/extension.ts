// A prompt sent over RPC while the agent streams, without a streamingBehavior, whose input
// handler takes longer than the run: by the time the handlers decide the run has ended, so Pi
// no longer refuses it: the prompt starts a run of its own and is answered `started`.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("input", async (event) => {
		// The entry after the wait: ours writes what a handler asks for with its decision.
		if (event.text === "slow") await new Promise((resolve) => setTimeout(resolve, 1500));
		pi.appendEntry("input-seen", { text: event.text, streamingBehavior: event.streamingBehavior ?? null });
		return { action: "continue" };
	});
}
