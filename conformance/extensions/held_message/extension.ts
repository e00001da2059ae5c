// Sends messages with `triggerTurn: false` while the agent streams: one when the tool result is
// final and one at the first turn's end. Neither steers; both are held for the turn's end, then
// written into the conversation, so the run's next request carries them. One sent at the last
// turn's end is written once that turn has ended, with no request after it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("tool_result", async () => {
		pi.sendMessage({ customType: "note", content: "a.txt is a fixture.", display: true }, { triggerTurn: false });
	});
	pi.on("turn_end", async () => {
		turns += 1;
		pi.sendMessage(
			{ customType: "note", content: [{ type: "text", text: `Turn ${turns} is over.` }], display: false, details: { turns } },
			{ triggerTurn: false },
		);
	});
}
