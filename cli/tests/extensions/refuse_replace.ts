// Refuses every replacement of the session: `session_before_switch` and `session_before_fork`
// cancel, each writing an entry of what it was told first.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_switch", async (event) => {
		pi.appendEntry("refused", { heard: event.type, reason: event.reason, target: event.targetSessionFile ?? null });
		return { cancel: true };
	});
	pi.on("session_before_fork", async (event) => {
		pi.appendEntry("refused", { heard: event.type, reason: event.position, target: event.entryId });
		return { cancel: true };
	});
}
