// An input handler that records what it saw, handles one text and throws for another, and a
// before_agent_start handler that throws.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("input", async (event) => {
		pi.appendEntry("input-seen", { text: event.text });
		if (event.text === "handle me") return { action: "handled" };
		if (event.text === "break me") throw new Error(`input broke on ${event.text}`);
		return { action: "continue" };
	});
	pi.on("before_agent_start", async () => {
		throw new Error("start broke");
	});
}
