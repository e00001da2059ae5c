// Sends user messages from its handlers while the agent streams: a steering message (its text
// parts joined by a line break) when the first tool result is final, and a follow-up at the
// first turn's end. Each is queued as the front end's steer and follow-up are, and its turn
// comes in the same run.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	let results = 0;
	pi.on("tool_result", async () => {
		results += 1;
		if (results !== 1) return;
		pi.sendUserMessage(
			[
				{ type: "text", text: "Also count its lines." },
				{ type: "text", text: "Briefly." },
			],
			{ deliverAs: "steer" },
		);
	});
	pi.on("turn_end", async () => {
		turns += 1;
		if (turns === 1) pi.sendUserMessage("Then say goodbye.", { deliverAs: "followUp" });
	});
}
