// A `turn_end` boundary that continues the run: after the first answer it appends a custom
// message and asks for another turn (the loop goes on with no new user message, within the same
// run); after the second it asks to continue with nothing to answer (Pi refuses, reporting it,
// and the run ends); before the run settles it asks again with nothing new (refused too).
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let turns = 0;
	pi.on("turn_end", async () => {
		turns += 1;
		if (turns === 1) {
			return { entries: [{ type: "custom_message", customType: "more", content: "Go on.", display: true }], continue: true };
		}
		return { continue: true };
	});
	pi.on("agent_before_settle", async (event) => {
		pi.appendEntry("settle", { canContinue: event.context.canContinue });
		return { continue: true };
	});
}
