// An input transform: prompts starting with "!shout " reach the model in capitals, without
// the marker; others pass unchanged.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MARKER = "!shout ";

export default function (pi: ExtensionAPI) {
	pi.on("input", async (event) => {
		if (!event.text.startsWith(MARKER)) return { action: "continue" };
		return { action: "transform", text: event.text.slice(MARKER.length).toUpperCase() };
	});
}
