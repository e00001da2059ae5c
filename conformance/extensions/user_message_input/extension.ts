// Sends a follow-up user message at the first turn's end, which Pi passes through the input
// handlers as typed by an extension: this extension's own handler marks texts whose source is
// "extension", and the marked text is what the run's next turn sends.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("input", async (event) => {
		if (event.source !== "extension") return { action: "continue" };
		return { action: "transform", text: `[${event.source}, ${event.streamingBehavior}] ${event.text}` };
	});
	pi.on("turn_end", async () => {
		turns += 1;
		if (turns === 1) pi.sendUserMessage("Then say goodbye.", { deliverAs: "followUp" });
	});
}
