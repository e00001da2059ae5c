// Lets every replacement of the session through, writing an entry of what each handler was
// told: `session_before_switch`, then `session_shutdown` to the old session and
// `session_start` to the new one.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("session_before_switch", async (event) => {
		pi.appendEntry("heard", { heard: event.type, reason: event.reason });
	});
	pi.on("session_shutdown", async (event) => {
		pi.appendEntry("heard", { heard: event.type, reason: event.reason });
	});
	pi.on("session_start", async (event) => {
		pi.appendEntry("heard", { heard: event.type, reason: event.reason });
	});
}
