// Hears the session's start (says so through the UI and writes an entry) and its end (writes
// an entry): where they come in the session file and the output says when they were heard.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async (event, ctx) => {
		ctx.ui.notify(`session ${event.reason}`, "info");
		pi.appendEntry("lifecycle", { heard: event.type, reason: event.reason });
	});
	pi.on("session_shutdown", async (event) => {
		pi.appendEntry("lifecycle", { heard: event.type, reason: event.reason });
	});
}
