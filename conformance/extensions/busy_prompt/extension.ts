// Prompts sent over RPC while the agent streams, without a streamingBehavior: Pi runs the input
// handlers first (this one reports what it saw, handles one text and throws for another), and
// only then refuses the prompt when it was not handled.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("input", async (event) => {
		pi.appendEntry("input-seen", { text: event.text, streamingBehavior: event.streamingBehavior ?? null });
		if (event.text === "handle me") return { action: "handled" };
		if (event.text === "break me") throw new Error(`input broke on ${event.text}`);
		return { action: "continue" };
	});
}
