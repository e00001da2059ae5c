// Steers the run once: when the first turn ends, `pi.sendMessage` sends a custom message, which
// Pi 1.5.2 queues as steering while the agent streams (no `deliverAs`, no `triggerTurn`), so the
// run takes another turn with it.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	let sent = false;
	pi.on("turn_end", () => {
		if (sent) return;
		sent = true;
		pi.sendMessage({ customType: "reminder", content: "Also check the tests.", display: true });
	});
}
