// Sends a message with `triggerTurn: false` when the tool result is final: held for the turn's
// end, then written, so the next request carries it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_result", async () => {
		pi.sendMessage({ customType: "note", content: "The file is fresh.", display: true }, { triggerTurn: false });
	});
}
